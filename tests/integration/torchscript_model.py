#!/usr/bin/env python3
"""A user's own model, made in PyTorch and saved as TorchScript, swept, analysed and refused by batchscope.

usage: torchscript_model.py BATCHSCOPE_BINARY
Scripts (torch.jit.script) and traces (torch.jit.trace) a small CNN with batch norm, saves both, and
checks that batchscope reads each as its model: the FLOPs per sample that PyTorch's own profiler counts,
the class count of its output, a training and an inference sweep, the analysis, a resumed sweep whose
file changed (refused), and the mistakes a user makes (no input, a wrong input, a file that is no
TorchScript), each one sentence with exit code 2. Needs PyTorch (python3-torch) of the LibTorch that
batchscope was built with.
"""
import json
import os
import subprocess
import sys
import tempfile
from typing import Optional

import torch
from torch import nn

failures = 0


def check(condition, what):
    global failures
    print(("ok   " if condition else "FAIL ") + what)
    failures += 0 if condition else 1


class SmallNet(nn.Module):
    def __init__(self, classes=7):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = torch.relu(self.norm(self.conv(x)))
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(self.pool(x), 1))


class TinyLanguageModel(nn.Module):
    """Token ids [batch, sequence] to logits [batch, sequence, vocabulary]: one head of attention."""

    def __init__(self, vocabulary=50, width=16):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.q, self.k, self.v = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.out = nn.Linear(width, vocabulary)

    def forward(self, x):
        h = self.embedding(x)
        attention = torch.softmax(torch.matmul(self.q(h), self.k(h).transpose(1, 2)), dim=-1)
        return self.out(torch.matmul(attention, self.v(h)) + h)


class TinyTransformer(nn.Module):
    """Token ids to logits per position through PyTorch's own encoder layer (scaled dot-product attention
    from PyTorch 2, products of its own before)."""

    def __init__(self, vocabulary=50, width=16, heads=2, feedforward=32):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.layer = nn.TransformerEncoderLayer(width, heads, feedforward, dropout=0.0, batch_first=True)
        self.out = nn.Linear(width, vocabulary)

    def forward(self, x):
        return self.out(self.layer(self.embedding(x)))


class TinySequenceClassifier(nn.Module):
    """Token ids, an attention mask and token types to (logits [batch, classes], hidden states), as a
    Hugging Face sequence classifier traced with torchscript=True returns them."""

    def __init__(self, vocabulary=60, width=16, classes=3):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocabulary, width)
        self.token_type_embeddings = nn.Embedding(2, width)
        self.dense = nn.Linear(width, width)
        self.classifier = nn.Linear(width, classes)

    def forward(self, input_ids, attention_mask, token_type_ids):
        h = torch.tanh(self.dense(self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)))
        mask = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * mask).sum(1) / mask.sum(1)
        return self.classifier(pooled), h


class DictLanguageModel(nn.Module):
    """Token ids to {"logits": ...}, with an optional mask it makes itself where none is given."""

    def __init__(self, vocabulary=40, width=8):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.out = nn.Linear(width, vocabulary)

    def forward(self, input_ids, attention_mask: Optional[torch.Tensor] = None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return {"logits": self.out(self.embedding(input_ids) * attention_mask.unsqueeze(-1).to(torch.float32))}


def refused(binary, work, cases):
    """Each (sweep arguments, words): refused with exit 2 in one sentence that holds the words."""
    for args, said in cases:
        bad = run(binary, "sweep", *args, "--out", os.path.join(work, "bad"))
        message = bad.stderr.strip()
        check(bad.returncode == 2 and said in message and message.count("\n") == 0,
              f"refused in one sentence ({said}): {message}")


def trained_sweep(binary, args, out, what, losses_between):
    """A training sweep of batch sizes 1 to 3: every size measured, the loss of each step at 3 in range and
    changing as the weights are trained."""
    sweep = run(binary, "sweep", *args, "--batch", "1:3", "--steps", "5", "--warmup", "1", "--quiet", "--out", out)
    check(sweep.returncode == 0, f"a training sweep of {what} runs: {sweep.stderr.strip()[-300:]}")
    steps = os.path.join(out, "steps.jsonl")
    written = records(steps) if os.path.exists(steps) else []
    check([p["batch_size"] for p in written if p["type"] == "point"] == [1, 2, 3], "every batch size measured")
    losses = [r["loss"] for r in written if r["type"] == "step" and r["batch_size"] == 3]
    low, high = losses_between
    check(len(set(losses)) > 1 and all(low < x < high for x in losses), f"{what} trained: {losses}")


def run(binary, *args):
    return subprocess.run([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def main():
    binary = sys.argv[1]
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="batchscope-torchscript-")
    net = SmallNet().eval()
    example = torch.randn(1, 3, 16, 16)
    scripted, traced = os.path.join(work, "small.pt"), os.path.join(work, "small_traced.pt")
    torch.jit.script(net).save(scripted)
    torch.jit.trace(net, example).save(traced)
    with torch.no_grad(), torch.profiler.profile(with_flops=True) as prof:
        net(example)
    flops = sum(e.flops for e in prof.events())
    parameters = sum(p.numel() for p in net.parameters())

    shape = ["--input", "3,16,16", "--device", "cpu"]
    for path in (scripted, traced):
        plan = run(binary, "sweep", "--model", path, "--batch", "1:4", *shape, "--plan")
        check(plan.returncode == 0, f"sweep --plan of {os.path.basename(path)}: {plan.stderr.strip()}")
        if plan.returncode != 0:
            continue
        e = json.loads(plan.stdout)["experiments"][0]
        check(e["classes"] == 7, f"the classes are the output's: {e['classes']}")
        check(e["forward_flops_per_sample"] == flops,
              f"FLOPs per sample as PyTorch's profiler counts them: {e['forward_flops_per_sample']} and {flops}")
        # The data's gradient through the first convolution (3 to 8 channels, 3x3, over 16x16) is never
        # computed: a training step is 3x the forward less it.
        skipped = 2 * 3 * 9 * 8 * 16 * 16
        check(e.get("data_gradient_flops_per_sample") == skipped,
              f"the first convolution's data gradient: {e.get('data_gradient_flops_per_sample')} and {skipped}")
        check(e["flops_per_step"] == [(3 * flops - skipped) * b for b in (1, 2, 3, 4)],
              "a training step is 3x the forward less the first layer's data gradient")
        check(e["model_file"]["bytes"] == os.path.getsize(path), "the file's size is recorded")

    out = os.path.join(work, "train")
    sweep = run(binary, "sweep", "--model", scripted, "--batch", "1:4", "--steps", "5", "--warmup", "1",
                *shape, "--quiet", "--out", out)
    check(sweep.returncode == 0, f"a training sweep runs: {sweep.stderr.strip()[-300:]}")
    steps = os.path.join(out, "steps.jsonl")
    written = records(steps) if os.path.exists(steps) else []
    points = [r for r in written if r["type"] == "point"]
    check([p["batch_size"] for p in points] == [1, 2, 3, 4], "every batch size measured")
    check(all(p["tflops"] > 0 for p in points), "each with its TFLOP/s")
    losses = [r["loss"] for r in written if r["type"] == "step" and r["batch_size"] == 4]
    check(len(set(losses)) > 1, f"the module's weights are trained from step to step: {losses}")
    analysis = run(binary, "analyze", out, "--quiet")
    report = os.path.join(out, "analysis", "report.md")
    check(analysis.returncode == 0 and os.path.exists(report) and "small.pt train fp32" in open(report).read(),
          f"analyze reads it: {analysis.stderr.strip()[-300:]}")
    infer = run(binary, "sweep", "--model", traced, "--batch", "1,8", "--phase", "infer", "--steps", "5",
                *shape, "--quiet", "--out", os.path.join(work, "infer"))
    check(infer.returncode == 0, f"an inference sweep of the traced module runs: {infer.stderr.strip()[-300:]}")
    # Batch norm sees one value per channel at batch 1 of a 1x1 image: training starts at 2.
    one = run(binary, "sweep", "--model", scripted, "--batch", "1:2", "--input", "3,1,1", "--device", "cpu",
              "--out", os.path.join(work, "one"))
    check(one.returncode == 2 and "start the batch sizes at 2" in one.stderr,
          f"batch 1 of a 1x1 image is refused: {one.stderr.strip()}")

    # The same sweep, stopped before its end, resumed after the file changed: another model, refused.
    with open(steps) as f:
        lines = [line for line in f if json.loads(line)["type"] != "end"]
    with open(steps, "w") as f:
        f.writelines(lines[:-3])
    torch.jit.script(SmallNet()).save(scripted)
    resumed = run(binary, "sweep", "--model", scripted, "--batch", "1:4", "--steps", "5", "--warmup", "1",
                  *shape, "--quiet", "--out", out)
    check(resumed.returncode == 2 and "model_file" in resumed.stderr,
          f"a resumed sweep whose model file changed is refused: {resumed.stderr.strip()}")

    # Mistakes: one sentence each, exit 2.
    text = os.path.join(work, "notes.pt")
    with open(text, "w") as f:
        f.write("not a model\n")
    refused(binary, work, (
        (["--model", scripted, "--batch", "1", "--device", "cpu"], "pass --input with one sample's sizes"),
        (["--model", scripted, "--batch", "1", "--input", "3,16", "--device", "cpu"], "forward fails on one sample of 3x16 (Given groups=1"),
        (["--model", scripted, "--batch", "1", "--classes", "10", *shape], "give 7"),
        (["--model", text, "--batch", "1", *shape], "is not a TorchScript file"),
        (["--model", os.path.join(work, "missing.pt"), "--batch", "1", *shape], "there is no file"),
    ))

    profiled_modules(binary, work, scripted, traced, shape)
    multilayer_perceptron(binary, work)
    language_model(binary, work)
    sequence_classifier(binary, work)
    trained_checkpoint(binary, work)
    print(f"{parameters} parameters in the module; {failures} failures")
    sys.exit(1 if failures else 0)


def profiled_modules(binary, work, scripted, traced, shape):
    """A profiled sweep of a scripted and a traced file puts its time on the module's layers, by the names
    PyTorch gives them, in both passes, and analyze's report lists them."""
    for path in (scripted, traced):
        name = os.path.basename(path)
        out = os.path.join(work, "profiled-" + name)
        sweep = run(binary, "sweep", "--model", path, "--batch", "2,4", "--steps", "5", "--warmup", "2", "--profile",
                    *shape, "--quiet", "--out", out)
        check(sweep.returncode == 0, f"a profiled sweep of {name} runs: {sweep.stderr.strip()[-300:]}")
        profile = os.path.join(out, "profile.jsonl")
        profiles = [r for r in records(profile) if r["type"] == "profile"] if os.path.exists(profile) else []
        check(len(profiles) == 2, f"one profile per batch size of {name}: {len(profiles)}")
        for p in profiles:
            layers = {(l["layer"], l["pass"]): l for l in p["layers"]}
            modules = {"conv", "conv2", "fc"}
            both = all((m, "forward") in layers and (m, "backward") in layers for m in modules)
            check(both, f"{name} at {p['batch_size']}: conv, conv2 and fc in both passes: {sorted(layers)}")
            # Each module's own operators: the convolutions' in conv and conv2, the matrix product's in fc.
            operators = {}
            for k in p["kernels"]:
                operators.setdefault((k["layer"], k["pass"]), []).append(k["name"])
            own = all(any("conv" in o for o in operators.get((m, "forward"), [])) for m in ("conv", "conv2")) and \
                any("addmm" in o or "linear" in o for o in operators.get(("fc", "forward"), []))
            check(own, f"each module's forward holds its own operators: {operators.get(('conv2', 'forward'))}, "
                       f"{operators.get(('fc', 'forward'))}")
            check(("(unattributed)", "backward") not in layers, "every backward node has its layer")
            counted = sum(l["cpu_ms"] for l in p["layers"])
            check(abs(counted - p["step_ms"]) <= 0.25 * p["step_ms"],
                  f"the layers add up to the profiled step: {counted:.3f} of {p['step_ms']:.3f} ms")
        analysis = run(binary, "analyze", out, "--quiet")
        report = os.path.join(out, "analysis", "report.md")
        text = open(report).read() if os.path.exists(report) else ""
        check(analysis.returncode == 0 and "conv2" in text, f"analyze's report names {name}'s layers: {analysis.stderr.strip()[-300:]}")
        # Each convolution and linear layer's FLOPs from the file's own shapes (per sample: 2 x output
        # pixels x output channels x input channels x kernel area), so its TFLOP/s, without the zoo's tables:
        # the first layer's backward is its weights' gradient alone, the others' twice the forward.
        result = os.path.join(out, "analysis", "analysis.json")
        groups = json.load(open(result))["groups"] if os.path.exists(result) else []
        rates = groups[0].get("layer_rates", {}) if groups else {}
        per_sample = {("conv", "forward"): 2 * 256 * 8 * 27, ("conv", "backward"): 2 * 256 * 8 * 27,
                      ("conv2", "forward"): 2 * 64 * 16 * 72, ("conv2", "backward"): 2 * 2 * 64 * 16 * 72,
                      ("fc", "forward"): 2 * 7 * 16, ("fc", "backward"): 2 * 2 * 7 * 16}
        counted = {(l["layer"], l["pass"]): l["gflop"] * 1e9 / rates["batch_size"] for l in rates.get("layers", [])}
        check(counted.keys() == per_sample.keys() and
              all(abs(counted[k] - v) <= 1e-6 * v for k, v in per_sample.items()) and
              all(l["tflops"] > 0 for l in rates["layers"]),
              f"analyze gives {name}'s layers their FLOPs and TFLOP/s: {counted}")


def multilayer_perceptron(binary, work):
    """Linear layers around a ReLU train past the step that TorchScript's graph executor optimizes (the
    third), where LibTorch 2.6 built with LLVM hung compiling the fused backward for the CPU; the run
    record says that the CPU fuser is off."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    path = os.path.join(work, "mlp.pt")
    torch.jit.script(net).save(path)
    out = os.path.join(work, "mlp")
    trained_sweep(binary, ["--model", path, "--input", "256", "--device", "cpu"], out, "the MLP", (0.1, 4.0))
    steps = os.path.join(out, "steps.jsonl")
    runs = [r for r in records(steps) if r["type"] == "run"] if os.path.exists(steps) else []
    check(len(runs) == 1 and runs[0]["cpu"].get("torchscript_fuser") is False,
          f"the run record says TorchScript's CPU fuser is off: {[r.get('cpu') for r in runs]}")


def language_model(binary, work):
    """A language model of token ids: input_kind tokens, the sequence length as its input."""
    torch.manual_seed(0)
    net, sequence, width, vocabulary = TinyLanguageModel(), 8, 16, 50
    path = os.path.join(work, "lm.pt")
    torch.jit.script(net).save(path)
    with torch.no_grad(), torch.profiler.profile(with_flops=True) as prof:
        net(torch.zeros(1, sequence, dtype=torch.long))
    products = sum(e.flops for e in prof.events() if e.name in ("aten::mm", "aten::addmm", "aten::bmm"))
    # Four projections of the width, two products of the sequence with itself, the output projection.
    formula = 3 * 2 * sequence * width * width + 2 * 2 * sequence * sequence * width + 2 * sequence * width * vocabulary
    tokens = ["--model", path, "--input-kind", "tokens", "--seq-len", str(sequence), "--device", "cpu"]
    plan = run(binary, "sweep", *tokens, "--batch", "1:3", "--plan")
    check(plan.returncode == 0, f"sweep --plan of a language model: {plan.stderr.strip()}")
    if plan.returncode == 0:
        e = json.loads(plan.stdout)["experiments"][0]
        check(e["classes"] == vocabulary and e["input"] == [sequence], f"the vocabulary and the sequence: {e['classes']}")
        check(e["forward_flops_per_sample"] == products == formula,
              f"its FLOPs as the profiler and the formula count them: {e['forward_flops_per_sample']}, {products}, {formula}")
        check(e["model_file"].get("input_kind") == "tokens", "the record says it takes token ids")
    # PyTorch's encoder layer: the products of its projections, its attention and its feed-forward part,
    # counted alike whether its attention runs fused or as products, and not through its fused path.
    layer = os.path.join(work, "encoder.pt")
    torch.jit.script(TinyTransformer()).save(layer)
    encoder_formula = (2 * sequence * width * 4 * width + 2 * 2 * sequence * sequence * width +
                       2 * 2 * sequence * width * 32 + 2 * sequence * width * vocabulary)
    plan = run(binary, "sweep", "--model", layer, *tokens[2:], "--batch", "1:2", "--plan")
    e = json.loads(plan.stdout)["experiments"][0] if plan.returncode == 0 else {}
    check(e.get("forward_flops_per_sample") == encoder_formula,
          f"an encoder layer's FLOPs: {e.get('forward_flops_per_sample')} and {encoder_formula} {plan.stderr.strip()}")
    encoder = run(binary, "sweep", "--model", layer, *tokens[2:], "--batch", "1,4", "--steps", "3", "--warmup", "1",
                  "--quiet", "--out", os.path.join(work, "encoder"))
    check(encoder.returncode == 0, f"the encoder layer trains: {encoder.stderr.strip()[-300:]}")
    # Cross-entropy at every position over 50 tokens starts near ln 50.
    trained_sweep(binary, tokens, os.path.join(work, "lm"), "the language model", (2, 6))
    maxbatch = run(binary, "maxbatch", *tokens, "--phase", "infer", "--upper", "64", "--quiet", "--json")
    check(maxbatch.returncode == 0, f"maxbatch takes it: {maxbatch.stderr.strip()[-300:]}")
    refused(binary, work, (
        (["--model", path, "--input", "8", "--batch", "1", "--device", "cpu"], "give input_kind: tokens"),
        (["--model", path, "--input-kind", "tokens", "--batch", "1", "--device", "cpu"], "pass --seq-len"),
        (["--model", path, "--input-kind", "tokens", "--input", "2,8", "--batch", "1", "--device", "cpu"],
         "give one size"),
        (["--model", "mnist_cnn", "--input-kind", "tokens", "--batch", "1", "--device", "cpu"],
         "applies to TorchScript files only"),
    ))


def sequence_classifier(binary, work):
    """A traced sequence classifier of token ids, a mask and token types, returning a tuple: input_kind
    tokens with a vocab. A dict of logits, and the arguments batchscope cannot fill."""
    torch.manual_seed(0)
    net, sequence, width, vocabulary, classes = TinySequenceClassifier(), 8, 16, 60, 3
    ids = torch.zeros(1, sequence, dtype=torch.long)
    path = os.path.join(work, "classifier.pt")
    torch.jit.trace(net, (ids, torch.ones_like(ids), torch.zeros_like(ids))).save(path)
    with torch.no_grad(), torch.profiler.profile(with_flops=True) as prof:
        net(ids, torch.ones_like(ids), torch.zeros_like(ids))
    products = sum(e.flops for e in prof.events() if e.name in ("aten::mm", "aten::addmm", "aten::bmm"))
    formula = 2 * sequence * width * width + 2 * width * classes
    tokens = ["--model", path, "--input-kind", "tokens", "--seq-len", str(sequence), "--device", "cpu"]
    plan = run(binary, "sweep", *tokens, "--vocab", str(vocabulary), "--batch", "1:3", "--plan")
    check(plan.returncode == 0, f"sweep --plan of a sequence classifier: {plan.stderr.strip()}")
    if plan.returncode == 0:
        e = json.loads(plan.stdout)["experiments"][0]
        check(e["classes"] == classes and e["input"] == [sequence], f"its classes and sequence: {e['classes']}")
        check(e["forward_flops_per_sample"] == products == formula,
              f"its FLOPs as the profiler and the formula count them: {e['forward_flops_per_sample']}, {products}, {formula}")
        check(e["model_file"].get("vocab") == vocabulary, "the record gives its vocab")
        check(e["model_file"].get("arguments") == [{"name": "attention_mask", "given": "ones"},
                                                    {"name": "token_type_ids", "given": "zeros"}],
              f"the record says what its forward is given after the token ids: {e['model_file'].get('arguments')}")
    # Cross-entropy over 3 classes, one a sequence: near ln 3.
    trained_sweep(binary, tokens + ["--vocab", str(vocabulary)], os.path.join(work, "classifier"), "the classifier",
                  (0.2, 3))
    infer = run(binary, "maxbatch", *tokens, "--vocab", str(vocabulary), "--phase", "infer", "--upper", "64",
                "--quiet", "--json")
    check(infer.returncode == 0, f"maxbatch takes it: {infer.stderr.strip()[-300:]}")

    lm = os.path.join(work, "dict_lm.pt")
    torch.jit.script(DictLanguageModel()).save(lm)
    plan = run(binary, "sweep", "--model", lm, *tokens[2:], "--batch", "1:2", "--plan")
    e = json.loads(plan.stdout)["experiments"][0] if plan.returncode == 0 else {}
    check(e.get("classes") == 40, f"a dict's logits, the optional mask left to the module: {e.get('classes')} {plan.stderr.strip()}")

    class TwoInputs(nn.Module):
        def forward(self, x, y):
            return x + y

    two = os.path.join(work, "two_inputs.pt")
    torch.jit.script(TwoInputs()).save(two)
    refused(binary, work, (
        (tokens + ["--batch", "1"], "give vocab: N (--vocab N), the number of token ids its embedding takes "
                                    "(its parameter word_embeddings.weight has 60 rows)"),
        (tokens + ["--vocab", "61", "--batch", "1"], f"--vocab: {path}'s forward fails on token id 60"),
        (["--model", path, "--input", "8", "--vocab", "60", "--batch", "1", "--device", "cpu"],
         "pass --input-kind tokens, or remove it"),
        (["--model", "lstm_lm", "--vocab", "60", "--batch", "1", "--device", "cpu"], "applies to TorchScript files only"),
        (["--model", two, "--input", "4", "--batch", "1", "--device", "cpu"], "give the arguments after x defaults"),
    ))


def trained_checkpoint(binary, work):
    """train and eval of a file model: the checkpoint names the file's code, and eval needs that file."""
    digits = os.path.join(work, "digits")
    make_idx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "make_idx.py")
    subprocess.run([sys.executable, make_idx, digits, "--train", "200", "--test", "50"], check=True)
    path = os.path.join(work, "digits_net.pt")
    torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10))).save(path)
    out = os.path.join(work, "checkpoint")
    common = ["--data", digits, "--device", "cpu", "--threads", "1"]
    train = run(binary, "train", "--model", path, "--epochs", "1", "--batch", "32", *common, "--out", out, "--quiet")
    check(train.returncode == 0, f"train takes a file model: {train.stderr.strip()[-300:]}")
    info_path = os.path.join(out, "checkpoint.json")
    info = json.load(open(info_path)) if os.path.exists(info_path) else {}
    check(info.get("model_file", {}).get("bytes") == os.path.getsize(path), f"the checkpoint names the file: {info}")
    same = run(binary, "eval", "--checkpoint", out, *common)
    check(same.returncode == 0, f"eval rebuilds it from the file: {same.stderr.strip()[-300:]}")
    torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10), nn.ReLU())).save(path)
    changed = run(binary, "eval", "--checkpoint", out, *common)
    check(changed.returncode == 2 and "restore the TorchScript file it was trained from" in changed.stderr,
          f"eval with another file of the same name is refused: {changed.stderr.strip()}")


if __name__ == "__main__":
    main()
