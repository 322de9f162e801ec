"""Checks every record of a batchscope run directory against what the sweep was asked to do.

usage: check_run.py RUN_DIR EXPERIMENTS BATCHES STEPS [--oom-at N] [--resumes K]
EXPERIMENTS: how many experiments; BATCHES: comma list of the batch sizes of each; STEPS: timed steps.
"""
import argparse
import csv
import json
import sys


def fail(message):
    print("check_run: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("run_dir")
    p.add_argument("experiments", type=int)
    p.add_argument("batches")
    p.add_argument("steps", type=int)
    p.add_argument("--oom-at", type=int)
    p.add_argument("--resumes", type=int, default=0)
    a = p.parse_args()
    batches = [int(b) for b in a.batches.split(",")]

    with open(a.run_dir + "/steps.jsonl") as f:
        lines = f.read().split("\n")
    if lines[-1] != "":
        fail("the last line is not terminated")
    records = [json.loads(line) for line in lines[:-1]]

    if records[0]["type"] != "run":
        fail("the first record is not a run record")
    run = records[0]
    for key in ("run_id", "start_time", "host", "batchscope_version", "libtorch_version", "cpu", "gpus",
                "config", "timers"):
        if key not in run:
            fail("the run record lacks " + key)
    if len(run["config"]["experiments"]) != a.experiments:
        fail("the run record holds %d experiments" % len(run["config"]["experiments"]))
    if sum(r["type"] == "resume" for r in records) != a.resumes:
        fail("expected %d resume records" % a.resumes)
    if records[-1]["type"] != "end":
        fail("the run does not end with an end record")

    seen = {}
    for r in records:
        if r["type"] in ("step", "point", "oom", "skipped"):
            key = (r["experiment"], r["batch_size"])
            seen.setdefault(key, []).append(r)
    names = [e["name"] for e in run["config"]["experiments"]]
    for name in names:
        for b in batches:
            rs = seen.get((name, b))
            if not rs:
                fail("no record for %s batch %d" % (name, b))
            types = [r["type"] for r in rs]
            if a.oom_at is not None and b == a.oom_at:
                if types != ["oom"]:
                    fail("batch %d should be one oom record, got %s" % (b, types))
                continue
            if a.oom_at is not None and b > a.oom_at:
                if types != ["skipped"]:
                    fail("batch %d should be skipped, got %s" % (b, types))
                continue
            if types != ["step"] * a.steps + ["point"]:
                fail("%s batch %d: expected %d steps and a point, got %s" % (name, b, a.steps, types))
            steps = [r for r in rs if r["type"] == "step"]
            if [s["step"] for s in steps] != list(range(a.steps)):
                fail("step numbers of batch %d are %s" % (b, [s["step"] for s in steps]))
            for s in steps:
                if not s["time_ms"] > 0:
                    fail("a step time is not positive")
                for k in ("model", "phase", "precision", "device"):
                    if not s.get(k):
                        fail("a step record lacks " + k)
            point = rs[-1]
            times = sorted(s["time_ms"] for s in steps)
            if not times[0] <= point["p10_ms"] <= point["median_ms"] <= point["p90_ms"] <= times[-1]:
                fail("batch %d: p10 <= median <= p90 does not hold within the step times" % b)
            if abs(point["samples_per_s"] - b / (point["median_ms"] / 1000)) > 1e-6 * point["samples_per_s"]:
                fail("batch %d: samples/s does not match the median" % b)
            if not point["tflops"] > 0:
                fail("batch %d: TFLOP/s is not positive" % b)
    extra = set(k[0] for k in seen) - set(names)
    if extra:
        fail("records of unknown experiments: %s" % extra)

    with open(a.run_dir + "/steps.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    per_batch = [r for r in records if "batch_size" in r]
    if len(rows) != len(per_batch):
        fail("steps.csv has %d rows, steps.jsonl %d per-batch records" % (len(rows), len(per_batch)))
    for n, (row, r) in enumerate(zip(rows, per_batch), start=2):
        for key, value in r.items():
            if key not in row:
                fail("steps.csv has no column %s" % key)
            cell = row[key]
            same = (cell == "" if value is None else
                    cell == value if isinstance(value, str) else
                    cell == str(value).lower() if isinstance(value, bool) else
                    float(cell) == value)
            if not same:
                fail("steps.csv line %d: %s is %r, steps.jsonl has %r" % (n, key, cell, value))
    print("check_run: %d records, %d csv rows: ok" % (len(records), len(rows)))


if __name__ == "__main__":
    main()
