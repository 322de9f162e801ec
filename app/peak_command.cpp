#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/common/errors.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/gpu.h"
#include "lib/records/records.h"
#include "lib/sweep/max_batch.h"
#include "lib/timing/peak_rate.h"
#include "lib/timing/step_runner.h"
#include "lib/training/training.h"

// batchscope peak: the device's dense matrix-product rate, the peak a sweep's TFLOP/s is read against.

namespace batchscope::app {
namespace {

std::vector<std::string> precision_option(const cxxopts::ParseResult& result, const torch::Device& device) {
  if (!result.count("precision")) return default_peak_precisions(device);
  std::vector<std::string> chosen;
  std::stringstream list(result["precision"].as<std::string>());
  for (std::string name; std::getline(list, name, ',');) {
    if (std::find(kPeakPrecisions.begin(), kPeakPrecisions.end(), name) == kPeakPrecisions.end())
      refuse("--precision: '" + printable(name) + "' is not a precision peak measures",
             "give a comma-separated list of fp32, tf32, bf16 and fp16, e.g. --precision fp32,bf16");
    if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
  }
  if (chosen.empty()) refuse("--precision is empty", "give one or more of fp32, tf32, bf16 and fp16");
  return chosen;
}

// Three n×n matrices of the widest type must fit: on the CPU within 90% of the memory available now.
void check_size_fits(int64_t size, const torch::Device& device) {
  if (!device.is_cpu()) return;
  const auto n = static_cast<double>(size);
  const double needed = 3 * n * n * 4;
  const std::optional<int64_t> limit = default_cpu_memory_limit();
  if (limit && needed > static_cast<double>(*limit)) {
    refuse("--size " + std::to_string(size) + " needs " + format_memory_size(static_cast<int64_t>(needed)) +
               " for its three matrices, more than the " + format_memory_size(*limit) +
               " this machine has free",
           "give a smaller --size");
  }
}

std::string device_description(const std::string& device) {
  if (device == "cpu") return "cpu";
  const int index = torch::Device(device).index();
  return device + " (" + gpu::device_info(index).value("name", std::string("GPU")) + ")";
}

void print_table(const std::string& device, const PeakOptions& o, const std::vector<PeakRate>& rates) {
  std::string timer;
  for (const PeakRate& r : rates)
    if (!r.timer.empty()) timer = r.timer;
  std::printf(
      "peak matrix-product rate on %s: C = A·B with %lldx%lld matrices, %d warm-up and %d timed products "
      "per precision%s\n",
      device_description(device).c_str(), static_cast<long long>(o.size), static_cast<long long>(o.size),
      o.warmup, o.steps, timer.empty() ? "" : (", timed with " + timer).c_str());
  std::printf("%-10s %15s %18s %12s\n", "precision", "median TFLOP/s", "p10-p90 TFLOP/s", "median ms");
  for (const PeakRate& r : rates) {
    if (!r.skipped.empty()) {
      std::printf("%-10s not measured: %s\n", r.precision.c_str(), r.skipped.c_str());
      continue;
    }
    char range[64];
    std::snprintf(range, sizeof range, "%.4g-%.4g", r.low_tflops, r.high_tflops);
    std::printf("%-10s %15.4g %18s %12.4g\n", r.precision.c_str(), r.median_tflops, range, r.median_ms);
  }
}

}  // namespace

int run_peak_command(const std::vector<std::string>& args) {
  cxxopts::Options options(
      "batchscope peak",
      "Measure the device's dense matrix-product rate, the peak that a sweep's TFLOP/s is read against:\n"
      "C = A·B with square matrices (2n³ FLOPs), each product timed on its own (CUDA events on a GPU)\n"
      "after warm-up, the median and p10-p90 reported per precision. fp32 is IEEE fp32 (TF32 refused);\n"
      "tf32 is fp32 with TF32 allowed in cuBLAS, the tensor-core rate that cuDNN's fp32 convolutions may\n"
      "use (LibTorch's default; a sweep's run record says which, under tf32); bf16 and fp16 are tensors of\n"
      "that type. A GPU gets all four at n = 8192, a CPU fp32 at n = 2048.");
  // clang-format off
  options.add_options()
      ("d,device", "cpu, cuda, cuda:N, or auto (the first GPU, else the CPU)", cxxopts::value<std::string>()->default_value("auto"))
      ("precision", "comma-separated: fp32, tf32, bf16, fp16 (default: all four on a GPU, fp32 on a CPU)", cxxopts::value<std::string>())
      ("size", "n of the n×n matrices (default: 8192 on a GPU, 2048 on a CPU)", cxxopts::value<std::string>())
      ("steps", "timed products per precision", cxxopts::value<std::string>()->default_value("20"))
      ("warmup", "untimed products before them", cxxopts::value<std::string>()->default_value("5"))
      ("threads", threads_help("CPU threads for LibTorch"), cxxopts::value<std::string>())
      ("json", "print the result as JSON")
      ("o,out", "append the result as a record to this JSON-lines file", cxxopts::value<std::string>())
      ("h,help", "this help");
  // clang-format on
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help()
              << "\nExample: batchscope peak --device cuda:0 --out results/peak.jsonl\n"
                 "Then: a sweep's TFLOP/s (report.md, analysis.json) over the rate of its precision.\n";
    return 0;
  }
  apply_threads_option(result);
  const std::string device_name = resolve_training_device(result["device"].as<std::string>());
  const torch::Device device(device_name);
  PeakOptions o;
  o.size = result.count("size") ? whole_option(result, "size", 1, 65536) : default_peak_size(device);
  o.steps = static_cast<int>(whole_option(result, "steps", 1, limits::kMaxSteps));
  o.warmup = static_cast<int>(whole_option(result, "warmup", 0, limits::kMaxSteps));
  const std::vector<std::string> precisions = precision_option(result, device);
  check_size_fits(o.size, device);
  // Opened before the measurement, so that a path that cannot be written is refused at once.
  std::optional<JsonlWriter> out;
  if (result.count("out")) out.emplace(result["out"].as<std::string>());

  std::vector<PeakRate> rates;
  for (const std::string& precision : precisions) {
    try {
      rates.push_back(measure_peak_rate(device, precision, o));
    } catch (const std::exception& error) {
      if (!is_out_of_memory(error)) throw;
      throw UserError(
          located("command line", 0,
                  "--size " + std::to_string(o.size) + " does not fit on " + device_name + " in " + precision,
                  "give a smaller --size"));
    }
  }
  const Json config = {{"device", device_name},
                       {"size", o.size},
                       {"warmup", o.warmup},
                       {"steps", o.steps},
                       {"precisions", precisions}};
  Json record = context_record(record::kPeak, command_text("peak", args), config);
  Json measured = Json::array();
  for (const PeakRate& r : rates) measured.push_back(to_json(r));
  record["rates"] = measured;
  if (out) {
    out->add(record);
    out->flush();
  }
  if (result.count("json")) {
    std::cout << record.dump(2) << "\n";
  } else {
    print_table(device_name, o, rates);
  }
  return 0;
}

}  // namespace batchscope::app
