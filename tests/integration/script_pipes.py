#!/usr/bin/env python3
"""The project's shell scripts never pipe into a grep that stops reading early.

Under `set -o pipefail` a pipeline fails when any of its commands fails. `grep -q` (and `grep -m N`)
exits at its first match and closes the pipe; a command still writing to it is then killed by SIGPIPE
(status 141), and the pipeline fails although the pattern was found, or passes `! ... | grep -q`
although it was not. Whether it happens depends on how the two processes are scheduled, so a test
written that way fails now and then on a loaded machine. The race-free form reads the whole output
first: `grep -q PATTERN <<< "$(command)"`.

Usage: script_pipes.py PROJECT_ROOT   (checks the scripts; it first checks itself on known cases)
"""
import pathlib
import re
import sys

# The folders whose shell scripts are checked, and CI's entry point.
FOLDERS = ["scripts", "scripts/lib", "tests/integration", ".ci"]

HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def early_exit_grep(stage):
    """Whether a pipeline stage is a grep that may stop reading before its input ends."""
    words = stage.split()
    if not words or words[0] not in ("grep", "egrep", "fgrep"):
        return False
    for word in words[1:]:
        if word == "--":
            break
        if word in ("--quiet", "--silent") or word.startswith("--max-count"):
            return True
        if re.fullmatch(r"-[A-Za-z]+", word) and ("q" in word or "m" in word):
            return True
        if re.fullmatch(r"-m\d+", word):
            return True
    return False


def pipe_stages(line):
    """The stages after each `|` (not `||`) of a line, cut at the next operator. Quoted text is skipped,
    but not a command substitution inside double quotes: `"$(a | grep -q b)"` is a pipe."""
    stages, i, nest = [], 0, ["command"]  # what each opened quote or substitution is
    while i < len(line):
        c, top = line[i], nest[-1]
        if top == "'":
            if c == "'":
                nest.pop()
        elif c == "\\":
            i += 1
        elif c == "$" and line[i + 1 : i + 2] == "(":
            nest.append("command")
            i += 1
        elif top == '"':
            if c == '"':
                nest.pop()
        elif c in "'\"":
            nest.append(c)
        elif c == "(":
            nest.append("command")
        elif c == ")" and len(nest) > 1:
            nest.pop()
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            break  # a comment
        elif c == "|" and line[i + 1 : i + 2] != "|" and line[i - 1 : i] != "|":
            rest = line[i + 1 :]
            stages.append(re.split(r"\|\||&&|;|\)|\|", rest, maxsplit=1)[0].strip())
        i += 1
    return stages


def findings(text):
    """(line number, line) of each pipe into an early-exiting grep, here-documents' bodies left out."""
    found, ending = [], None
    for number, line in enumerate(text.splitlines(), 1):
        if ending is not None:
            if line.strip() == ending:
                ending = None
            continue
        if any(early_exit_grep(stage) for stage in pipe_stages(line)):
            found.append((number, line.strip()))
        heredoc = HEREDOC.search(line)
        if heredoc and "<<<" not in line:
            ending = heredoc.group(2)
    return found


def self_check():
    """The checker's own cases: each must be told right, or the check proves nothing."""
    flagged = [
        'dpkg-query -W "$p" | grep -q "install ok installed" || missing+=("$p")',
        "sinfo -h -o %T 2> /dev/null | grep -q idle && break",
        'tail -1 "$f" | grep -Eq \'"type": ?"end"\'',
        "dpkg -L pkg | grep -m 1 'x$' | xargs -r dirname",
        "if cmd|grep --quiet x; then :; fi",
        "a | grep -qx second",
        "x=$(a | b | grep -m3 y)",
        'source="$(dpkg -L pkg | grep -m 1 \'/x\\(\\.gz\\)\\?$\' | xargs -r dirname)"',
        'fail "can\'t $(a | grep -q b)"',
    ]
    passed = [
        'grep -q idle <<< "$(sinfo -h -o %T)"',
        'echo "$(grep -E x "$f" | head -1)"',
        "a || grep -q x f",
        "grep -q x f | cat",
        "echo '| grep -q x'",
        "cmd  # not | grep -q here",
        'a | grep -c x',
        'a | grep -E -- "-q" f',
        'fail "it\'s $(grep x f | head -1) | grep -q y"',
    ]
    wrong = [case for case in flagged if not findings(case)] + [case for case in passed if findings(case)]
    heredoc = "python3 - <<'PY'\nx = 'a | grep -q b'\nPY\na | grep -q c\n"
    if [n for n, _ in findings(heredoc)] != [4]:
        wrong.append("the here-document case")
    return wrong


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: script_pipes.py PROJECT_ROOT")
    wrong = self_check()
    if wrong:
        print("script_pipes.py misjudges its own cases: " + "; ".join(wrong))
        return 1
    root = pathlib.Path(sys.argv[1])
    scripts = sorted(p for folder in FOLDERS for p in (root / folder).glob("*") if p.is_file()
                     and (p.suffix == ".sh" or p.name == "run"))
    problems = []
    for path in scripts:
        for number, line in findings(path.read_text()):
            problems.append(f"{path.relative_to(root)}:{number}: a pipe into a grep that stops reading early "
                            f"(under pipefail the writer may die of SIGPIPE); read the whole output first, "
                            f"as grep -q PATTERN <<< \"$(command)\": {line}")
    for problem in problems:
        print(problem)
    print(f"{len(scripts)} scripts checked, {len(problems)} pipes into an early-exiting grep")
    return 1 if problems or not scripts else 0


if __name__ == "__main__":
    sys.exit(main())
