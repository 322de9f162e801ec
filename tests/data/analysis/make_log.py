#!/usr/bin/env python3
"""Writes a synthetic batchscope sweep log (steps.jsonl) with a known step-time curve.

Step time = base + slope * b + sum of the jump heights whose position c has b > c, times
(1 + noise * e) per step with e from a seeded generator, so tests know exactly where the jumps are.

With --energy the point records also carry the energy fields of lib/records/records.h, from a fixed power
curve: power = idle + dynamic * b / (b + half), read over all timed steps of a batch size. It draws
nothing from the generator, so the step times are the same with or without it.
"""
import argparse
import json
import math


class Lcg:
    """A tiny deterministic generator, the same on every platform and Python version."""

    def __init__(self, seed):
        self.state = (seed * 6364136223846793005 + 1442695040888963407) % 2**64

    def uniform(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 2**64
        return ((self.state >> 11) + 0.5) / 2**53

    def normal(self):
        return math.sqrt(-2 * math.log(self.uniform())) * math.cos(2 * math.pi * self.uniform())


def batch_list(text):
    if ":" in text:
        parts = [int(p) for p in text.split(":")]
        step = parts[2] if len(parts) == 3 else 1
        return list(range(parts[0], parts[1] + 1, step))
    return [int(p) for p in text.split(",")]


def energy_fields(a, b, times):
    power = a.idle_w + a.dynamic_w * b / (b + a.half_batch)
    window_ms = sum(times)
    steps = len(times)
    joules = power * window_ms / 1e3
    fields = {"energy_method": "nvml energy counter", "energy_scope": "GPU 0000:3B:00.0 board",
              "energy_resolution_ms": a.energy_resolution_ms, "energy_window_ms": round(window_ms, 6),
              "energy_steps": steps, "energy_j": round(joules, 6), "avg_power_w": round(power, 6),
              "j_per_step": round(joules / steps, 6), "j_per_sample": round(joules / steps / b, 9),
              "samples_per_j": round(steps * b / joules, 6), "idle_power_w": None if a.no_idle else a.idle_w}
    above = None if a.no_idle else power - a.idle_w
    above_j = None if above is None else above * window_ms / 1e3
    fields.update({"avg_power_above_idle_w": None if above is None else round(above, 6),
                   "j_per_step_above_idle": None if above is None else round(above_j / steps, 6),
                   "j_per_sample_above_idle": None if above is None else round(above_j / steps / b, 9),
                   "samples_per_j_above_idle": None if above is None else round(steps * b / above_j, 6)})
    start_temperature = 40.0 + b
    fields.update({"start_sm_clock_mhz": 1980.0,
                   "end_sm_clock_mhz": 1683.0 if a.throttle_from and b >= a.throttle_from else 1980.0,
                   "start_memory_clock_mhz": 2619.0, "end_memory_clock_mhz": 2619.0,
                   "start_temperature_c": start_temperature,
                   "end_temperature_c": round(start_temperature + 2 + power / 100, 6),
                   "start_utilization_pct": None, "end_utilization_pct": min(100.0, 40.0 + 5 * b),
                   "start_power_w": round(power, 6), "end_power_w": round(power, 6)})
    return fields


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="vgg16")
    p.add_argument("--experiment", default=None)
    p.add_argument("--phase", default="train")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--gpu", default="NVIDIA Test GPU", help="GPU name; 'cpu' for a CPU log")
    p.add_argument("--libtorch", default="2.5.1")
    p.add_argument("--cudnn-benchmark", action="store_true")
    p.add_argument("--batches", default="1:24")
    p.add_argument("--base", type=float, default=10.0)
    p.add_argument("--slope", type=float, default=0.5)
    p.add_argument("--jumps", default="", help="position:height_ms,...")
    p.add_argument("--noise", type=float, default=0.01)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--oom-from", type=int, default=0, help="sizes from here on run out of memory")
    p.add_argument("--run-id", default="run-1")
    p.add_argument("--no-end", action="store_true")
    p.add_argument("--shard", default=None, help="I/N: the log is shard I of N of one sweep (with --plan-id)")
    p.add_argument("--plan-id", default="plan-1", help="the sharded sweep's plan id")
    p.add_argument("--energy", action="store_true", help="add energy fields to the point records")
    p.add_argument("--idle-w", type=float, default=60.0)
    p.add_argument("--dynamic-w", type=float, default=240.0, help="power above idle as the batch grows")
    p.add_argument("--half-batch", type=float, default=8.0, help="batch size at half the dynamic power")
    p.add_argument("--energy-resolution-ms", type=float, default=10.0)
    p.add_argument("--no-idle", action="store_true", help="no idle baseline: the above-idle fields are null")
    p.add_argument("--throttle-from", type=int, default=0, help="sizes from here on end at 85%% SM clock")
    a = p.parse_args()

    batches = batch_list(a.batches)
    jumps = [(int(c), float(h)) for c, h in (j.split(":") for j in a.jumps.split(",") if j)]
    experiment = a.experiment or f"{a.model}_{a.phase}_{a.precision}"
    cpu = a.gpu == "cpu"
    device = "cpu" if cpu else "cuda:0"
    config = {"name": experiment, "model": a.model, "phase": a.phase, "precision": a.precision,
              "batch": batches, "device": device, "input": [3, 32, 32], "classes": 10,
              "data": "synthetic", "channels_last": False, "cudnn_benchmark": a.cudnn_benchmark,
              "steps": a.steps, "warmup": 2, "order": "ascending", "seed": 0,
              "optimizer": {"type": "sgd", "lr": 0.01, "momentum": 0.9, "weight_decay": 0.0}}
    run = {"type": "run", "run_id": a.run_id, "start_time": "2026-01-01T00:00:00Z",
           "batchscope_version": "0.1.0", "cpu": {"logical_cores": 8, "model": "Test CPU", "torch_threads": 8},
           "cuda_in_libtorch": not cpu, "cuda_runtime_version": "" if cpu else "12.4",
           "cudnn_version": "" if cpu else "9.1.0",
           "gpus": [] if cpu else [{"index": 0, "name": a.gpu, "total_memory_bytes": 85899345920,
                                    "sm_count": 132, "compute_capability": "9.0"}],
           "host": "testhost", "libtorch_version": a.libtorch, "os": "Linux",
           "command": "batchscope sweep (synthetic)", "config": {"source": "make_log.py", "experiments": [config]}}
    if a.shard:
        index, count = (int(x) for x in a.shard.split("/"))
        run["config"]["shard"] = {"plan_id": a.plan_id, "count": count, "index": index, "from": "--shard",
                                  "source": "make_log.py", "shares": [{"cost": 0, "parts": []}] * count}
    rng = Lcg(a.seed)
    lines = [run]
    common = {"experiment": experiment, "model": a.model, "phase": a.phase, "precision": a.precision,
              "device": device}
    out_of_memory = False
    for b in batches:
        if a.oom_from and b >= a.oom_from:
            lines.append({"type": "skipped" if out_of_memory else "oom", **common, "batch_size": b})
            out_of_memory = True
            continue
        level = a.base + a.slope * b + sum(h for c, h in jumps if b > c)
        times = [level * (1 + a.noise * rng.normal()) for _ in range(a.steps)]
        for i, t in enumerate(times):
            lines.append({"type": "step", **common, "batch_size": b, "step": i, "time_ms": round(t, 6),
                          "loss": 2.3, "peak_memory_bytes": 1000000 * b})
        s = sorted(times)
        med = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
        point = {"type": "point", **common, "batch_size": b, "samples": len(times), "median_ms": med,
                 "flops_per_step": 1e9 * b, "peak_memory_bytes": 1000000 * b}
        if a.energy:
            point.update(energy_fields(a, b, [round(t, 6) for t in times]))
        lines.append(point)
    if not a.no_end:
        lines.append({"type": "end", "time": "2026-01-01T00:10:00Z", "complete": True})
    for line in lines:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
