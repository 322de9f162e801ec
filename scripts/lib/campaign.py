#!/usr/bin/env python3
"""The GPU measurement campaign: every experiment of the batch-size study, in priority order, resumable.

Run by scripts/gpu_campaign.sh (which builds and tests first). Each item is a batchscope command with its
own output under the results directory. The first run writes the plan (commands, estimates, step counts)
to <results>/campaign/plan.json; later runs follow that plan, so that the commands stay the same and
interrupted sweeps resume. Before the time budget runs out the running command is stopped the way a
user would stop it (SIGINT: a sweep writes the batch size that is running, then exits), and what was
measured is copied to --copy-to. Exit codes: 0 all done, 3 stopped at the budget (run again to go on),
1 an item failed (the others still ran), 2 bad usage.
"""
import argparse
import concurrent.futures
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time

# Priority order of the study; see README "The GPU campaign".
JUMP_MODELS_OFF = ["vgg19", "resnet50", "mobilenet_v2"]
JUMP_MODELS_ON = ["vgg16", "vgg19", "resnet50", "mobilenet_v2"]
MAXBATCH_MODELS = ["vgg16", "vgg19", "resnet50", "mobilenet_v2"]
# The peak items' files, each read by every later analysis.
# In the order analyze reads them: a later file's record of the same layer, batch and mode replaces an earlier's.
PEAK_FILES = {"peak": "peak.jsonl", "peak_conv": "peak_conv.jsonl",
              "peak_layers_staircase": "peak_layers_staircase.jsonl", "peak_layers": "peak_layers.jsonl",
              "peak_layers_ieee": "peak_layers_ieee.jsonl"}
IMAGENET = ["--input", "3,224,224", "--classes", "1000", "--batch", "1:70", "--phase", "train",
            "--precision", "fp32", "--warmup", "5", "--steps", "20"]
# Smoke mode: the same items on the CPU with tiny shapes and one timed step a size (VGG's 134M parameters
# make even a tiny step take a second here): it tests the campaign, not the numbers.
SMOKE_IMAGE = ["--input", "3,64,64", "--classes", "10", "--batch", "1:2", "--warmup", "0", "--steps", "1"]
SMOKE_COMMON = ["--device", "cpu", "--idle-seconds", "0"]

# Sustained FLOP/s assumed by the estimates (a training step of a large CNN; small steps are floored).
# H100: VGG16's fp32 training step ran at 113 TFLOP/s at batch 64 (cuDNN's TF32 convolutions, LibTorch's
# default); bf16 is assumed three times that. The H200 is assumed a little faster.
RATES = {"h100": (100e12, 300e12), "h200": (110e12, 330e12), "a100": (16e12, 90e12), "cpu": (3e10, 1e10)}
# Per batch size: cuDNN's search in benchmark mode (VGG16 at 224², 1..42, on an H100: about 5 s a size).
BENCHMARK_SEARCH_S = {True: 5.0, False: 1.0}
FALLBACK_RATE = (15e12, 50e12)
# IEEE fp32 (tf32: off) runs on the GPU's fp32 units instead of its tensor cores: an H100's are about a
# third of what its VGG16 reached in TF32.
IEEE_FP32_SHARE = 0.35


# The sweeps' plans (sweep --plan) of the last plan made, in the campaign's state directory.
SWEEP_PLAN_CACHE = "sweep_plans.cache.json"


class Campaign:
    def __init__(self, a):
        self.a = a
        self.bin = a.bin
        self.results = os.path.normpath(a.results)
        self.state_dir = os.path.join(self.results, "campaign")
        os.makedirs(self.state_dir, exist_ok=True)
        self.log_path = os.path.join(self.state_dir, "log.txt")
        self.start = time.monotonic()
        self.deadline = self.start + a.budget_s if a.budget_s > 0 else float("inf")
        self.state_path = os.path.join(self.state_dir, "state.json")
        self.state = load_json(self.state_path, {})

    def log(self, message):
        line = f"[{time.strftime('%H:%M:%S')} +{time.monotonic() - self.start:5.0f}s] {message}"
        print(line, flush=True)
        if self.a.analyze_only:  # the log is the runs' own: analysing them again here adds nothing to it
            return
        with open(self.log_path, "a") as f:
            f.write(line + "\n")

    def remaining(self):
        return self.deadline - time.monotonic()

    def save_state(self):
        save_json(self.state_path, self.state)

    # ---- the plan ----------------------------------------------------------------------------------

    def items(self):
        """Every item as (id, kind, argv after the binary, out path, resumable)."""
        r, smoke = self.results, self.a.smoke
        dev = SMOKE_COMMON if smoke else ["--device", "cuda:0"]
        image = SMOKE_IMAGE if smoke else IMAGENET
        data = ["--data", self.a.data] if self.a.data else []
        out = []
        # Training sweeps on a GPU step the optimizer multi-tensor (foreach) unless told otherwise. Where
        # this GPU's sweeps already ran LibTorch's loop, every later one does too, so that they compare.
        loop = self.ran_loop_optimizer()
        optimizer = ["--foreach", "off"] if loop else []

        def sweep(item_id, args, path, energy=False):
            # Energy needs a window of about a second per batch size; only the energy study pays for it.
            quiet = ["--quiet"] if energy else ["--no-energy", "--quiet"]
            pinned = optimizer if "--foreach" not in args else []
            out.append({"id": item_id, "kind": "sweep", "argv": ["sweep"] + args + dev + quiet + pinned + ["--out", path],
                        "out": path, "resumable": True})

        jumps = os.path.join(r, "jumps")
        # Benchmark mode's search costs seconds a batch size on a GPU (5 s on an H100): VGG16's sweep with it
        # times 1..70, as item 1 does; the other nets' time both sides of each multiple of 16 (the steps
        # m -> m + 1 that analyze's rank test reads), 1, 2, 4, 8 and the sizes between, 29 of the 70.
        sides = sorted({1, 2, 4, 8, 12, 24, 40, 56, 70} | {m + d for m in (16, 32, 48, 64) for d in range(-2, 3)})
        around_16 = ",".join(str(b) for b in sides)

        def bench_on(m):
            args = image if smoke or m == "vgg16" else with_option(image, "--batch", around_16)
            sweep(f"{m}_bench_on", ["--model", m] + args + ["--cudnn-benchmark"], os.path.join(jumps, f"{m}_bench_on"))

        # First every claim's first answer, each item a few minutes at most, so that a short GPU window
        # answers all of them; then the variants of claims 1 and 3, the tool's own cost against
        # PyTorch-in-Python, benchmark mode on the other nets, and last the largest batches, which answer
        # no claim of the study.
        # 1. VGG16's staircase, profiled, so that analyze can put every jump on its layers and kernels.
        # Smoke: six sizes, so that a short budget stops it half-way (the smoke test resumes it).
        profiled_vgg16 = (["configs/vgg16_jumps.yaml", "--profile", "--profile-steps", "1"] +
                          with_option(SMOKE_IMAGE, "--batch", "1:6") if smoke
                          else ["configs/vgg16_jumps.yaml", "--profile"])
        sweep("vgg16_jumps", profiled_vgg16, os.path.join(r, "vgg16_jumps"))
        # 5. The GPU's measured peaks, that every sweep's TFLOP/s is read against: the matrix product's, then
        # the convolution's, the roof of a CNN's layers (each in its own file: an item that starts again sets
        # its half-written file aside).
        tiny = ["--steps", "2", "--warmup", "0"] if smoke else []
        for item_id, operation, shape in (("peak", "matmul", ["--size", "64"]),
                                          ("peak_conv", "conv", ["--conv-input", "2x8x8x8"])):
            path = os.path.join(r, PEAK_FILES[item_id])
            out.append({"id": item_id, "kind": "peak",
                        "argv": ["peak", "--operation", operation, "--out", path] + (shape + tiny if smoke else []) + dev[:2],
                        "out": path, "resumable": False})
        # 5. Each layer of VGG16 alone, the roof of its own shape, for the profiled sweeps' layer rates: item 1's
        # and the channels-last one's at batch 64 (on the H100 and the H200 both) with TF32 convolutions and
        # fp32 products, the IEEE fp32 one's at 32: where the step holds a layer below what it reaches alone,
        # and where its shape does. With cuDNN's heuristics, as those sweeps ran, and with its search: what
        # benchmark mode gives each layer. Two items, so that no batch is timed in a precision none reads.
        def layers_alone(item_id, args):
            path = os.path.join(r, PEAK_FILES[item_id])
            out.append({"id": item_id, "kind": "peak",
                        "argv": ["peak", "--model", "vgg16", "--phase", "train", "--out", path] + args + dev[:2],
                        "out": path, "resumable": False})

        # 2. Where MNIST's training and inference stop gaining, and the same numbers on both devices.
        mnist_args = ["configs/mnist_train_vs_infer.yaml"] + data
        if smoke:
            # Five timed steps, as many as analyze needs to use a size (and read it against the peak).
            mnist_args += ["--batch", "1:4:x2", "--warmup", "1", "--steps", "5", "--memory-limit", "256MiB"]
        sweep("mnist_train_vs_infer", mnist_args, os.path.join(r, "mnist_train_vs_infer"))
        path = os.path.join(r, "train_compare")
        train = ["train", "--batch", "64", "--quiet", "--out", path] + (data or ["--data", "mnist"])
        train += (["--epochs", "1", "--limit-train", "256", "--limit-test", "128", "--compare", "cpu,cpu"] if smoke
                  else ["--epochs", "2", "--compare", "cpu,cuda:0"])
        out.append({"id": "train_compare", "kind": "train", "argv": train, "out": path, "resumable": False})
        # 2. What each batch size takes to reach 98% test accuracy: the time a user waits, not a step's.
        # The learning rate is momentum SGD's 0.01 at batch 32, times the square root of the batch's growth
        # (linear scaling diverged at 2048 on the CPU). A stopped study goes on from its finished epochs.
        # With LibTorch's own cuDNN settings, as a user's training runs, not deterministic algorithms.
        path = os.path.join(r, "mnist_time_to_accuracy")
        study = ["train", "--lr", "0.01", "--lr-batch", "32", "--lr-scaling", "sqrt", "--deterministic", "off",
                 "--quiet", "--out", path]
        study += data or ["--data", "mnist"]
        study += (["--batch", "16:64:x4", "--epochs", "2", "--target-accuracy", "50%", "--limit-train", "256",
                   "--limit-test", "128"] if smoke
                  else ["--batch", "64:16384:x4", "--epochs", "20", "--target-accuracy", "98%"])
        out.append({"id": "mnist_time_to_accuracy", "kind": "train", "argv": study + dev[:2], "out": path,
                    "resumable": True})
        # 3. µ-cuDNN's speedups, planned and measured.
        def microbatch(m, suffix="", more=(), env=None):
            path = os.path.join(r, "microbatch", m + suffix)
            extra = (["--batch", "4", "--input", "3,64,64", "--classes", "10", "--steps", "2", "--warmup", "1",
                      "--repeats", "2", "--policy", "powerOfTwo"] if smoke else ["--batch", "256"])
            # A stopped study keeps the costs it measured, and goes on from them.
            item = {"id": f"microbatch_{m}{suffix}", "kind": "microbatch",
                    "argv": ["microbatch", "--model", m, "--quiet", "--out", path] + extra + list(more) + dev[:2],
                    "out": path, "resumable": True}
            if env:
                item["env"] = env
            out.append(item)

        for m in ("alexnet", "resnet18"):
            microbatch(m)
        # 4. J/sample and the most efficient batch size.
        energy = "tests/data/campaign_smoke_energy.yaml" if smoke else "configs/energy_zoo.yaml"
        energy_args = [energy] + (["--warmup", "0", "--steps", "1"] if smoke else [])
        sweep("energy_zoo", energy_args, os.path.join(r, "energy_zoo"), energy=True)
        # 3. µ-cuDNN's gains came from algorithms that need more workspace than a fixed limit allowed at the
        # whole batch (Caffe's was 8 MiB, Caffe2's 64 MiB), each chosen by cuDNN's timed search. On an H200,
        # with LibTorch's heuristics and no limit, no split gained: AlexNet with the search (benchmark
        # mode), then with the search under a 64 MiB cap, the setting of the claim.
        # With the search, cuDNN times its algorithms for every shape a layer sees: the all policy's 256
        # micro-batch sizes of each of AlexNet's 5 layers ran over 241 s on an H200 without finishing
        # (23 s without the search). So these items time the powerOfTwo policy's 9 sizes a layer, which
        # gained as much as all's there without the search.
        bench = ["--cudnn-benchmark"] + ([] if smoke else ["--policy", "powerOfTwo"])
        capped = {"CUDNN_CONV_WSCAP_DBG": "64"}
        microbatch("alexnet", "_bench_on", bench)
        microbatch("alexnet", "_bench_on_wscap64", bench, capped)
        # 1. Which nets show the staircase; 5. the run-to-run spread: ResNet-50's sweep a second time,
        # for `batchscope compare` with the first.
        for m in JUMP_MODELS_OFF:
            sweep(f"{m}_bench_off", ["--model", m] + image, os.path.join(jumps, f"{m}_bench_off"))
        sweep("resnet50_bench_off_pass2", ["--model", "resnet50"] + image,
              os.path.join(jumps, "resnet50_bench_off_pass2"))
        # 5. What the multi-tensor optimizer step saves: ResNet-50 (161 parameter tensors) with the other
        # step than its first pass ran, for `batchscope compare`.
        contrast = "on" if loop else "off"
        sweep(f"resnet50_foreach_{contrast}", ["--model", "resnet50"] + image + ["--foreach", contrast],
              os.path.join(jumps, f"resnet50_foreach_{contrast}"))
        # 5. Each of VGG16's layers alone (peak --model): refinements of the measured peak, after every claim's
        # first answer (they took 35 s and 15 s on an H200 and are planned at more).
        for item_id, batch, precisions in (("peak_layers", "64", "fp32,tf32"), ("peak_layers_ieee", "32", "fp32")):
            # Smoke: the second at a batch the profiled sweep lacks, so that the first's file is the one read;
            # fewer runs under the profiler (a CPU's profiler sessions take a third of a second each).
            layers = (["--batch", "1,2,3,4,5,6" if item_id == "peak_layers" else "7", "--input", "3,64,64",
                       "--classes", "10", "--profiled-runs", "2" if item_id == "peak_layers" else "1"] + tiny
                      if smoke
                      else ["--batch", batch, "--precision", precisions, "--cudnn-benchmark", "off,on"])
            layers_alone(item_id, layers)
        # 1. What IEEE fp32, bf16, the PCIe copy and benchmark mode change (cuDNN's search costs about 5 s
        # a batch size: VGG16 first, the other nets last). The blog's GPUs had no TF32: with tf32 off,
        # cuDNN picks fp32 kernels, whose tiles differ from the TF32 ones LibTorch allows by default.
        sweep("vgg16_tf32_off", ["--model", "vgg16"] + image + ["--tf32", "off"],
              os.path.join(jumps, "vgg16_tf32_off"))
        # In IEEE fp32 VGG16's step rose by 46-95% after 16, 32 and 48 on an H200 (none with TF32): the
        # other nets in IEEE fp32 (does ResNet-50 or MobileNet show it?), and VGG16's profiled, so that
        # analyze puts the sawtooth on its kernels.
        for m in JUMP_MODELS_OFF:
            sweep(f"{m}_tf32_off", ["--model", m] + image + ["--tf32", "off"], os.path.join(jumps, f"{m}_tf32_off"))
        sweep("vgg16_tf32_off_profiled", profiled_vgg16 + ["--tf32", "off"],
              os.path.join(jumps, "vgg16_tf32_off_profiled"))
        bf16 = with_option(image, "--precision", "bf16")
        sweep("vgg16_bf16_channels_last", ["--model", "vgg16"] + bf16 + ["--channels-last"],
              os.path.join(jumps, "vgg16_bf16_channels_last"))
        sweep("vgg16_copy_included", ["--model", "vgg16"] + image + ["--transfer", "included"],
              os.path.join(jumps, "vgg16_copy_included"))
        # On an H200, 22% of VGG16's convolution time with TF32 (item 1's profile at batch 64) went to
        # cuDNN's conversions of NCHW tensors to and from the NHWC its TF32 kernels take: the same profiled
        # sweep channels-last, to measure what sparing them gives.
        sweep("vgg16_channels_last_profiled", profiled_vgg16 + ["--channels-last"],
              os.path.join(jumps, "vgg16_channels_last_profiled"))
        # Each layer alone on both sides of the IEEE fp32 sawtooth's first steps, with cuDNN's heuristics as
        # the sweep ran: does features.12's forward fall after 16 and 24 alone, as in the step (its kernel's
        # choice), or only in the step? The layer-rate plot draws them beside the profiled sweep's.
        # Smoke: two sizes that peak_layers, read after it, times again.
        layers_alone("peak_layers_staircase",
                     ["--batch", "1,2", "--input", "3,64,64", "--classes", "10", "--profiled-runs", "1"] + tiny
                     if smoke
                     else ["--batch", "16,17,24,25", "--precision", "fp32", "--cudnn-benchmark", "off"])
        bench_on(JUMP_MODELS_ON[0])
        # On an H200, VGG16's IEEE fp32 sawtooth was cuDNN's choice of kernel for features.12/14 forward:
        # FFT at multiples of 8 (1.7 ms at 16), a kernel 20 times slower just past them (37.6 ms at 17).
        # Does benchmark mode, which times the algorithms for each shape, take the sawtooth away?
        # The search costs seconds a batch size, so this sweep times the sawtooth's own sizes: 14-34 (the
        # rises after 16, 24 and 32, the fast 23-24 and 26) and each side of 48 and 64, 27 of the 70.
        sawtooth = ",".join(str(b) for b in list(range(14, 35)) + [47, 48, 49, 63, 64, 65])
        sweep("vgg16_tf32_off_bench_on",
              ["--model", "vgg16"] + (image if smoke else with_option(image, "--batch", sawtooth)) +
              ["--tf32", "off", "--cudnn-benchmark"],
              os.path.join(jumps, "vgg16_tf32_off_bench_on"))
        # 3. ResNet-18 under the search and the cap as AlexNet above: the claim's second net.
        microbatch("resnet18", "_bench_on", bench)
        microbatch("resnet18", "_bench_on_wscap64", bench, capped)
        # 5. train's epoch against the same epoch in PyTorch-in-Python on this GPU, each side a fresh
        # process a round (bench/train_loop_bench.py): at 64, where the H200's epochs took 1.95 ms a step
        # against the sweep's 1.04, and at 8, where a step is nearly all launches and the loop's own work.
        mnist_dir = self.a.data or os.path.join(os.environ.get("BATCHSCOPE_DATA", "data"), "mnist")
        for batch, limit in (("64", "0"), ("8", "16384")):
            path = os.path.join(r, "bench", f"train_loop_b{batch}.json")
            sides = (["--device", "cpu", "--threads", "1", "--rounds", "1", "--limit-train", "256"] if smoke
                     else ["--device", "cuda:0", "--rounds", "3", "--limit-train", limit])
            out.append({"id": f"train_loop_b{batch}", "kind": "bench", "program": self.a.python,
                        "argv": ["bench/train_loop_bench.py", "--bin", self.bin, "--data", mnist_dir,
                                 "--batch", batch, "--json", path] + sides,
                        "out": path, "resumable": False})
        # 5. A sweep's step against PyTorch-in-Python's on this GPU, both timed by CUDA events, a step at a
        # time (bench_overhead --device): the per-step overhead, small batches first, where the launches are.
        path = os.path.join(r, "bench", "overhead.json")
        cases = (["--models", "mnist_cnn", "--phases", "infer", "--threads", "1", "--batch", "1", "--rounds", "1",
                  "--turns", "1", "--turn-ms", "1", "--device", "cpu"] if smoke
                 else ["--models", "mnist_cnn,vgg16", "--phases", "train,infer", "--threads", "all",
                       "--batch", "1,16,128", "--rounds", "3", "--turns", "2", "--device", "cuda:0"])
        # Built beside batchscope (build-torch.sh --bench), run with the campaign's Python as its reference.
        out.append({"id": "bench_overhead", "kind": "bench",
                    "program": os.path.join(os.path.dirname(self.bin), "bench_overhead"),
                    "argv": cases + ["--confirm-rounds", "0", "--touch-gib", "0", "--python", self.a.python,
                                     "--json", path],
                    "out": path, "resumable": False})
        # 1. Benchmark mode on the other nets, which show no staircase without it (cuDNN's search costs
        # about 5 s a batch size, so at 29 sizes, and after the items above).
        for m in JUMP_MODELS_ON[1:]:
            bench_on(m)
        # The largest batches: what the tool finds, not a claim of the study, so last.
        # Past the largest batch that fits: VGG16 in fp32 ran one step of 1855 on an H200 but not three in a
        # row (see maxbatch below). chunk: auto times 1024 whole, and 2048 and 4096 in the largest even
        # micro-batches that run beside each (its search on the batch itself): what a batch larger than fits
        # costs per sample, and what the search costs on a GPU. Smoke: ResNet-18 under a CPU memory limit
        # that holds 4 whole and not 32.
        chunk_args = (["--model", "resnet18", "--input", "3,64,64", "--classes", "10", "--batch", "4,32",
                       "--warmup", "0", "--steps", "1", "--memory-limit", "130MiB"] if smoke
                      else ["--model", "vgg16"] + with_option(with_option(with_option(
                          image, "--batch", "1024:4096:x2"), "--warmup", "2"), "--steps", "5"))
        sweep("vgg16_chunk_auto", chunk_args + ["--chunk", "auto"], os.path.join(r, "chunk_auto", "vgg16"))
        maxbatch_models = ["resnet18"] if smoke else MAXBATCH_MODELS
        for m in maxbatch_models:
            for precision in ("fp32", "bf16"):
                path = os.path.join(r, "maxbatch", f"{m}_{precision}.jsonl")
                # Smoke: bf16 on a CPU without bf16 instructions is emulated (about 20 times fp32's time).
                extra = (["--input", "3,64,64", "--classes", "10", "--memory-limit", "256MiB",
                          "--upper", "64" if precision == "fp32" else "8", "--confirm", "1"] if smoke else [])
                argv = lambda out_path: (["maxbatch", "--model", m, "--precision", precision, "--quiet", "--json",
                                          "--out", out_path] + extra + dev[:2])
                out.append({"id": f"maxbatch_{m}_{precision}", "kind": "maxbatch", "argv": argv(path),
                            "out": path, "resumable": True})
                if m == maxbatch_models[0] and precision == "fp32":
                    # On an H200, VGG16 in fp32 ran 1855 samples for one step but not three: 65 GiB of the
                    # caching allocator's memory was reserved and free, in no block large enough. Does the
                    # allocator's expandable segments option, which maps memory in growing segments instead of
                    # fixed blocks, let more fit?
                    expandable = os.path.join(r, "maxbatch", f"{m}_{precision}_expandable_segments.jsonl")
                    out.append({"id": f"maxbatch_{m}_{precision}_expandable_segments", "kind": "maxbatch",
                                "argv": argv(expandable), "out": expandable,
                                "resumable": True, "env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}})
                    # The blog's V100 and T4 held 16 GiB: what fits of VGG16 in fp32 on a GPU of that size,
                    # under the caching allocator's cap (the CUDA context outside it). Smoke: half the CPU limit.
                    within_16gib = os.path.join(r, "maxbatch", f"{m}_{precision}_16GiB.jsonl")
                    limit_16gib = ["--memory-limit", "128MiB"] if smoke else ["--memory-limit", "16GiB"]
                    out.append({"id": f"maxbatch_{m}_{precision}_16GiB", "kind": "maxbatch",
                                "argv": with_option(argv(within_16gib), *limit_16gib), "out": within_16gib, "resumable": True})
        return out

    def make_plan(self, previous=None):
        """The plan: every item with its command and estimate, sweeps' step counts lowered to fit the
        target. With a previous plan (--replan), the items it started or finished keep their commands
        and estimates, so that a stopped sweep resumes with the same one; the rest are planned anew,
        in the order items() gives, and only they are fitted into the target."""
        device = self.device_name()
        rate = next((v for k, v in RATES.items() if k in device.lower()), FALLBACK_RATE)
        if self.a.smoke and not self.a.assume_gpu:
            rate = RATES["cpu"]
        kept = {it["id"]: it for it in (previous or {}).get("items", []) if self.started(it)}
        items = [kept.get(it["id"], it) for it in self.items()]
        items += [it for it in kept.values() if it not in items]  # an item that is no longer planned
        fresh = [it for it in items if it["id"] not in kept]
        for it in fresh:
            it["needs_data"] = it["id"] in ("mnist_train_vs_infer", "train_compare", "mnist_time_to_accuracy",
                                            "train_loop_b64", "train_loop_b8")
        # Each sweep's plan is a process of its own, most of it LibTorch's start: side by side, one a core.
        # A plan made again (a command changed, an item added, --replan) takes the plans of the commands
        # that did not change from the last one, made by the same batchscope on this machine.
        cache_path = os.path.join(self.state_dir, SWEEP_PLAN_CACHE)
        try:
            cached = load_json(cache_path, {})
        except ValueError:  # damaged: it is only a cache, made again below
            cached = {}
        if not isinstance(cached, dict):
            cached = {}
        identity = self.binary_identity()
        cache = dict(cached.get("plans", {})) if identity is not None and cached.get("binary") == identity else {}
        sweeps = [it for it in fresh if it["kind"] == "sweep"]
        asks = [(args, self.plan_key(args)) for args in (self.plan_args(it["argv"]) for it in sweeps)]
        taken = sum(key in cache for _, key in asks)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for it, plan in zip(sweeps, pool.map(lambda ask: self.sweep_plan(*ask, cache), asks)):
                it["plan"] = plan
        if sweeps:
            self.log(f"sweep plans: {taken} of {len(sweeps)} taken from the last plan's, {len(sweeps) - taken} asked for")
        save_json(cache_path, {"binary": identity, "plans": cache})
        # What is left of the kept items counts whole: a stopped sweep's remaining sizes are not known here.
        left_kept = sum(it["estimate_s"] for it in kept.values() if self.state.get(it["id"]) != "done")
        steps = None
        total = left_kept + sum(estimate(it, rate, None) for it in fresh)
        if total > self.a.target_s:
            # One step count for every sweep, the largest that fits; never below what analyze needs.
            for candidate in range(19, 4, -1):
                steps = candidate
                total = left_kept + sum(estimate(it, rate, steps) for it in fresh)
                if total <= self.a.target_s:
                    break
        for it in fresh:
            it["estimate_s"] = round(estimate(it, rate, steps), 1)
            if steps is not None and it["kind"] == "sweep" and timed_steps(it) > steps:
                it["argv"] = with_option(it["argv"], "--steps", str(steps))
                it["argv"] = with_option(it["argv"], "--warmup", str(min(3, warmup_steps(it))))
            it.pop("plan", None)
        plan = {"device": device, "rate_flops": rate, "target_s": self.a.target_s, "lowered_steps": steps,
                "estimate_s": round(total, 1), "items": items}
        if previous:
            plan["replanned_from"] = previous.get("made", "?")
            plan["kept"] = [it["id"] for it in items if it["id"] in kept]
        return plan

    def started(self, it):
        """Whether the item is done or wrote something: a plan made again keeps its command."""
        return self.state.get(it["id"]) == "done" or os.path.exists(it["out"])

    def device_name(self):
        if self.a.assume_gpu:
            return self.a.assume_gpu
        if self.a.smoke:
            return "cpu (smoke)"
        env = json.loads(run_capture([self.bin, "env", "--json"]))
        gpus = env.get("gpus") or []
        return gpus[0]["name"] if gpus else "no GPU"

    @staticmethod
    def plan_args(argv):
        """A sweep's command as its plan is asked for: without its output and --quiet."""
        args = [a for a in argv if a != "--quiet"]
        if "--out" in args:
            i = args.index("--out")
            del args[i:i + 2]
        return args

    @staticmethod
    def plan_key(args):
        # An experiment file named in the command is part of it: its text too.
        files = {a: hashlib.sha256(open(a, "rb").read()).hexdigest() for a in args if os.path.isfile(a)}
        return json.dumps([args, files], sort_keys=True)

    def sweep_plan(self, args, key, cache):
        if key not in cache:
            cache[key] = json.loads(run_capture([self.bin] + args + ["--plan"]))
        return cache[key]

    def binary_identity(self):
        """What a sweep's plan depends on besides its command: this machine and this build of batchscope."""
        path = shutil.which(self.bin) or self.bin
        try:
            st = os.stat(path)
        except OSError:
            return None  # no batchscope there: asking for a plan says so
        return [socket.gethostname(), os.path.realpath(path), st.st_size, st.st_mtime_ns]

    # ---- running -----------------------------------------------------------------------------------

    def run(self):
        plan_path = os.path.join(self.state_dir, "plan.json")
        previous = load_json(plan_path, None)
        if previous is not None:
            # A plan names its results' paths as they were where it was made; results moved or copied
            # elsewhere (brought back from a GPU host, analysed in a copy) are this directory's, not those.
            made_for = planned_results(previous)
            if made_for is not None and made_for != self.results:
                rebase(previous, made_for, self.results)
                if not self.a.plan_only and not self.a.analyze_only:
                    self.log(f"the plan was made for the results in {made_for}: its paths now point into {self.results}")
        # Items added to the campaign since the plan was made join it as --replan would add them, and an
        # item not started yet whose command changed since takes the new one (a sweep's step counts are
        # the plan's own, so they are left out of the comparison).
        # So does a new order of the items, which the runs follow.
        added, changed, reordered = [], [], False
        if previous is not None and not self.a.replan and not self.a.analyze_only:
            planned = {it["id"]: it for it in previous.get("items", [])}
            added = [it["id"] for it in self.items() if it["id"] not in planned]
            changed = [it["id"] for it in self.items()
                       if it["id"] in planned and not self.started(planned[it["id"]])
                       and compared_command(it) != compared_command(planned[it["id"]])]
            reordered = in_order(self.items(), previous.get("items", [])) != in_order(previous.get("items", []),
                                                                                      self.items())
        if added:
            self.log(f"the campaign has items the plan lacks ({', '.join(added)}): planning again")
        if reordered and not added and not changed:
            self.log("the campaign runs its items in another order than the plan's: planning again")
        if changed:
            self.log(f"the campaign's commands changed for items not started ({', '.join(changed)}): planning again")
            for item_id in changed:  # how long the old command ran says nothing of the new one's time
                if stopped_after(self.state.get(item_id)) is not None:
                    del self.state[item_id]
            self.save_state()
        if previous is not None and not self.a.replan and not added and not changed and not reordered:
            plan = previous
            self.log(f"following the plan in {plan_path} (made {plan.get('made', '?')})")
        else:
            plan = self.make_plan(previous)
            plan["made"] = time.strftime("%Y-%m-%d %H:%M:%S")
            plan["results"] = self.results
            save_json(plan_path, plan)
            if previous is not None:
                self.log(f"planned again: the plan made {plan['replanned_from']} started or finished "
                         f"{len(plan['kept'])} items, which keep their commands: {', '.join(plan['kept']) or 'none'}")
            self.log(f"plan for {plan['device']}: {len(plan['items'])} items, estimated {plan['estimate_s']:.0f} s "
                     f"for what is left at {plan['rate_flops'][0] / 1e12:.3g}/{plan['rate_flops'][1] / 1e12:.3g} TFLOP/s "
                     f"(fp32/half) against a target of {plan['target_s']:.0f} s")
            if plan["lowered_steps"] is not None:
                self.log(f"step counts lowered to {plan['lowered_steps']} timed steps per batch size in every sweep "
                         f"so that the campaign fits in about {plan['target_s']:.0f} s")
            if plan["estimate_s"] > plan["target_s"]:
                self.log(f"the estimate ({plan['estimate_s']:.0f} s) is still above {plan['target_s']:.0f} s: "
                         "the last items may be left for a later session")
        if self.a.analyze_only:
            # Results brought back from a GPU host: analyses and plots redrawn here, where gnuplot is.
            for it in plan["items"]:
                if it["kind"] == "sweep" and os.path.exists(os.path.join(it["out"], "steps.jsonl")):
                    self.analyze(it)
                    print(f"analysed {it['out']}")
                # A batch-size study's plot, drawn from the data and script it wrote beside its table.
                script = os.path.join(it["out"], "time_to_accuracy.gp")
                if it["kind"] == "train" and os.path.isfile(script):
                    try:
                        rc = subprocess.run(["gnuplot", "-d", "time_to_accuracy.gp"], cwd=it["out"]).returncode
                    except FileNotFoundError:
                        print(f"gnuplot is not installed: {script} is not drawn")
                        continue
                    print(f"drew {script}" if rc == 0 else f"gnuplot failed on {script} (exit {rc})")
            self.compare_pairs(plan["items"])
            return 0
        if self.a.plan_only:
            for i, it in enumerate(plan["items"], 1):
                print(f"({i:2}) {it['id']:28} {it['estimate_s']:7.0f} s  {self.state.get(it['id'], 'to do'):10}"
                      f"  {command_line(it, 'batchscope')}")
            print(f"estimated {plan['estimate_s']:.0f} s in all on {plan['device']}")
            return 0
        # The plan, the tests' log and env.json reach --copy-to and --archive before the first item, so a
        # run that ends in its first item still brings them back.
        self.copy_back()
        failed = []
        stopped = False
        for i, it in enumerate(plan["items"], 1):
            status = self.state.get(it["id"])
            if status == "done":
                continue
            if it["needs_data"] and not self.data_present():
                self.log(f"({i}) {it['id']}: skipped, the MNIST files are not in data/mnist "
                         "(scripts/get_datasets.sh --mnist-only, then carry data/mnist)")
                continue
            left = self.remaining() - self.a.reserve_s
            # A sweep keeps every batch size it finishes, so a few seconds are worth starting it for. A
            # command that cannot resume needs its estimate, or more than it ran before it was stopped.
            needed = 5
            if not resumes(it):
                needed = max(it["estimate_s"], stopped_after(status) or 0) * 1.3 + 10
            if left < needed:
                # It waits for a run with more time; the items after it that fit go first, so that one
                # long command cannot hold up the rest of the campaign run after run.
                self.log(f"({i}) {it['id']}: {left:.0f} s of the budget left, {needed:.0f} s needed to start it: "
                         "left for a run with more time; going on with the next items")
                continue
            self.log(f"({i}) {it['id']}: estimated {it['estimate_s']:.0f} s: {command_line(it, 'batchscope')}")
            with open(os.path.join(self.results, "commands.txt"), "a") as f:
                f.write(command_line(it, self.bin) + "\n")
            if not resumes(it):
                set_aside(it["out"])
            os.makedirs(os.path.dirname(it["out"]), exist_ok=True)
            t0 = time.monotonic()
            rc, interrupted = self.bounded(it)
            elsewhere = begun_elsewhere(self.item_log(it)) if rc == 2 and resumes(it) else ""
            if elsewhere:
                # Its batch sizes so far were measured on another machine (another LibTorch, cuDNN or
                # GPU), which batchscope refuses to add to: they are kept beside, and it starts again.
                self.log(f"({i}) {it['id']}: its earlier batch sizes were measured on another machine "
                         f"({elsewhere}): kept beside, started again here")
                set_aside(it["out"])
                rc, interrupted = self.bounded(it)
            seconds = time.monotonic() - t0
            missed = it["kind"] == "bench" and rc == 1 and os.path.isfile(it["out"])
            if rc == 0 or missed:
                # A benchmark that ran and missed its goal (exit 1, its result written) measured what it
                # came for.
                self.state[it["id"]] = "done"
                self.log(f"({i}) {it['id']}: done in {seconds:.0f} s (estimated {it['estimate_s']:.0f} s)"
                         + ("; its goal was missed" if rc == 1 else ""))
            elif interrupted:
                # Exit 130 after the first request; a second one (or SIGKILL) ends it by the signal.
                self.log(f"({i}) {it['id']}: stopped at the budget after {seconds:.0f} s"
                         + ("; the next run resumes it" if resumes(it) else
                            "; a later run starts it again, where the budget leaves it more than that"))
                if not resumes(it):
                    self.state[it["id"]] = f"stopped after {max(seconds, stopped_after(status) or 0):.0f} s"
                stopped = True
            else:
                self.state[it["id"]] = f"failed (exit {rc})"
                failed.append(it["id"])
                self.log(f"({i}) {it['id']}: FAILED with exit {rc} after {seconds:.0f} s; going on")
            self.save_state()
            if rc == 0 and it["kind"] == "sweep":
                compress_profile(it["out"])
            if it["kind"] == "sweep" and os.path.exists(os.path.join(it["out"], "steps.jsonl")):
                self.analyze(it)
            self.copy_back()
            if stopped:
                break
        left = [it["id"] for it in plan["items"] if self.state.get(it["id"]) != "done"]
        self.log(f"finished {len(plan['items']) - len(left)} of {len(plan['items'])} items"
                 + (f"; left: {', '.join(left)}" if left else ""))
        self.copy_back()
        if failed:
            return 1
        return 3 if left else 0

    def ran_loop_optimizer(self):
        """Whether a training sweep of these results ran on a GPU with LibTorch's loop step: run records
        written before the multi-tensor step existed, or with --foreach off, say no foreach."""
        for root, _, files in os.walk(self.results):
            # The contrast item runs the other step on purpose.
            if "steps.jsonl" not in files or os.path.basename(root).startswith("resnet50_foreach_"):
                continue
            try:
                with open(os.path.join(root, "steps.jsonl")) as f:
                    run = json.loads(f.readline())
            except (OSError, ValueError):
                continue
            for e in (run.get("config") or {}).get("experiments") or []:
                if (e.get("phase") == "train" and str(e.get("device", "")).startswith("cuda")
                        and not (e.get("optimizer") or {}).get("foreach")):
                    return True
        return False

    def data_present(self):
        if self.a.data:
            return os.path.isdir(self.a.data)
        root = os.environ.get("BATCHSCOPE_DATA", "data")
        return os.path.exists(os.path.join(root, "mnist", "train-images-idx3-ubyte")) or os.path.exists(
            os.path.join(root, "mnist", "train-images-idx3-ubyte.gz"))

    def item_log(self, it):
        return os.path.join(self.state_dir, it["id"] + ".log")

    def bounded(self, it):
        """Runs one item; stops it with SIGINT before the budget, again at once if it does not stop.
        Returns the exit code and whether it was stopped."""
        log_path = self.item_log(it)
        with open(log_path, "a") as log:
            p = subprocess.Popen([it.get("program", self.bin)] + it["argv"], stdout=log, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, **it.get("env", {})))
            soft = self.deadline - self.a.reserve_s
            interrupted = 0
            while True:
                try:
                    return p.wait(timeout=1), interrupted > 0
                except subprocess.TimeoutExpired:
                    pass
                now = time.monotonic()
                if interrupted == 0 and now >= soft:
                    self.log(f"{it['id']}: the budget is nearly spent: asking it to stop after this batch size")
                    p.send_signal(signal.SIGINT)
                    interrupted = 1
                elif interrupted == 1 and now >= soft + self.a.reserve_s / 2:
                    self.log(f"{it['id']}: still running: stopping it now")
                    p.send_signal(signal.SIGINT)
                    interrupted = 2
                elif interrupted == 2 and now >= soft + self.a.reserve_s / 2 + 5:
                    p.kill()
                    interrupted = 3

    def analyze(self, it):
        # Each sweep's TFLOP/s against the GPU's measured peaks, once the peak items have run.
        peak_args = []
        for name in PEAK_FILES.values():
            peak = os.path.join(self.results, name)
            if os.path.isfile(peak) and os.path.getsize(peak) > 0:
                peak_args += ["--peak", peak]
        rc = subprocess.run([self.bin, "analyze", it["out"], "--quiet"] + peak_args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
        if rc.returncode != 0:
            self.log(f"{it['id']}: analyze exit {rc.returncode}: {rc.stderr.strip().splitlines()[-1:]}")

    def compare_pairs(self, items):
        """The comparisons claim 5 reads: ResNet-50's second pass against its first (the run-to-run spread),
        and its other optimizer step against the first (what the multi-tensor step saves), each as
        `batchscope compare` prints it, into compare_<name>.txt beside the results."""
        out = {it["id"]: it["out"] for it in items}
        for name, base, contender in COMPARISONS:
            if base not in out or contender not in out:
                continue
            if not all(os.path.isfile(os.path.join(out[i], "steps.jsonl")) for i in (base, contender)):
                continue
            done = subprocess.run([self.bin, "compare", out[base], out[contender]], capture_output=True, text=True)
            if done.returncode not in (0, 1):  # 1: a size slower or lost, which the table says
                print(f"compare {base} {contender}: exit {done.returncode}: {done.stderr.strip()}")
                continue
            path = os.path.join(self.results, name)
            with open(path, "w") as f:
                f.write(done.stdout)
            print(f"compared {contender} with {base}: {path}")

    def kept_files(self):
        """The results' logs, records and reports: not pictures (plots are redrawn from their data), nor
        weights (a training run's checkpoints and resume states, megabytes each; checkpoint.json stays),
        nor the sweeps' plans kept for planning again on this machine."""
        for base, _, files in os.walk(self.results):
            for name in sorted(files):
                if not name.endswith((".png", ".svg", ".pt")) and name != SWEEP_PLAN_CACHE:
                    yield os.path.join(base, name)

    def copy_back(self):
        """The kept files to --copy-to as a tree, and to --archive as one gzipped tar, replaced whole."""
        top = os.path.basename(os.path.normpath(self.results))
        if self.a.copy_to:
            # A mirror: a file the results no longer hold under its name (a profile.jsonl compressed once
            # its sweep finished, a half-written result set aside) goes from the copy too.
            dest_root = os.path.join(self.a.copy_to, top)
            copied = set()
            for src in self.kept_files():
                dst = os.path.join(dest_root, os.path.relpath(src, self.results))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)
                copied.add(os.path.normpath(dst))
            for base, _, files in os.walk(dest_root):
                for name in files:
                    if os.path.normpath(os.path.join(base, name)) not in copied:
                        os.remove(os.path.join(base, name))
        if self.a.archive:
            # Written beside, then renamed: a command stopped mid-write leaves the last whole archive.
            tmp = self.a.archive + ".tmp"
            os.makedirs(os.path.dirname(os.path.abspath(tmp)), exist_ok=True)
            with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
                for src in self.kept_files():
                    tar.add(src, arcname=os.path.join(top, os.path.relpath(src, self.results)))
            os.replace(tmp, self.a.archive)


# Written by --analyze-only where both sweeps are there: (file, baseline item, contender item).
COMPARISONS = (("compare_resnet50_pass2.txt", "resnet50_bench_off", "resnet50_bench_off_pass2"),
               ("compare_resnet50_foreach_on.txt", "resnet50_bench_off", "resnet50_foreach_on"),
               ("compare_resnet50_foreach_off.txt", "resnet50_bench_off", "resnet50_foreach_off"))


def with_option(argv, name, value):
    """argv with `name value` replacing the option's value where it is given, else appended."""
    out = list(argv)
    if name in out:
        out[out.index(name) + 1] = value
    else:
        out += [name, value]
    return out


def step_count(e):
    """An experiment's timed steps; steps: auto counts its first block (more follow as it runs)."""
    return e["auto_steps"]["first_steps"] if e["steps"] == "auto" else e["steps"]


def timed_steps(it):
    return max([step_count(e) for e in it["plan"]["experiments"]] or [0])


def warmup_steps(it):
    return max([e["warmup"] for e in it["plan"]["experiments"]] or [0])


def estimate(it, rate, steps):
    """Seconds one item is expected to take, from its FLOPs per step at the assumed rate."""
    fp32, half = rate
    gpu = fp32 > 1e12
    # A step's launches take milliseconds whatever its FLOPs (on an H100, VGG16's batch-1 training step
    # took 5 ms, ResNet-50's 19 ms and MobileNetV2's 14 ms).
    floor = 0.012 if gpu else 0.002
    if it["kind"] == "sweep":
        # The shortest energy window (20 counter updates) where energy is measured; a GPU's counter
        # updates every 10 to 100 ms (an H200's 100 ms: windows of 2 s).
        window = 2.0 if gpu and "--no-energy" not in it["argv"] else 0.0
        total = 6.0  # CUDA's start, the model's build and the idle baseline
        for e in it["plan"]["experiments"]:
            r = half if e["precision"] in ("fp16", "bf16") else fp32
            if gpu and e.get("tf32") == "off":
                r *= IEEE_FP32_SHARE
            n_timed = min(step_count(e), steps) if steps else step_count(e)
            n_warm = min(e["warmup"], 3) if steps and step_count(e) > steps else e["warmup"]
            sizes = list(e["flops_per_step"])
            if e.get("batch_to_max"):
                # Sizes found at run time: assume the dataset's size (or 4096), after a search of ~25 tries.
                cap = 60000 if e["data"] != "synthetic" else 4096
                m = e["batch_to_max"]
                b, per_sample = m["from"], e["forward_flops_per_sample"] * (3 if e["phase"] == "train" else 1)
                while b < cap:
                    sizes.append(per_sample * b)
                    b = int(b * m["factor"]) if (m.get("factor") or 0) > 1 else b + max(1, m.get("step") or 1)
                sizes.append(per_sample * cap)
                total += 25 * max(per_sample * cap / r, floor)
            # Profiled steps (--profile): a few more steps per size, each a profiler session of its own
            # with its start, stop and event collection (VGG16 on an H100: about 0.06 s a step).
            n_profiled = (e.get("profile_steps") or 3) if (e.get("profile") or "--profile" in it["argv"]) else 0
            for flops in sizes:
                t = max(flops / r, floor)
                # chunk: auto, where the size does not fit whole: a try of the whole batch, then about eight
                # single steps of the search at three quarters of it and three in a row to confirm.
                if e.get("chunk") == "auto":
                    total += t + 8.25 * t
                # Per size beside its steps: the batch made and copied, memory released, records written
                # (on the H100 about 0.2 s).
                total += n_warm * t + max(n_timed * t, window) + 0.2 + (BENCHMARK_SEARCH_S[gpu] if e["cudnn_benchmark"] else 0)
                total += n_profiled * (2 * t + 0.06)
        return total
    # Not planned by FLOPs: four precisions' products, about 25 tries of the search, the layer costs at
    # every split, two epochs.
    if it["kind"] == "peak":
        # The convolution: four precisions, two phases and two layouts, each after cuDNN's search for its
        # algorithms.
        if "conv" in it["argv"]:
            return 60.0 if gpu else 3.0
        # A model's layers (VGG16's): per layer, batch, precision and layout 25 runs of each pass, with
        # cuDNN's heuristics and then after its search, and 5 more under the profiler, a session per layer for
        # both passes (about 0.06 s each, as a profiled step's: 58 a batch and precision, 3.5 s). About
        # 0.7 s a sample of the batch per precision, from the 150 s planned for batches 32 and 64 in two.
        if "--model" in it["argv"]:
            def listed(option, default):
                argv = it["argv"]
                return argv[argv.index(option) + 1].split(",") if option in argv else [default]
            samples = sum(int(b) for b in listed("--batch", "64") if b.isdigit())
            return 15.0 + 0.7 * samples * len(listed("--precision", "fp32")) if gpu else 20.0
        return 15.0 if gpu else 3.0
    if it["kind"] == "maxbatch":
        # On a 141 GiB GPU, VGG16 in fp32 grew to 2048 and bisected to 1855 in 22 tries and 38 s, and 1855
        # failed its confirmation; the search below it takes up to 18 more tries (to 1500, say), of three
        # steps each at about 8 s. Under a 16 GiB cap the answer is about a ninth of that, and so is each
        # try's step.
        if gpu and "--memory-limit" in it["argv"]:
            return 40.0
        return 180.0 if gpu else 20.0
    if it["id"] == "bench_overhead":
        # Per case (4) and round (3): two fresh processes (Python's torch and CUDA start, seconds), then per
        # batch size (the empty one and 3) a warm-up and 2 turns of 250 ms a side.
        return 200.0 if gpu else 15.0
    if it["kind"] == "bench":
        # Three rounds of two fresh processes each (LibTorch's and Python's start, MNIST read): one
        # epoch of 938 steps at 64 or 2048 at 8, about 2 ms a step on an H200.
        return 75.0 if gpu else 15.0
    if it["kind"] == "microbatch":
        # With benchmark mode cuDNN searches at every micro-batch size of every layer it times: about
        # 0.2 s a layer and size on an H200 (AlexNet's 1280 ran over 241 s), planned at the powerOfTwo
        # policy's 9 sizes (ResNet-18: 20 layers, 180 searches).
        if "--cudnn-benchmark" in it["argv"]:
            return 60.0 if gpu else 30.0
        return 90.0 if gpu else 30.0
    if "--target-accuracy" in it["argv"]:
        # Five batch sizes to 98%: the small ones in an epoch or two (938 steps an epoch at 64), the
        # large ones up to their 20 epochs of a few steps each.
        return 150.0 if gpu else 20.0
    return 90.0 if gpu else 20.0


def command_line(it, program):
    """The item's command as a shell would run it: its environment variables first. program: batchscope's,
    for the items that a program of their own (a benchmark's) does not run."""
    variables = [f"{name}={value}" for name, value in sorted(it.get("env", {}).items())]
    return " ".join(variables + [it.get("program", program)] + it["argv"])


def in_order(items, others):
    """The ids of items that others have too, in items' order."""
    ids = {it["id"] for it in others}
    return [it["id"] for it in items if it["id"] in ids]


def compared_command(it):
    """The item's command as the plan's changes are judged: a sweep's without its step counts, which the
    plan lowers to fit its time target."""
    argv = list(it["argv"])
    if it["kind"] == "sweep":
        for option in ("--steps", "--warmup"):
            while option in argv:
                i = argv.index(option)
                del argv[i:i + 2]
    return command_line(dict(it, argv=argv), "")


def planned_results(plan):
    """The results directory a plan was made for: its own record, or, for plans made before they kept
    one, the directory that every item's output lies under."""
    if "results" in plan:
        return plan["results"]
    outs = [os.path.normpath(it["out"]) for it in plan.get("items", [])]
    try:
        return os.path.commonpath(outs) if len(outs) > 1 else None
    except ValueError:  # absolute and relative paths mixed: no directory of them all
        return None


def rebase(plan, old, new):
    """Every path of the plan under the results directory old (outputs and the commands' arguments) moved
    under new."""
    def moved(value):
        if value == old:
            return new
        if isinstance(value, str) and value.startswith(old + os.sep):
            return new + value[len(old):]
        return value
    for it in plan.get("items", []):
        it["out"] = moved(os.path.normpath(it["out"]))
        it["argv"] = [moved(a) for a in it["argv"]]
    plan["results"] = new


def resumes(it):
    """Whether the item's command goes on from what it wrote: sweeps, the batch-size study, and maxbatch
    with --out and microbatch, which plans made before they could resume still mark as not resumable."""
    return it["resumable"] or it["kind"] in ("maxbatch", "microbatch")


def stopped_after(status):
    """The seconds a command that cannot resume ran before the budget stopped it, from its state
    ("stopped after 241 s", the longest of its runs), or None."""
    match = re.fullmatch(r"stopped after (\d+) s", status or "")
    return float(match.group(1)) if match else None


def begun_elsewhere(log_path):
    """The refusal an item's last run ended with where it was a sweep begun on another machine ("...
    was begun with LibTorch 2.6.0, and this session has 2.11.0"), else ""."""
    try:
        with open(log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            lines = [l for l in f.read().decode("utf-8", "replace").splitlines() if l.strip()]
    except OSError:
        return ""
    last = lines[-1] if lines else ""
    found = re.search(r"steps\.jsonl:1: (was begun (?:with|on) [^;]*)", last)
    return found.group(1) if found else ""


def set_aside(path):
    """A half-written result of a command that cannot resume is kept beside, never overwritten."""
    if os.path.exists(path):
        aside = f"{path}.interrupted-{time.strftime('%Y%m%d-%H%M%S')}"
        os.rename(path, aside)


def compress_profile(out):
    """A finished sweep's profile.jsonl (megabytes of kernel tables) kept as profile.jsonl.gz, which analyze
    reads as it reads the plain file; appended as one more gzip member where an earlier one is there."""
    plain = os.path.join(out, "profile.jsonl")
    if not os.path.isfile(plain):
        return
    with open(plain, "rb") as src, gzip.open(plain + ".gz", "ab", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(plain)


def run_capture(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"campaign: {' '.join(argv)} failed (exit {p.returncode}): {p.stderr.strip()}")
    return p.stdout


def load_json(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def save_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--results", required=True, help="where the results go (results/<gpu-name>)")
    p.add_argument("--copy-to", help="a directory that receives logs, records and reports after every item")
    p.add_argument("--archive", help="a .tar.gz file made again of the same after every item (one file to fetch)")
    p.add_argument("--budget-s", type=float, default=540, help="stop cleanly before this many seconds")
    p.add_argument("--reserve-s", type=float, default=30, help="kept back for stopping, analysing and copying")
    p.add_argument("--target-s", type=float, default=1500, help="lower step counts so the whole fits in this")
    p.add_argument("--data", help="a directory of MNIST's IDX files (default data/mnist)")
    p.add_argument("--python", default=os.environ.get("PYTHON", "python3"),
                   help="the Python with PyTorch that the benchmark items run (default: $PYTHON, else python3)")
    p.add_argument("--smoke", action="store_true", help="the same items on the CPU with tiny shapes")
    p.add_argument("--replan", action="store_true", help="make the plan again instead of following it")
    p.add_argument("--analyze-only", action="store_true", help="analyse every sweep of the plan again (plots)")
    p.add_argument("--plan-only", action="store_true", help="make (or read) the plan, print it and run nothing")
    p.add_argument("--assume-gpu", help="plan for this GPU name (e.g. 'NVIDIA H100 80GB HBM3') instead of the one here")
    a = p.parse_args()
    if re.search(r"\s", a.results):
        print("campaign: the results directory must not contain spaces", file=sys.stderr)
        return 2
    return Campaign(a).run()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The reader left early (--plan-only | head): no traceback, and the exit status a shell gives a
        # program its pipe's reader left (128 + SIGPIPE), so that a run cut short this way is not taken
        # for one that finished. Python's own flush at exit goes to nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
