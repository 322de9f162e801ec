#!/usr/bin/env python3
"""Checks the parameter counts of batchscope's sequence models against PyTorch reference implementations.

usage: reference_parameters.py BATCHSCOPE_BINARY
Runs `BATCHSCOPE_BINARY models --json`, rebuilds each model's reference in PyTorch at the same default
input and class count, and exits 1 when a count differs. Needs PyTorch (python3-torch).
"""
import json
import math
import subprocess
import sys

import torch
from torch import nn


class WordLanguageModel(nn.Module):
    """pytorch/examples word_language_model RNNModel('LSTM', ...), untied."""

    def __init__(self, vocabulary, embedding=1500, hidden=1500, layers=2, dropout=0.65):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocabulary, embedding)
        self.rnn = nn.LSTM(embedding, hidden, layers, dropout=dropout)
        self.decoder = nn.Linear(hidden, vocabulary)


class TranslationTransformer(nn.Module):
    """Transformer base: nn.Transformer with one embedding shared by source, target and output."""

    def __init__(self, vocabulary, length, d_model=512):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, d_model)
        self.transformer = nn.Transformer(d_model, 8, 6, 6, 2048, 0.1)
        # Sinusoidal positions are a buffer, not a parameter; the output projection reuses
        # self.embedding.weight, so neither adds to the count.
        position = torch.arange(length, dtype=torch.float).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        table = torch.zeros(length, 1, d_model)
        table[:, 0, 0::2] = torch.sin(position * frequency)
        table[:, 0, 1::2] = torch.cos(position * frequency)
        self.register_buffer("positions", table)


class SequenceWise(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module


class BatchRNN(nn.Module):
    def __init__(self, input_size, hidden_size, rnn_type, batch_norm):
        super().__init__()
        self.batch_norm = SequenceWise(nn.BatchNorm1d(input_size)) if batch_norm else None
        self.rnn = rnn_type(input_size=input_size, hidden_size=hidden_size, bidirectional=True, bias=True)


class ConvStack(nn.Module):
    def __init__(self, seq_module):
        super().__init__()
        self.seq_module = seq_module


class DeepSpeech(nn.Module):
    """SeanNaren/deepspeech.pytorch DeepSpeech, bidirectional, as its model.py lays the modules out."""

    def __init__(self, rnn_type, labels, frequency_bins, hidden=1024, layers=5):
        super().__init__()
        self.conv = ConvStack(nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=(41, 11), stride=(2, 2), padding=(20, 5)),
            nn.BatchNorm2d(32),
            nn.Hardtanh(0, 20, inplace=True),
            nn.Conv2d(32, 32, kernel_size=(21, 11), stride=(2, 1), padding=(10, 5)),
            nn.BatchNorm2d(32),
            nn.Hardtanh(0, 20, inplace=True),
        ))
        bins = (frequency_bins + 2 * 20 - 41) // 2 + 1
        bins = (bins + 2 * 10 - 21) // 2 + 1
        rnn_input = 32 * bins
        self.rnns = nn.Sequential(
            BatchRNN(rnn_input, hidden, rnn_type, batch_norm=False),
            *(BatchRNN(hidden, hidden, rnn_type, batch_norm=True) for _ in range(layers - 1)))
        self.fc = nn.Sequential(SequenceWise(nn.Sequential(
            nn.BatchNorm1d(hidden), nn.Linear(hidden, labels, bias=False))))


def reference(name, sample_shape, classes):
    if name == "lstm_lm":
        return WordLanguageModel(classes)
    if name == "transformer":
        return TranslationTransformer(classes, sample_shape[0])
    if name in ("deepspeech2", "deepspeech2_gru"):
        rnn_type = nn.GRU if name.endswith("_gru") else nn.LSTM
        return DeepSpeech(rnn_type, classes, frequency_bins=sample_shape[1])
    raise KeyError(name)


def parameters(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    listing = subprocess.run([sys.argv[1], "models", "--json"], check=True, capture_output=True, text=True)
    models = {m["name"]: m for m in json.loads(listing.stdout)}
    failures = 0
    for name in ("lstm_lm", "transformer", "deepspeech2", "deepspeech2_gru"):
        if name not in models:
            print(f"{name}: missing from `models --json`")
            failures += 1
            continue
        m = models[name]
        expected = parameters(reference(name, m["default_input"], m["classes"]))
        ok = m["parameters"] == expected
        failures += not ok
        print(f"{name}: batchscope {m['parameters']:,}, reference {expected:,} "
              f"(input {m['default_input']}, classes {m['classes']}) {'ok' if ok else 'MISMATCH'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
