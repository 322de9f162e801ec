#!/usr/bin/env python3
"""Writes a small CIFAR-like dataset in CIFAR's binary format for tests: 3x32x32 colour images whose
class is which row of a 4x4 grid of 8x8 cells is bright, in which pair of mirrored cells (the outer or the
inner two) and in which colour channel, on seeded noise: a left-right flip keeps an image's class, as
training's augmentation flips them, and so does a crop a few pixels off.
CIFAR-10's files (data_batch_1.bin to data_batch_5.bin, test_batch.bin) by default, CIFAR-100's
(train.bin, test.bin: a coarse and a fine label byte) with --hundred.

usage: make_cifar.py DIR [--train N] [--test N] [--hundred] [--seed S]
"""
import argparse
import os
import random


def records(count, classes, label_bytes, rng):
    out = bytearray()
    for _ in range(count):
        label = rng.randrange(classes)
        pixels = bytearray(rng.randrange(60) for _ in range(3 * 32 * 32))
        row, rest = divmod(label % 16, 4)
        cols, channel = ((0, 3), (1, 2))[rest % 2], rest // 2
        for y in range(row * 8 + 1, row * 8 + 7):
            for col in cols:
                for x in range(col * 8 + 1, col * 8 + 7):
                    pixels[channel * 1024 + y * 32 + x] = 200 + rng.randrange(56)
        if label_bytes == 2:
            out.append(label // 5)  # the coarse label: any byte, batchscope takes the fine one
        out.append(label)
        out += pixels
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("dir")
    p.add_argument("--train", type=int, default=250)
    p.add_argument("--test", type=int, default=100)
    p.add_argument("--hundred", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rng = random.Random(a.seed)
    if a.hundred:
        files = [("train.bin", a.train), ("test.bin", a.test)]
        classes, label_bytes = 100, 2
    else:
        per_file = [a.train // 5 + (1 if i < a.train % 5 else 0) for i in range(5)]
        files = [(f"data_batch_{i + 1}.bin", n) for i, n in enumerate(per_file)] + [("test_batch.bin", a.test)]
        classes, label_bytes = 10, 1
    for name, count in files:
        with open(os.path.join(a.dir, name), "wb") as out:
            out.write(records(count, classes, label_bytes, rng))


if __name__ == "__main__":
    main()
