"""The reference for batchscope's per-step overhead: the same mnist_cnn training step in
PyTorch-in-Python, timed the way batchscope times it (each step on its own, monotonic clock, warm-up
first, nothing but the step between the timestamps).

Driven by bench/overhead_bench over stdin/stdout, one command a line:
  batch B W   make the data of batch size B and run W untimed steps; answers "ready"
  steps N     run N timed steps; answers a JSON list of their times in ms
  quit
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

    def __init__(self, classes=10):
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.01)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = MnistCnn()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr)
    x = y = None

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "batch":
            batch, warmup = int(words[1]), int(words[2])
            x = torch.randn(batch, 1, 28, 28)
            y = torch.randint(10, (batch,))
            for _ in range(warmup):
                step()
            print("ready", flush=True)
        elif words[0] == "steps":
            n = int(words[1])
            times = [0.0] * n
            for i in range(n):
                t0 = time.perf_counter()
                step()
                times[i] = (time.perf_counter() - t0) * 1e3
            print(json.dumps(times), flush=True)
        else:
            break


if __name__ == "__main__":
    main()
