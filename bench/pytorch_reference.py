"""The reference for batchscope's per-step overhead: the same model's training (or inference) step in
PyTorch-in-Python, timed the way batchscope times it (each step on its own, warm-up first, nothing but
the step between the timestamps: the monotonic clock on the CPU; on a GPU two CUDA events on the current
stream, made before the steps, and the device synchronised after each step, outside them).

Driven by bench_overhead over stdin/stdout, one command a line (bench_overhead --worker speaks the same):
  batch B W   make the data of batch size B (0: an empty batch) and run W untimed steps; answers
              "ready MS", MS the last warm-up step in ms
  steps N     run N timed steps; answers a JSON list of their times in ms
  quit
The first line it prints is a JSON header: the PyTorch version, the threads in effect, the model's
parameter count and the optimizer, which bench_overhead checks against batchscope's own.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class MnistCnn(nn.Module):
    """The classic Keras MNIST CNN, layer for layer as batchscope's mnist_cnn (in-place ReLUs too)."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.drop1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(9216, 128)
        self.drop2 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x), inplace=True)
        x = F.relu(self.conv2(x), inplace=True)
        x = self.drop1(F.max_pool2d(x, 2))
        x = F.relu(self.fc1(torch.flatten(x, 1)), inplace=True)
        return self.fc2(self.drop2(x))


def vgg16(classes):
    """torchvision's vgg16 without batch norm, written out so that torchvision is not needed."""
    layers, channels = [], 3
    for entry in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]:
        if entry == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(channels, entry, 3, padding=1), nn.ReLU(inplace=True)]
            channels = entry
    return nn.Sequential(
        nn.Sequential(*layers),
        nn.AdaptiveAvgPool2d((7, 7)),
        nn.Flatten(),
        nn.Sequential(nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
                      nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(4096, classes)))


MODELS = {"mnist_cnn": MnistCnn, "vgg16": vgg16}
OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def describe(optimizer):
    """The optimizer's type and the settings a step depends on, in the words batchscope's header uses."""
    if optimizer is None:
        return None
    group = optimizer.param_groups[0]
    described = {"type": type(optimizer).__name__.lower(), "lr": group["lr"],
                 "weight_decay": group["weight_decay"], "foreach": bool(group["foreach"])}
    if "betas" in group:
        described["betas"] = list(group["betas"])
        described["eps"] = group["eps"]
    return described


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mnist_cnn", choices=sorted(MODELS))
    p.add_argument("--input", default="1,28,28", help="C,H,W of one sample")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--phase", default="train", choices=["train", "infer"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--optimizer", default="sgd", choices=sorted(OPTIMIZERS))
    p.add_argument("--foreach", type=int, default=0, choices=[0, 1],
                   help="1: the multi-tensor (foreach) step, 0: the loop over parameters")
    p.add_argument("--device", default="cpu", help="cpu or cuda:N")
    a = p.parse_args()
    device = torch.device(a.device)
    gpu = device.type == "cuda"
    if gpu and device.index is not None:
        torch.cuda.set_device(device)  # the events record on the current device's stream: the model's
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    shape = [int(s) for s in a.input.split(",")]
    model = MODELS[a.model](a.classes).to(device)
    train = a.phase == "train"
    model.train(train)
    # At --lr, and otherwise with PyTorch's own defaults (AdamW decays weights by 0.01), as batchscope's.
    optimizer = OPTIMIZERS[a.optimizer](model.parameters(), lr=a.lr, foreach=bool(a.foreach)) if train else None
    x = y = None

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    def infer_step():
        with torch.no_grad():
            model(x)

    step = train_step if train else infer_step

    def timed(n):
        """n steps, each timed on its own; their times in ms."""
        if not gpu:
            times = [0.0] * n
            for i in range(n):
                t0 = time.perf_counter()
                step()
                times[i] = (time.perf_counter() - t0) * 1e3
            return times
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        torch.cuda.synchronize(device)
        for start, stop in events:
            start.record()
            step()
            stop.record()
            torch.cuda.synchronize(device)
        return [start.elapsed_time(stop) for start, stop in events]

    header = {"torch": torch.__version__, "device": str(device),
              "timer": "cuda_event" if gpu else "perf_counter", "threads": torch.get_num_threads(),
              "interop_threads": torch.get_num_interop_threads(),
              "parameters": sum(t.numel() for t in model.parameters()),
              "optimizer": describe(optimizer)}
    print(json.dumps(header), flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "batch":
            batch, warmup = int(words[1]), int(words[2])
            x = torch.randn(batch, *shape, device=device)
            y = torch.randint(a.classes, (batch,), device=device)
            times = timed(warmup)
            # The last warm-up step, warm: the turns are sized by it.
            print("ready %.6f" % (times[-1] if times else 0.0), flush=True)
        elif words[0] == "steps":
            print(json.dumps(timed(int(words[1]))), flush=True)
        else:
            break


if __name__ == "__main__":
    main()
