#!/usr/bin/env python3
"""Syntax-only compile of every entry of a compile_commands.json against another LibTorch's headers.

Called by scripts/check-libtorch2.sh. Each command keeps the project's own flags; the system LibTorch's
include directories are replaced by the given ones, and `-H` lists the headers each file reads, so that a
header still taken from the system's LibTorch (one that the other version lacks) fails the check instead
of passing unseen. Any diagnostic fails it too: the project's flags turn warnings into errors.

LibTorch's CUDA header package is its CPU one plus three CUDA-only headers, so a translation unit that
reaches no CUDA header and never tests BATCHSCOPE_WITH_CUDA reads the same text in both variants. The
CUDA variant checks only the units that do (the others are compiled against the CPU headers), unless
--all-units is given.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import time

SYSTEM_TORCH = [os.path.join("/usr/include", d) for d in ("ATen", "c10", "torch", "caffe2", "kineto")]
HEADER_LINE = re.compile(r"^\.+ (.+)$")
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# What makes a file read differently where LibTorch has CUDA.
CUDA_MARK = re.compile(r'BATCHSCOPE_WITH_CUDA|C10_CUDA_NO_CMAKE_CONFIGURE_FILE|'
                       r'^\s*#\s*include\s*[<"](?:c10/cuda|ATen/cuda|torch/cuda|THC|cuda|cudnn|cublas|nvml)',
                       re.M)


def units(n):
    return f"{n} translation unit" + ("" if n == 1 else "s")


def reaches_cuda(source, root, seen=None):
    """True when the file, or a project header it includes (at any depth), has a CUDA_MARK."""
    seen = set() if seen is None else seen
    if source in seen or not os.path.isfile(source):
        return False
    seen.add(source)
    with open(source, errors="replace") as f:
        text = f.read()
    if CUDA_MARK.search(text):
        return True
    for name in QUOTED_INCLUDE.findall(text):
        for base in (os.path.dirname(source), root):
            candidate = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(candidate):
                if reaches_cuda(candidate, root, seen):
                    return True
                break
    return False


def is_torch_include(path):
    path = os.path.normpath(path)
    return path == "/usr/include" or path.startswith("/usr/include/torch")


def strip_flags(args):
    """Drops the output, the compile-only flag and the system LibTorch's include directories."""
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-o" or (a in ("-isystem", "-I") and i + 1 < len(args) and is_torch_include(args[i + 1])):
            i += 2
            continue
        if a == "-c" or (a.startswith("-isystem") and len(a) > 8 and is_torch_include(a[8:])) or (
                a.startswith("-I") and len(a) > 2 and is_torch_include(a[2:])):
            i += 1
            continue
        out.append(a)
        i += 1
    return out


def commands(entries, variant, headers, cuda_include):
    prefix = ["-isystem", headers, "-isystem", os.path.join(headers, "torch/csrc/api/include")]
    for e in entries:
        source = os.path.normpath(os.path.join(e["directory"], e["file"]))
        args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        args = strip_flags(args)
        extra = list(prefix)
        if variant == "cuda":
            # A LibTorch with CUDA links cuda_device.cpp in place of gpu_absent.cpp, with the generated
            # c10/cuda configuration header that the CUDA package has.
            if source.endswith("lib/device/gpu_absent.cpp"):
                continue
            args = [a for a in args if a != "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE"]
            extra += ["-isystem", cuda_include]
            if "-DBATCHSCOPE_WITH_CUDA=1" not in args:
                extra.append("-DBATCHSCOPE_WITH_CUDA=1")
        yield source, e["directory"], [args[0]] + extra + args[1:] + ["-fsyntax-only", "-H"]


def check(source, directory, argv):
    p = subprocess.run(argv, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    diagnostics, stale = [], set()
    guard_list = False
    for line in p.stderr.splitlines():
        m = HEADER_LINE.match(line)
        if m:
            header = os.path.normpath(os.path.join(directory, m.group(1)))
            if any(header.startswith(d + "/") for d in SYSTEM_TORCH):
                stale.add(header)
            continue
        if line.startswith("Multiple include guards may be useful for:"):
            guard_list = True
            continue
        if guard_list and os.path.isfile(os.path.join(directory, line.strip())):
            continue
        guard_list = False
        if line.strip():
            diagnostics.append(line)
    return source, p.returncode, diagnostics, sorted(stale)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compile-commands", required=True)
    parser.add_argument("--headers", required=True, help="the other LibTorch's include directory")
    parser.add_argument("--variant", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--cuda-include", default="/usr/local/cuda/include")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--all-units", action="store_true",
                        help="cuda: check every unit, not only those that reach CUDA code")
    parser.add_argument("--root", default=os.getcwd(), help="the project's root, where its includes start")
    a = parser.parse_args()
    with open(a.compile_commands) as f:
        entries = json.load(f)
    todo = list(commands(entries, a.variant, a.headers, a.cuda_include))
    if not todo:
        print(f"{a.variant}: {a.compile_commands} lists no translation unit", file=sys.stderr)
        return 1
    if a.variant == "cuda" and not a.all_units:
        same = [t for t in todo if not reaches_cuda(t[0], a.root)]
        todo = [t for t in todo if reaches_cuda(t[0], a.root)]
        print(f"check-libtorch2: cuda: {units(len(todo))} reach{'es' if len(todo) == 1 else ''} CUDA code "
              f"({', '.join(os.path.relpath(t[0], a.root) for t in todo)}); the other {len(same)} read the same "
              "headers as in the cpu variant")
        if not todo:
            print("cuda: no translation unit reaches CUDA code, which the GPU build needs", file=sys.stderr)
            return 1
    start = time.monotonic()
    failed = 0
    root = os.getcwd()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for source, rc, diagnostics, stale in pool.map(lambda t: check(*t), todo):
            if rc == 0 and not diagnostics and not stale:
                continue
            failed += 1
            print(f"--- {os.path.relpath(source, root)} ({a.variant}): exit {rc}")
            for line in diagnostics[:60]:
                print(line)
            if len(diagnostics) > 60:
                print(f"... {len(diagnostics) - 60} more lines")
            for header in stale[:10]:
                print(f"reads the system's LibTorch header {header}, which {a.headers} lacks")
    seconds = time.monotonic() - start
    print(f"check-libtorch2: {a.variant}: {units(len(todo))}, {failed} failed ({seconds:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
