#!/usr/bin/env python3
"""Writes a small MNIST-like dataset (the four IDX files, optionally gzipped) for tests: 28x28 images
whose class is which 7x7 cell of a 3x3 grid (plus one) is bright, on seeded noise.

usage: make_idx.py DIR [--train N] [--test N] [--gzip] [--truncate FILE]
"""
import argparse
import gzip
import os
import random
import struct


def images_and_labels(count, rng):
    images, labels = bytearray(), bytearray()
    for _ in range(count):
        label = rng.randrange(10)
        pixels = bytearray(rng.randrange(40) for _ in range(28 * 28))
        row, col = divmod(label % 9, 3)
        for y in range(row * 9 + 1, row * 9 + 8):
            for x in range(col * 9 + 1, col * 9 + 8):
                pixels[y * 28 + x] = 200 + rng.randrange(56)
        if label == 9:
            pixels[0:28] = bytes([255]) * 28
        images += pixels
        labels.append(label)
    return images, labels


def write(path, dims, data, compress):
    header = struct.pack(">BBBB", 0, 0, 0x08, len(dims)) + b"".join(struct.pack(">I", d) for d in dims)
    opener = gzip.open if compress else open
    with opener(path + (".gz" if compress else ""), "wb") as out:
        out.write(header + bytes(data))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("dir")
    p.add_argument("--train", type=int, default=300)
    p.add_argument("--test", type=int, default=100)
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rng = random.Random(a.seed)
    for split, count in (("train", a.train), ("t10k", a.test)):
        images, labels = images_and_labels(count, rng)
        write(os.path.join(a.dir, f"{split}-images-idx3-ubyte"), [count, 28, 28], images, a.gzip)
        write(os.path.join(a.dir, f"{split}-labels-idx1-ubyte"), [count], labels, a.gzip)


if __name__ == "__main__":
    main()
