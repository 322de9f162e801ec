#include "app/commands.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "app/command_line.h"
#include "lib/sweep/batch_maximum.h"
#include "lib/config/config.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/environment.h"
#include "lib/common/errors.h"
#include "lib/device/gpu.h"
#include "lib/power/device_power.h"
#include "lib/records/summary_table.h"
#include "lib/sweep/sweep_plan.h"
#include "lib/sweep/sweep_runner.h"
#include "models/registry.h"

namespace batchscope::app {
namespace {

std::atomic<bool> stop_requested{false};

// The first Ctrl-C (or SIGTERM) lets the running batch size finish and be written; a second one stops
// at once, and the sweep then resumes from the last batch size written.
extern "C" void request_stop(int signal_number) {
  static const char message[] = "\nbatchscope: stopping after this batch size (Ctrl-C again to stop now)\n";
  stop_requested.store(true);
  const ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  std::signal(signal_number, SIG_DFL);
}

enum class ListingFormat { kText, kJson, kHelpShown };

// The options of the commands that only print something: --json and --help.
ListingFormat parse_listing_options(const std::string& name, const std::string& description,
                                    const std::vector<std::string>& args) {
  cxxopts::Options options(name, description);
  options.add_options()("json", "print JSON")("h,help", "this help");
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help();
    return ListingFormat::kHelpShown;
  }
  return result.count("json") ? ListingFormat::kJson : ListingFormat::kText;
}

// Every experiment option: a sweep's command line can describe a whole experiment.
const std::vector<ExperimentOption> kSweepOptions = {
    ExperimentOption::Model,     ExperimentOption::Batch,        ExperimentOption::Device,
    ExperimentOption::Steps,     ExperimentOption::Warmup,       ExperimentOption::Phase,
    ExperimentOption::Precision, ExperimentOption::Optimizer,    ExperimentOption::Lr,
    ExperimentOption::Input,     ExperimentOption::SeqLen,       ExperimentOption::Classes,
    ExperimentOption::Data,      ExperimentOption::Transfer,     ExperimentOption::Chunk,
    ExperimentOption::Order,     ExperimentOption::Seed,         ExperimentOption::ChannelsLast,
    ExperimentOption::CudnnBenchmark};

}  // namespace

std::string usage() {
  return "batchscope " BATCHSCOPE_VERSION
         " - what a batch size really costs: per-step timed training and inference sweeps\n\n"
         "usage: batchscope COMMAND [options]\n\n"
         "commands:\n"
         "  sweep [CONFIG.yaml] [options]  time training (or inference) steps over batch sizes, with their "
         "energy\n"
         "  analyze LOG... [options]       find the trend, jumps and periods in sweep logs; report and "
         "plots\n"
         "  maxbatch --model M [options]   the largest batch size that runs a full step on a device\n"
         "  train [options]                train a model on MNIST or Fashion-MNIST to an accuracy, with "
         "checkpoints\n"
         "  eval --checkpoint DIR          evaluate a checkpoint on the test split\n"
         "  microbatch --model M --batch B plan micro-batch splits of each convolution (µ-cuDNN) and measure "
         "them\n"
         "  models [--json]                list the model zoo: parameters (against the references), default "
         "input, GFLOPs per sample\n"
         "  env [--json]                   print the environment a run record holds, and how energy is "
         "measured\n\n"
         "batchscope COMMAND --help describes a command's options.\n";
}

int run_sweep_command(const std::vector<std::string>& args) {
  cxxopts::Options options(
      "batchscope sweep",
      "Time every step of a training (or inference) loop at each batch size.\n"
      "Reads the experiments of CONFIG.yaml; the options below replace its values in every "
      "experiment, or describe a single experiment when no file is given.");
  options.positional_help("[CONFIG.yaml]");
  // clang-format off
  options.add_options()
      ("config", "YAML experiment file", cxxopts::value<std::string>());
  add_experiment_options(options, kSweepOptions);
  options.add_options()
      ("threads", "CPU threads for LibTorch (default: LibTorch's own choice)", cxxopts::value<std::string>())
      ("memory-limit", "CPU: LibTorch memory allowed, e.g. 8GiB; more is out of memory", cxxopts::value<std::string>())
      ("no-energy", "do not measure energy (NVML on a GPU, RAPL on the CPU)")
      ("idle-seconds", "seconds of idle power measured before the sweep, 0 for none", cxxopts::value<std::string>()->default_value("2"))
      ("energy-window", "shortest energy window in ms; shorter batch sizes run more untimed steps in it (default: 20 updates of the counter, at least 100)", cxxopts::value<std::string>())
      ("o,out", "output directory (default runs/<config or model name>)", cxxopts::value<std::string>())
      ("force", "replace a complete run, or a different one, in the output directory")
      ("q,quiet", "no progress line")
      ("plan", "print what would run, as JSON (each experiment with its batch sizes and FLOPs per step); runs and writes nothing")
      ("h,help", "this help");
  // clang-format on
  options.parse_positional({"config"});
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help()
              << "\nExample: batchscope sweep --model vgg16 --batch 1:70 --device cuda:0 "
                 "--steps 20 --warmup 5 --out runs/vgg16\n";
    return 0;
  }

  SweepOverrides o;
  read_experiment_options(result, kSweepOptions, o);

  apply_threads_option(result);

  const bool from_file = result.count("config") > 0;
  const SweepConfig parsed =
      from_file ? load_sweep_config(result["config"].as<std::string>(), o) : sweep_from_overrides(o);
  if (result.count("plan")) {
    std::cout << sweep_plan(parsed).dump(2) << "\n";
    return 0;
  }
  if (result.count("memory-limit")) {
    // On the CPU, where nothing else stops an allocation: a batch size that needs more is out of memory.
    cpu_memory::install();
    cpu_memory::set_limit(parse_memory_limit(result["memory-limit"].as<std::string>()));
  }
  const SweepConfig machine = resolve_for_machine(parsed);

  SweepOptions sweep;
  sweep.out_dir = result.count("out") ? result["out"].as<std::string>()
                  : from_file
                      ? "runs/" + std::filesystem::path(result["config"].as<std::string>()).stem().string()
                      : "runs/" + machine.experiments.front().model;
  const SweepConfig config = resolve_batch_maximum(machine, sweep.out_dir);
  sweep.force = result.count("force") > 0;
  sweep.show_progress = !result.count("quiet") && isatty(STDERR_FILENO);
  if (result.count("quiet")) spdlog::set_level(spdlog::level::warn);
  sweep.command_line = command_text("sweep", args);
  sweep.measure_energy = result.count("no-energy") == 0;
  sweep.idle_seconds = real_option(result, "idle-seconds", 0, 600);
  if (result.count("energy-window"))
    sweep.min_energy_window_ms = real_option(result, "energy-window", 0, 3.6e6, /*least_excluded=*/true);

  sweep.stop_requested = &stop_requested;
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  const SweepOutcome outcome = run_sweep(config, sweep, std::cerr);
  if (outcome.interrupted) {
    spdlog::warn("stopped before the end; the finished batch sizes are in {}: run the same command to resume",
                 outcome.jsonl_path);
    return 130;
  }
  std::cout << format_summary_table(outcome.records) << "\n"
            << (outcome.resumed ? "resumed and completed: " : "written: ") << outcome.jsonl_path << ", "
            << outcome.csv_path << "\n";
  return 0;
}

int run_models_command(const std::vector<std::string>& args) {
  const ListingFormat format = parse_listing_options(
      "batchscope models", "List the model zoo: parameters, default input, GFLOPs per sample.", args);
  if (format == ListingFormat::kHelpShown) return 0;
  nlohmann::json list = nlohmann::json::array();
  for (const models::ModelSpec& spec : models::all_models()) {
    const auto model = spec.build(spec.default_input, spec.default_classes);
    list.push_back(
        {{"name", spec.name},
         {"summary", spec.summary},
         {"parameters", models::count_parameters(*model)},
         {"default_input", spec.default_input},
         {"classes", spec.default_classes},
         {"gflops_per_sample", spec.forward_flops(spec.default_input, spec.default_classes) / 1e9},
         {"input_layout", spec.input_layout},
         {"reference_parameters", spec.reference_parameters > 0 ? nlohmann::json(spec.reference_parameters)
                                                                : nlohmann::json(nullptr)},
         {"reference", spec.reference}});
  }
  if (format == ListingFormat::kJson) {
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  std::printf("%-16s %14s %-14s %8s %14s  %s\n", "model", "parameters", "input", "classes", "GFLOPs/sample",
              "summary");
  for (const auto& m : list) {
    std::string shape;
    for (const auto& d : m["default_input"])
      shape += (shape.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
    std::printf("%-16s %14lld %-14s %8lld %14.4f  %s\n", m["name"].get<std::string>().c_str(),
                static_cast<long long>(m["parameters"].get<int64_t>()), shape.c_str(),
                static_cast<long long>(m["classes"].get<int64_t>()), m["gflops_per_sample"].get<double>(),
                m["summary"].get<std::string>().c_str());
  }
  std::printf("\nInput shapes are one sample without the batch dimension:\n");
  for (const auto& m : list) {
    std::printf("  %-16s %s\n", m["name"].get<std::string>().c_str(),
                m["input_layout"].get<std::string>().c_str());
  }
  std::printf("\nParameter counts against the reference implementations:\n");
  for (const auto& m : list) {
    if (m["reference_parameters"].is_null()) continue;
    const auto ours = m["parameters"].get<int64_t>();
    const auto reference = m["reference_parameters"].get<int64_t>();
    std::printf("  %-16s %14lld vs %14lld  %s  %s\n", m["name"].get<std::string>().c_str(),
                static_cast<long long>(ours), static_cast<long long>(reference),
                ours == reference ? "same" : "DIFFERENT", m["reference"].get<std::string>().c_str());
  }
  return 0;
}

int run_env_command(const std::vector<std::string>& args) {
  const ListingFormat format = parse_listing_options(
      "batchscope env",
      "Print the environment that a run record holds, and per device how energy is measured "
      "(or why it cannot be).",
      args);
  if (format == ListingFormat::kHelpShown) return 0;
  nlohmann::json env = collect_environment();
  // Which devices can report energy, and how: the same sources a sweep opens.
  nlohmann::json power = nlohmann::json::object();
  std::vector<std::string> devices{"cpu"};
  for (int i = 0; i < gpu::device_count(); ++i) devices.push_back("cuda:" + std::to_string(i));
  for (const std::string& device : devices) {
    std::string reason;
    const auto source = power::open_power_source(torch::Device(device), reason);
    power[device] = power::describe_power(source.get(), reason);
  }
  if (format == ListingFormat::kJson) {
    env["power"] = power;
    std::cout << env.dump(2) << "\n";
    return 0;
  }
  std::cout << format_environment(env);
  for (const auto& [device, p] : power.items()) {
    std::cout << "energy " << device << ": "
              << (p["available"].get<bool>()
                      ? p["method"].get<std::string>() + " (" + p["scope"].get<std::string>() + ")"
                      : "unavailable: " + p["reason"].get<std::string>())
              << "\n";
  }
  return 0;
}

}  // namespace batchscope::app
