#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/config/config.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/environment.h"
#include "lib/microbatch/microbatch.h"
#include "lib/records/jsonl.h"
#include "lib/records/microbatch_records.h"
#include "lib/records/records.h"
#include "lib/sweep/sweep_runner.h"
#include "models/registry.h"

namespace batchscope::app {
namespace {

// What describes the model, shape and train step being micro-batched; the batch, steps and warm-up
// are its own.
const std::vector<ExperimentOption> kMicrobatchOptions = {
    ExperimentOption::Model,     ExperimentOption::Input,          ExperimentOption::Classes,
    ExperimentOption::SeqLen,    ExperimentOption::InputKind,      ExperimentOption::Vocab,
    ExperimentOption::Device,    ExperimentOption::Precision,      ExperimentOption::Optimizer,
    ExperimentOption::CudnnBenchmark,                              ExperimentOption::Tf32,
    ExperimentOption::LossScale, ExperimentOption::LossScaleInit,  ExperimentOption::LossScaleGrowthInterval,
    ExperimentOption::Foreach,   ExperimentOption::ChannelsLast};

std::vector<MicroBatchPolicy> policies_from(const std::string& text) {
  if (text == "every")
    return {MicroBatchPolicy::Undivided, MicroBatchPolicy::PowerOfTwo, MicroBatchPolicy::All};
  const auto policy = policy_from_string(text);
  if (!policy) refuse("unknown --policy " + text, "use undivided, powerOfTwo, all or every");
  return {*policy};
}

int positive(const cxxopts::ParseResult& result, const std::string& name, int least) {
  return static_cast<int>(whole_option(result, name, least, limits::kMaxSteps));
}

// The experiment the options describe, resolved for this machine through the sweep's own checks.
ExperimentConfig experiment_from(const cxxopts::ParseResult& result, const MicroBatchOptions& o) {
  model_option(result);
  SweepOverrides s;
  read_experiment_options(result, kMicrobatchOptions, s);
  s.batch = std::to_string(o.batch);
  s.phase = "train";
  s.warmup_steps = o.warmup;
  s.timed_steps = o.steps;
  s.cudnn_benchmark = s.cudnn_benchmark.value_or(false);
  return resolve_for_machine(sweep_from_overrides(s)).experiments.front();
}

Json run_record(const ExperimentConfig& e, const MicroBatchOptions& o, const std::string& command) {
  Json policies = Json::array();
  for (MicroBatchPolicy p : o.policies) policies.push_back(to_string(p));
  Json config = Json(to_json(e));
  config["batch"] = o.batch;
  config["policies"] = policies;
  config["mode"] = to_string(o.mode);
  config["device"] = e.device;
  config["cudnn_benchmark"] = e.cudnn_benchmark;
  config["warmup"] = o.warmup;
  config["steps"] = o.steps;
  config["repeats"] = o.repeats;
  Json run = context_record(record::kRun, command, config);
  run["workspace_limit_note"] = kWorkspaceLimitNote;
  const auto cap = cudnn_workspace_cap_env();
  run["cudnn_conv_wscap_dbg"] = cap ? Json(*cap) : Json(nullptr);
  if (e.precision != Precision::FP32) {
    run["precision_note"] = "costs and steps run under " + to_string(e.precision) +
                            " autocast; gradient differences are computed in fp32";
  }
  return run;
}

// The costs that a stopped run of this same study kept in `path` (none where there is no file). A file
// of another study, or a damaged one, is refused, naming its line.
std::vector<LayerCost> stopped_costs(const std::string& path, const Json& run) {
  if (!std::filesystem::exists(path)) return {};
  const JsonlContents contents = read_jsonl(path);  // a half-written last line is left out
  if (contents.records.empty()) return {};
  const auto refuse_at = [&](int line, const std::string& what, const std::string& fix) {
    throw UserError(located(path, line, what, fix));
  };
  const std::string restart = "pass --force to start the study again, or --out another directory";
  if (contents.records.front().value("type", "") != record::kRun) {
    refuse_at(contents.record_lines.front(), "does not begin with a run record", restart);
  }
  // The study's settings: its config, and the workspace cap the environment set.
  const auto settings = [](const Json& r) {
    Json s = without_file_arguments(r.value("config", Json::object()));
    s["cudnn_conv_wscap_dbg"] = r.value("cudnn_conv_wscap_dbg", Json());
    return s;
  };
  const std::string different = first_key_difference(settings(contents.records.front()), settings(run));
  if (!different.empty()) {
    refuse_at(contents.record_lines.front(), "holds a stopped study of other settings (" + different + ")", restart);
  }
  std::vector<LayerCost> costs;
  for (std::size_t i = 1; i < contents.records.size(); ++i) {
    if (contents.records[i].value("type", "") != record::kLayerCost) continue;
    try {
      costs.push_back(layer_cost_from_json(contents.records[i]));
    } catch (const BadRecord& bad) {
      refuse_at(contents.record_lines[i], std::string("has a layer_cost record that ") + bad.what(), restart);
    }
  }
  return costs;
}

// The options of batchscope microbatch: the experiment's, then the study's own.
cxxopts::Options microbatch_options() {
  cxxopts::Options options(
      "batchscope microbatch",
      "Plan and measure micro-batching (mu-cuDNN, Oyama et al. 2018) for one mini-batch of a model's\n"
      "training step. layer mode: time every convolution alone at each micro-batch size the policies\n"
      "allow, plan each layer's split by dynamic programming, then measure whole train steps undivided\n"
      "and with every convolution split. model mode: gradient accumulation over micro-batches of the\n"
      "whole model, planned from forward+backward times per size. Predictions and measurements are\n"
      "both reported, including where splitting does not help. Costs and steps run as the step trains:\n"
      "in --precision (autocast), with --loss-scale, --optimizer, --foreach and --channels-last; --tf32 as "
      "a\n"
      "sweep sets it.\n"
      "LibTorch's C++ API has no cuDNN workspace limit, mu-cuDNN's central parameter; where PyTorch's\n"
      "cuDNN v8 path reads CUDNN_CONV_WSCAP_DBG, its value is recorded when set.");
  add_experiment_options(options, kMicrobatchOptions);
  // clang-format off
  options.add_options()
      ("b,batch", "the mini-batch to split", cxxopts::value<std::string>())
      ("policy", "undivided, powerOfTwo, all, or every (all three)", cxxopts::value<std::string>()->default_value("every"))
      ("mode", "layer (per-convolution splits) or model (gradient accumulation)", cxxopts::value<std::string>()->default_value("layer"))
      ("steps", "timed train steps per configuration", cxxopts::value<std::string>()->default_value("10"))
      ("warmup", "untimed runs before each measurement", cxxopts::value<std::string>()->default_value("3"))
      ("repeats", "timed runs per cost (layer or size)", cxxopts::value<std::string>()->default_value("5"))
      ("threads", threads_help("CPU threads for LibTorch"), cxxopts::value<std::string>())
      ("o,out", "output directory (default runs/microbatch-MODEL)", cxxopts::value<std::string>())
      ("force", "replace a complete result in the output directory")
      ("q,quiet", "no progress lines")
      ("h,help", "this help");
  // clang-format on
  return options;
}

// How the study splits and measures, from the command line.
MicroBatchOptions study_options(const cxxopts::ParseResult& result) {
  if (!result.count("batch")) refuse("no mini-batch given", "pass --batch B, e.g. --batch 64");
  MicroBatchOptions o;
  o.batch = whole_option(result, "batch", 1, limits::kMaxBatchSize);
  o.policies = policies_from(result["policy"].as<std::string>());
  const std::string mode = result["mode"].as<std::string>();
  if (mode != "layer" && mode != "model") refuse("unknown --mode " + mode, "use layer or model");
  o.mode = mode == "layer" ? MicroBatchMode::Layer : MicroBatchMode::Model;
  o.steps = positive(result, "steps", 1);
  o.warmup = positive(result, "warmup", 0);
  o.repeats = positive(result, "repeats", 1);
  return o;
}

}  // namespace

int run_microbatch_command(const std::vector<std::string>& args) {
  cxxopts::Options options = microbatch_options();
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help()
              << "\nWrites DIR/microbatch.jsonl (run, layer_cost, layer_cost_skipped, layer_plan, "
                 "microbatch_result, end) and "
                 "DIR/report.md. Each cost is written to DIR/microbatch.jsonl as it is measured: a study\n"
                 "stopped (Ctrl-C) goes on from there when the same command runs again.\n"
                 "Exit codes: 0 done, 2 bad input, 130 stopped (run the same command again to go on).\n"
                 "Example: batchscope microbatch --model alexnet --input 3,64,64 --batch 16 --device cpu\n";
    return 0;
  }
  if (result.count("quiet")) spdlog::set_level(spdlog::level::warn);
  MicroBatchOptions o = study_options(result);
  apply_threads_option(result);

  const ExperimentConfig e = experiment_from(result, o);
  at::globalContext().setBenchmarkCuDNN(e.cudnn_benchmark);
  set_tf32(e.tf32 == Tf32::Default ? std::nullopt : std::optional<bool>(e.tf32 == Tf32::On));
  const std::string dir =
      result.count("out") ? result["out"].as<std::string>() : "runs/microbatch-" + models::model_stem(e.model);
  if (has_complete_microbatch_result(dir) && !result.count("force")) {
    throw UserError(located(dir + "/microbatch.jsonl", 0, "already holds a complete result",
                            "pass --force to replace it, or --out another directory"));
  }
  {
    // The study writes its report.md there: one with no study's file beside it is someone else's.
    std::error_code ec;
    const std::filesystem::path report = std::filesystem::path(dir) / "report.md";
    const std::filesystem::path study = std::filesystem::path(dir) / "microbatch.jsonl";
    if (!result.count("force") && std::filesystem::exists(report, ec) &&
        (!std::filesystem::exists(study, ec) || std::filesystem::file_size(study, ec) == 0)) {
      throw UserError(located(report.string(), 0,
                              "is in the output directory with no microbatch.jsonl beside it, and the study "
                              "would write over it",
                              "choose another --out directory, or pass --force to replace it"));
    }
  }
  if (torch::Device(e.device).is_cpu()) cpu_memory::install();  // so that CPU peaks are reported

  const std::string command = command_text("microbatch", args);
  Json run = run_record(e, o, command);
  // The costs go to the study's file as they are measured, so that a stopped study keeps them.
  const std::string path = (std::filesystem::path(dir) / "microbatch.jsonl").string();
  o.keeping.known = result.count("force") ? std::vector<LayerCost>{} : stopped_costs(path, run);
  if (!o.keeping.known.empty()) {
    run["resumed_costs"] = o.keeping.known.size();
    spdlog::info("{} costs measured by a stopped run of this study are taken from {}", o.keeping.known.size(), path);
  }
  std::filesystem::create_directories(dir);
  std::string kept = jsonl_line(run);
  for (const LayerCost& c : o.keeping.known) kept += jsonl_line(to_json(c));
  replace_file(path, kept);
  JsonlWriter costs(path);
  o.keeping.on_cost = [&costs](const LayerCost& c) {
    costs.add(to_json(c));
    costs.flush();
  };
  stop_on_signals("this cost");
  o.keeping.stop_requested = [] { return stop_requested().load(); };

  spdlog::info("micro-batching {} at batch {} on {} ({} mode)", e.model, o.batch, e.device, to_string(o.mode));
  MicroBatchStudy study;
  try {
    study = run_microbatch_study(e, o);
  } catch (const std::invalid_argument& bad) {
    refuse(bad.what(), "check --batch, --policy and --mode");
  } catch (const MicroBatchStopped& stopped) {
    std::cerr << "batchscope: micro-batching " << stopped.what() << "; they are in " << path
              << ": run the same command again to go on\n";
    return 130;
  }
  for (const std::string& s : study.costs.skipped) spdlog::warn("skipped {}", s);
  write_microbatch_files(dir, run, study);
  std::cout << study_summary(study);
  spdlog::info("wrote {}/microbatch.jsonl and {}/report.md", dir, dir);
  return 0;
}

}  // namespace batchscope::app
