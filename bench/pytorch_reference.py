"""The reference for batchscope's per-step overhead: the same mnist_cnn training step in
PyTorch-in-Python, timed the way batchscope times it (each step on its own, monotonic clock, warm-up
first, nothing but the step between the timestamps). Prints one JSON object per batch size.

usage: pytorch_reference.py --batch 1,8,32 --steps 200 --warmup 20 --threads 1
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class MnistCnn(nn.Module):
    """The classic Keras MNIST CNN, layer for layer as batchscope's mnist_cnn."""

    def __init__(self, classes=10):
        super().__init__()
        # In-place ReLUs, as batchscope's zoo (and torchvision) use them.
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
    p.add_argument("--batch", required=True)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.01)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = MnistCnn()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr)
    for batch in [int(b) for b in a.batch.split(",")]:
        x = torch.randn(batch, 1, 28, 28)
        y = torch.randint(10, (batch,))

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()

        for _ in range(a.warmup):
            step()
        times = [0.0] * a.steps
        for i in range(a.steps):
            t0 = time.perf_counter()
            step()
            times[i] = (time.perf_counter() - t0) * 1e3
        print(json.dumps({"batch_size": batch, "median_ms": statistics.median(times),
                          "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
