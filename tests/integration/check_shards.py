#!/usr/bin/env python3
"""Checks the shards of a sharded sweep against their plan: every batch size (and pass) the plan
holds was measured exactly once, in the shard the plan gives it to, every shard is complete, and
where analyze ran, its report has every planned batch size of each experiment once.

Usage: check_shards.py OUT [--resumed SHARD ...]   (those shards must have been resumed)
"""
import json
import os
import sys
from collections import Counter


def main():
    out = sys.argv[1]
    resumed = [int(i) for i in sys.argv[3:]] if len(sys.argv) > 2 and sys.argv[2] == "--resumed" else []
    plan = json.load(open(os.path.join(out, "plan.json")))
    count = plan["count"]
    planned = Counter()
    owner = {}
    for index, share in enumerate(plan["shares"]):
        for part in share["parts"]:
            for b in part["batch"]:
                for p in range(1, part.get("passes", 1) + 1):
                    planned[(part["experiment"], b, p)] += 1
                    owner[(part["experiment"], b, p)] = index
    assert all(n == 1 for n in planned.values()), "the plan gives a batch size to two shards"
    measured = Counter()
    for index in range(count):
        log = os.path.join(out, f"shard-{index:04d}-of-{count:04d}", "steps.jsonl")
        records = [json.loads(line) for line in open(log)]
        run = records[0]
        assert run["type"] == "run", log
        shard = run["config"]["shard"]
        assert shard["plan_id"] == plan["plan_id"] and shard["index"] == index and shard["count"] == count, log
        assert records[-1]["type"] == "end", f"{log} is not complete"
        resumes = sum(1 for r in records if r["type"] == "resume")
        if index in resumed:
            assert resumes >= 1, f"{log} was not resumed"
        for r in records:
            if r["type"] in ("point", "oom", "skipped"):
                key = (r["experiment"], r["batch_size"], r.get("pass", 1))
                measured[key] += 1
                assert owner.get(key) == index, f"{log}: {key} belongs to shard {owner.get(key)}"
                if r["type"] == "point":
                    steps = [s for s in records if s["type"] == "step" and s["experiment"] == key[0]
                             and s["batch_size"] == key[1] and s.get("pass", 1) == key[2]]
                    assert len(steps) == r["samples"], f"{log}: {key} has {len(steps)} steps for {r['samples']} samples"
    twice = [k for k, n in measured.items() if n > 1]
    missing = [k for k in planned if measured[k] == 0]
    assert not twice, f"measured more than once: {twice}"
    assert not missing, f"never measured: {missing}"
    analysis = os.path.join(out, "analysis", "analysis.json")
    if os.path.exists(analysis):
        a = json.load(open(analysis))
        by_experiment = {}
        for e, b, _ in planned:
            by_experiment.setdefault(e, set()).add(b)
        seen = {}
        for g in a["groups"]:
            name = g["identity"].get("experiment") or g["label"]
            sizes = [p["batch_size"] for p in g["points"]]
            assert len(sizes) == len(set(sizes)), f"{name}: a batch size twice in the report"
            assert len(g["logs"]) >= 1
            seen[name] = set(sizes)
        found = sorted(seen.values(), key=sorted)
        wanted = sorted(by_experiment.values(), key=sorted)
        assert found == wanted, f"the report has {found}, the plan {wanted}"
    print(f"check_shards: {out}: {len(planned)} batch sizes in {count} shards, each measured once")


if __name__ == "__main__":
    main()
