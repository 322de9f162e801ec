"""batchscope train's epoch against the same epoch in PyTorch-in-Python: the loop's own cost per step.

Both sides train mnist_cnn on MNIST's images (an IDX directory) for one epoch of the same batch size,
with SGD and momentum 0.9 at the same rate, on the same device and threads, and time the epoch alike:
the device synchronised before and after, the evaluation left out. Each step does what train's does:
gather the shuffled batch (into page-locked memory for a GPU, copied without blocking), forward, the
cross-entropy, the gradients reset, backward, the optimizer step, and the loss and hits summed on the
device; before the epoch, one untimed forward and backward pass over the first batch, undone, as train
runs one so that the libraries' first-call costs are not in the epoch. The sides take turns, the first alternating from round to round, so that the machine's changing
speed hits both alike; a round is one epoch of each, each side a fresh process (so that neither brings a
warm GPU context, cuDNN's handles or an allocator's cache from an earlier round). It prints each round's
epoch times, the median of the rounds' ratios batchscope / PyTorch with their range, and whether the goal
(at most 1) is met: exit 0 where it is, 1 where it is not, 2 where the benchmark itself failed.

  python3 bench/train_loop_bench.py --bin build/batchscope --data data/mnist --batch 64 --rounds 3
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_reference import MnistCnn  # noqa: E402  (the same network, layer for layer)

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081  # batchscope's normalisation of MNIST (data/datasets.cpp)


def read_idx(path, items_offset):
    """An IDX file's items as bytes, from the file or, where it is not there, its .gz."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rb") as f:
            data = f.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    return torch.frombuffer(bytearray(data[items_offset:]), dtype=torch.uint8)


def load_mnist(directory, limit):
    images = read_idx(os.path.join(directory, "train-images-idx3-ubyte"), 16).view(-1, 1, 28, 28)
    labels = read_idx(os.path.join(directory, "train-labels-idx1-ubyte"), 8).long()
    if limit:
        images, labels = images[:limit], labels[:limit]
    images = (images.float() / 255.0 - MNIST_MEAN) / MNIST_STD
    return images.contiguous(), labels.contiguous()


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def python_epoch(images, labels, batch, lr, device, seed):
    """One epoch as train runs it; its training seconds."""
    torch.manual_seed(seed)
    model = MnistCnn(10).to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, foreach=device.type == "cuda")
    order = torch.randperm(images.size(0), generator=torch.Generator().manual_seed(seed + 1))
    loss_sum = torch.zeros((), dtype=torch.double, device=device)
    correct = torch.zeros((), dtype=torch.long, device=device)
    pinned = device.type == "cuda"
    # As train does before its first epoch: one untimed forward and backward pass over the split's first
    # batch, its gradients dropped and the batch norms' statistics and random generators put back, so that
    # neither side's epoch carries the libraries' first-call costs.
    cpu_rng = torch.get_rng_state()
    device_rng = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    buffers = [b.detach().clone() for b in model.buffers()]
    F.cross_entropy(model(images[:batch].to(device)), labels[:batch].to(device)).backward()
    for p in model.parameters():
        p.grad = None
    with torch.no_grad():
        for b, kept in zip(model.buffers(), buffers):
            b.copy_(kept)
    torch.set_rng_state(cpu_rng)
    if device_rng is not None:
        torch.cuda.set_rng_state(device_rng, device)
    synchronize(device)
    start = time.perf_counter()
    for first in range(0, images.size(0), batch):
        rows = order[first:first + batch]
        if pinned:
            x_host = torch.empty((rows.numel(), 1, 28, 28), pin_memory=True)
            y_host = torch.empty((rows.numel(),), dtype=torch.long, pin_memory=True)
            torch.index_select(images, 0, rows, out=x_host)
            torch.index_select(labels, 0, rows, out=y_host)
            x, y = x_host.to(device, non_blocking=True), y_host.to(device, non_blocking=True)
        else:
            x, y = images.index_select(0, rows), labels.index_select(0, rows)
        for p in model.parameters():
            p.grad = None
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        loss_sum += loss.detach().double() * y.size(0)
        correct += logits.detach().argmax(1).eq(y).sum()
    synchronize(device)
    seconds = time.perf_counter() - start
    return seconds, loss_sum.item() / images.size(0)


def python_side(args):
    """--python-side: one epoch of the Python side in a process of its own, as batchscope's side runs, so
    that neither carries a warm runtime (a GPU's context, cuDNN's and cuBLAS's handles, the caching
    allocator's blocks, a CPU's allocator) from one round into the next; prints its seconds and loss."""
    images, labels = load_mnist(args.data, args.limit_train)
    seconds, loss = python_epoch(images, labels, args.batch, args.lr, torch.device(args.device), args.seed)
    print(json.dumps({"seconds": seconds, "train_loss": loss}), flush=True)
    return 0


# Both sides run with the same fixed glibc malloc thresholds (as bench_overhead gives its two sides), unless
# the environment sets them: batchscope fixes its own otherwise and Python's would move with its history, a
# difference of up to 14% in a CPU step that is the allocator's, not the loop's.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": os.environ.get("MALLOC_MMAP_THRESHOLD_", "33554432"),
              "MALLOC_TRIM_THRESHOLD_": os.environ.get("MALLOC_TRIM_THRESHOLD_", "4294967296")}


def side_environment():
    return {**os.environ, **MALLOC_ENV}


def python_round(args, seed):
    command = [sys.executable, os.path.abspath(__file__), "--python-side", "--seed", str(seed), "--data", args.data,
               "--batch", str(args.batch), "--lr", str(args.lr), "--limit-train", str(args.limit_train),
               "--device", args.device, "--threads", str(args.threads)]
    done = subprocess.run(command, capture_output=True, text=True, env=side_environment())
    if done.returncode != 0:
        raise RuntimeError("the PyTorch side failed: " + (done.stderr.strip().splitlines() or ["no output"])[-1])
    epoch = json.loads(done.stdout.strip().splitlines()[-1])
    return epoch["seconds"], epoch["train_loss"]


def batchscope_epoch(args, out):
    command = [args.bin, "train", "--data", args.data, "--batch", str(args.batch), "--epochs", "1",
               "--lr", str(args.lr), "--device", args.device, "--threads", str(args.threads),
               "--limit-test", "100", "--out", out, "--force", "--quiet", "--deterministic", "off"]
    if args.limit_train:
        command += ["--limit-train", str(args.limit_train)]
    done = subprocess.run(command, capture_output=True, text=True, env=side_environment())
    if done.returncode != 0:
        raise RuntimeError("batchscope train failed: " + done.stderr.strip().splitlines()[-1])
    with open(os.path.join(out, "train.jsonl")) as f:
        epoch = [json.loads(line) for line in f if '"type":"epoch"' in line.replace(" ", "")][0]
    return epoch["epoch_seconds"], epoch["train_loss"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default="build/batchscope")
    p.add_argument("--data", default="data/mnist", help="a directory of MNIST's IDX files")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--limit-train", type=int, default=0, help="the first N training images only (0: all)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the rounds and the ratio here")
    p.add_argument("--python-side", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.python_side:
        return python_side(args)
    try:
        images, labels = load_mnist(args.data, args.limit_train)
    except OSError as e:
        print(f"train_loop_bench: {args.data}: {e.strerror}; give --data a directory of MNIST's IDX files "
              "(scripts/get_datasets.sh mnist)", file=sys.stderr)
        return 2
    steps = (images.size(0) + args.batch - 1) // args.batch
    print(f"mnist_cnn on {images.size(0)} MNIST images, batch {args.batch} ({steps} steps), SGD momentum 0.9, "
          f"lr {args.lr}, {args.device}, {args.threads} thread(s); PyTorch {torch.__version__}; glibc malloc of both "
          f"sides: {' '.join(f'{k}={v}' for k, v in MALLOC_ENV.items())}")
    rounds = []
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            sides = {}
            order = ["batchscope", "pytorch"] if r % 2 == 0 else ["pytorch", "batchscope"]
            for side in order:
                try:
                    if side == "batchscope":
                        sides[side] = batchscope_epoch(args, os.path.join(work, "run"))
                    else:
                        sides[side] = python_round(args, r)
                except (RuntimeError, OSError) as e:
                    print(f"train_loop_bench: {e}", file=sys.stderr)
                    return 2
            ratio = sides["batchscope"][0] / sides["pytorch"][0]
            rounds.append({"batchscope_s": sides["batchscope"][0], "pytorch_s": sides["pytorch"][0],
                           "ratio": ratio, "first": order[0],
                           "train_loss": {k: v[1] for k, v in sides.items()}})
            print(f"round {r + 1} ({order[0]} first): batchscope {sides['batchscope'][0]:.3f} s "
                  f"({1000 * sides['batchscope'][0] / steps:.3f} ms/step), PyTorch {sides['pytorch'][0]:.3f} s "
                  f"({1000 * sides['pytorch'][0] / steps:.3f} ms/step): {ratio:.3f}x")
    ratios = [r["ratio"] for r in rounds]
    median = statistics.median(ratios)
    met = median <= 1.0
    print(f"batchscope / PyTorch, median of {len(ratios)} round(s): {median:.3f}x "
          f"(range {min(ratios):.3f}-{max(ratios):.3f}); goal <= 1: {'met' if met else 'missed'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"batch": args.batch, "images": images.size(0), "steps": steps, "device": args.device,
                       "threads": args.threads, "pytorch": torch.__version__, "malloc": MALLOC_ENV, "rounds": rounds,
                       "median_ratio": median, "goal_met": met}, f, indent=2)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
