#!/usr/bin/env python3
"""The README's pandas recipe, run as the README shows it on a real sweep's directory: the medians it
computes (from steps.jsonl, and from steps.csv) equal the point records' median_ms exactly, and its
batch sizes are integers. Exit 77 (skipped) where pandas is not installed."""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

try:
    import pandas  # noqa: F401
except ImportError:
    print("pandas_recipe: skipped: python3-pandas is not installed (scripts/setup.sh --bench installs it)")
    sys.exit(77)


def recipe(readme):
    text = readme.read_text()
    marker = text.index("<!-- pandas recipe")
    block = re.search(r"```python\n(.*?)```", text[marker:], re.S)
    assert block, "the README has no python block after its pandas recipe marker"
    return block.group(1)


def main():
    binary, source = sys.argv[1], pathlib.Path(sys.argv[2])
    code = recipe(source / "README.md")
    with tempfile.TemporaryDirectory() as work:
        out = pathlib.Path(work) / "quick"
        config = pathlib.Path(work) / "quick.yaml"
        config.write_text(
            "device: cpu\ndefaults: {warmup: 1, steps: 6}\nexperiments:\n"
            "  - {name: train, model: mnist_cnn, batch: [1, 2, 3]}\n"
            "  - {name: infer, model: mnist_cnn, phase: infer, batch: [4, 8]}\n")
        subprocess.run([binary, "sweep", str(config), "--out", str(out), "--threads", "1", "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        names = {}
        exec(code.replace("runs/quick", str(out)), names)
        steps, medians = names["steps"], names["medians"]
        assert str(steps.batch_size.dtype) == "int64", steps.batch_size.dtype
        points = [json.loads(l) for l in open(out / "steps.jsonl")]
        points = {(p["experiment"], p["batch_size"]): p["median_ms"] for p in points if p["type"] == "point"}
        assert len(points) == 5, points
        from_recipe = {key: float(value) for key, value in medians.items()}
        assert from_recipe == points, (from_recipe, points)
        # The CSV the recipe's comment names gives the same.
        csv = names["pd"].read_csv(out / "steps.csv")
        csv = csv[csv.type == "step"]
        from_csv = {key: float(value) for key, value in csv.groupby(["experiment", "batch_size"]).time_ms.median().items()}
        assert from_csv == points, (from_csv, points)
        assert str(csv.batch_size.dtype) == "int64", csv.batch_size.dtype
    print(f"pandas_recipe: ok: the README's recipe gives the {len(points)} medians of the point records exactly")


main()
