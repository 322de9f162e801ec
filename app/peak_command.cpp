#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/analysis/tile_model.h"
#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/common/words.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/gpu.h"
#include "lib/microbatch/layer_peak.h"
#include "lib/records/records.h"
#include "lib/sweep/max_batch.h"
#include "lib/timing/peak_rate.h"
#include "lib/timing/step_runner.h"
#include "lib/training/training.h"
#include "models/registry.h"

// batchscope peak: the device's dense matrix-product and convolution rates, the peaks a sweep's TFLOP/s is
// read against.

namespace batchscope::app {
namespace {

// A comma-separated list of the `known` names (each once, in the order given), or the defaults.
std::vector<std::string> list_option(const cxxopts::ParseResult& result, const std::string& name,
                                     const std::vector<std::string>& known,
                                     const std::vector<std::string>& defaults, const std::string& what,
                                     const std::string& example) {
  if (!result.count(name)) return defaults;
  const std::string names = listed(known);  // "fp32, tf32, bf16 and fp16"
  std::vector<std::string> chosen;
  std::stringstream list(result[name].as<std::string>());
  for (std::string item; std::getline(list, item, ',');) {
    if (std::find(known.begin(), known.end(), item) == known.end())
      refuse("--" + name + ": '" + printable(item) + "' is not " + what,
             "give a comma-separated list of " + names + ", e.g. --" + name + " " + example);
    if (std::find(chosen.begin(), chosen.end(), item) == chosen.end()) chosen.push_back(item);
  }
  if (chosen.empty()) refuse("--" + name + " is empty", "give one or more of " + names);
  return chosen;
}

// --conv-input NxCxHxW: four whole numbers joined by x.
ConvShape conv_shape_option(const cxxopts::ParseResult& result, const torch::Device& device) {
  if (!result.count("conv-input")) return default_conv_shape(device);
  const std::string text = result["conv-input"].as<std::string>();
  std::vector<int64_t> sizes;
  std::stringstream parts(text);
  bool whole = !text.empty() && text.back() != 'x';
  for (std::string part; whole && std::getline(parts, part, 'x');) {
    whole = !part.empty() && part.size() <= 6 &&
            std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (whole) sizes.push_back(std::stoll(part));
    whole = whole && sizes.back() >= 1;
  }
  if (!whole || sizes.size() != 4) {
    refuse("--conv-input: '" + printable(text) + "' is not an input shape N×C×H×W",
           "give four whole numbers from 1 to 999999 joined by x, e.g. --conv-input 64x256x56x56");
  }
  return {sizes[0], sizes[1], sizes[2], sizes[3]};
}

// The bytes an operation's fp32 tensors take: three n×n matrices; or the convolution's weights and six
// tensors of its input's size (the input and its copy in a layout, the output, and in training the
// output's gradient, the input's and a spare).
double bytes_needed(const std::string& operation, const PeakOptions& o) {
  if (operation != "conv") return 3 * 4 * std::pow(static_cast<double>(o.size), 2);
  double input = 4;
  for (const int64_t size : o.conv.sizes()) input *= static_cast<double>(size);
  return 6 * input + 4 * 9 * std::pow(static_cast<double>(o.conv.channels), 2);
}

// What the operations take on the CPU must fit within 90% of the memory available now.
void check_fits(const std::vector<std::string>& operations, const PeakOptions& o,
                const torch::Device& device) {
  const std::optional<int64_t> limit = device.is_cpu() ? default_cpu_memory_limit() : std::nullopt;
  if (!limit) return;
  for (const std::string& operation : operations) {
    const double needed = bytes_needed(operation, o);
    if (needed <= static_cast<double>(*limit)) continue;
    const bool conv = operation == "conv";
    const std::string option = conv ? "--conv-input " + o.conv.text() : "--size " + std::to_string(o.size);
    refuse(option + " needs " + format_memory_size(static_cast<int64_t>(std::min(needed, 9e18))) +
               " for its " + (conv ? "convolution's tensors" : "three matrices") + ", more than the " +
               format_memory_size(*limit) + " this machine has free",
           conv ? "give a smaller --conv-input" : "give a smaller --size");
  }
}

// --model, --batch, --input and --classes, which only the layers take: the model's layers as analyze lays
// them out, at the input and classes its sweep had.
LayerPeakOptions layer_options(const cxxopts::ParseResult& result, bool wanted, const torch::Device& device) {
  for (const char* option : {"model", "batch", "input", "classes", "cudnn-benchmark", "profiled-runs"}) {
    if (result.count(option) && !wanted)
      refuse(std::string("--") + option + " is the layers', and --operation leaves them out",
             std::string("add layers to --operation or leave --") + option + " out");
  }
  LayerPeakOptions o;
  if (!wanted) return o;
  if (!result.count("model"))
    refuse("--operation layers times a model's layers, and no --model is given",
           "add --model M, e.g. --model vgg16");
  o.model = model_option(result);
  const models::ModelSpec& spec = *models::find_model(o.model);
  if (spec.file) {
    refuse(o.model + " is a TorchScript file, whose layers batchscope does not know one by one",
           "time each layer alone with a model of the zoo (batchscope models lists them); a sweep of the file "
           "reads its TFLOP/s against the device's peaks (peak without --model)");
  }
  o.input = result.count("input") ? parse_input_shape(result["input"].as<std::string>()) : spec.default_input;
  o.classes = result.count("classes") ? whole_option(result, "classes", 1, 1000000) : spec.default_classes;
  try {
    if (gemm_layers(o.model, o.input, o.classes).empty()) {
      refuse(o.model + " is a sequence model, not laid out as convolution and linear layers",
             "give a convolutional model to --model (batchscope models lists them)");
    }
  } catch (const std::invalid_argument& error) {
    refuse("--input " + joined_numbers(o.input, ",") + " does not suit " + o.model + ": " + error.what(),
           "give an input the model takes, e.g. its default (leave --input out)");
  }
  o.batches = result.count("batch") ? batch_list_option(result, "batch")
                                    : std::vector<int64_t>{default_conv_shape(device).batch};
  if (result.count("profiled-runs"))
    o.profiled_runs = static_cast<int>(whole_option(result, "profiled-runs", 0, limits::kMaxSteps));
  return o;
}

// The largest layer's fp32 tensors at the largest batch (its input, output and their gradients) must fit
// within 90% of the memory the CPU has free now, as the other operations' must.
void check_layers_fit(const LayerPeakOptions& o) {
  const std::optional<int64_t> limit = default_cpu_memory_limit();
  if (!limit) return;
  double per_sample = 0;
  for (const GemmLayer& l : gemm_layers(o.model, o.input, o.classes)) {
    const double in = static_cast<double>(l.in * l.groups * l.input_rows);
    const double out = static_cast<double>(l.n * l.groups * l.rows);
    per_sample = std::max(per_sample, 2 * 4 * (in + out));
  }
  const int64_t batch = *std::max_element(o.batches.begin(), o.batches.end());
  const double needed = per_sample * static_cast<double>(batch);
  if (needed <= static_cast<double>(*limit)) return;
  refuse("--batch " + std::to_string(batch) + " needs " +
             format_memory_size(static_cast<int64_t>(std::min(needed, 9e18))) + " for the largest layer of " +
             o.model + ", more than the " + format_memory_size(*limit) + " this machine has free",
         "give a smaller --batch");
}

std::string device_description(const std::string& device) {
  if (device == "cpu") return "cpu";
  const int index = torch::Device(device).index();
  return device + " (" + gpu::device_info(index).value("name", std::string("GPU")) + ")";
}

// "fp32       train  channels-last        51.28      50.1-51.9        21.44"; a layer's row starts with
// its batch, name and pass.
void print_rate(const PeakRate& r, bool cuda) {
  const bool conv = r.operation != "matmul";
  std::string layout = r.memory_format == "channels_last" ? "channels-last" : r.memory_format;
  // A layer on a GPU: whether cuDNN searched for its algorithms or took its heuristics' choice.
  if (r.operation == "layer" && cuda && r.skipped.empty())
    layout += r.cudnn_benchmark ? ", search" : ", heur.";
  if (r.operation == "layer" && r.layer.name.empty()) std::printf("%6s %-24s %-9s", "", "", "");
  if (r.operation == "layer" && !r.layer.name.empty()) {
    std::printf("%6lld %-24s %-9s", static_cast<long long>(r.layer.batch), r.layer.name.c_str(),
                r.layer.pass.c_str());
  }
  std::printf("%-10s %-6s %-14s", r.precision.c_str(), conv ? r.phase.c_str() : "", layout.c_str());
  if (layout.size() > 14) std::printf(" ");
  if (!r.skipped.empty()) {
    std::printf("not measured: %s\n", r.skipped.c_str());
    return;
  }
  char range[64];
  std::snprintf(range, sizeof range, "%.4g-%.4g", r.low_tflops, r.high_tflops);
  std::printf("%15.4g %18s %12.4g", r.median_tflops, range, r.median_ms);
  // A layer's runs under the profiler, as analyze reads the step's layers against them.
  if (r.operation == "layer" && !r.profiled_ms.empty())
    std::printf(" %12.4g %13.4g", r.profiled_median_ms, r.profiled_tflops);
  std::printf("\n");
}

void print_table(const std::string& device, const PeakOptions& o, const LayerPeakOptions& layers,
                 const std::vector<PeakRate>& rates) {
  std::string timer;
  for (const PeakRate& r : rates)
    if (!r.timer.empty()) timer = r.timer;
  std::printf("peak rates on %s: %d warm-up and %d timed runs of each%s\n",
              device_description(device).c_str(), o.warmup, o.steps,
              timer.empty() ? "" : (", timed with " + timer).c_str());
  for (const std::string& operation : kPeakOperations) {
    const bool conv = operation != "matmul";
    // The records name the layers' operation in the singular, one rate per layer.
    const std::string recorded = operation == "layers" ? "layer" : operation;
    if (std::none_of(rates.begin(), rates.end(), [&](const PeakRate& r) { return r.operation == recorded; }))
      continue;
    if (operation == "layers") {
      const std::string input = joined_numbers(layers.input, "x");
      std::printf(
          "\nthe layers of %s alone: input %s, %lld classes%s\n%6s %-24s %-9s", layers.model.c_str(),
          input.c_str(), static_cast<long long>(layers.classes),
          torch::Device(device).is_cuda() ? "; cuDNN's search (benchmark mode) or its heuristics" : "",
          "batch", "layer", "pass");
    } else if (conv) {
      std::printf("\nconvolution 3x3, stride 1, padding 1: input %s, %lld channels out%s\n",
                  o.conv.text().c_str(), static_cast<long long>(o.conv.channels),
                  torch::Device(device).is_cuda() ? ", cuDNN benchmark mode" : "");
    } else {
      std::printf("\nmatrix product C = A·B: %lldx%lld matrices\n", static_cast<long long>(o.size),
                  static_cast<long long>(o.size));
    }
    std::printf("%-10s %-6s %-14s %15s %18s %12s", "precision", conv ? "phase" : "", conv ? "layout" : "",
                "median TFLOP/s", "p10-p90 TFLOP/s", "median ms");
    const bool profiled = std::any_of(rates.begin(), rates.end(), [&](const PeakRate& r) {
      return r.operation == recorded && !r.profiled_ms.empty();
    });
    // The profiled runs' median: the layer's kernels on a GPU, its operators' host time on a CPU.
    if (profiled) std::printf(" %12s %13s", "profiled ms", "prof. TFLOP/s");
    std::printf("\n");
    for (const PeakRate& r : rates)
      if (r.operation == recorded) print_rate(r, torch::Device(device).is_cuda());
  }
}

}  // namespace

int run_peak_command(const std::vector<std::string>& args) {
  cxxopts::Options options(
      "batchscope peak",
      "Measure the device's dense rates, the peaks that a sweep's TFLOP/s is read against: a matrix\n"
      "product C = A·B of n×n matrices (2n³ FLOPs), and a 3×3 convolution of an N×C×H×W input to C\n"
      "channels (2·N·C²·9·H·W FLOPs; in training, with its backward pass, 3 times that) in both memory\n"
      "layouts, with cuDNN's benchmark mode on a GPU. Each run is timed on its own (CUDA events on a GPU)\n"
      "after warm-up, the median and p10-p90 reported. fp32 is IEEE fp32 (TF32 refused); tf32 is fp32\n"
      "with TF32 allowed in cuBLAS and cuDNN, the tensor-core rate that cuDNN's fp32 convolutions may use\n"
      "(LibTorch's default; a sweep's run record says which, under tf32); bf16 and fp16 are tensors of\n"
      "that type. A GPU gets all four at n = 8192 and an input of 64x256x56x56, a CPU fp32 at n = 2048\n"
      "and 8x128x28x28. With --model, each convolution and linear layer of that model alone (operation\n"
      "layers), in its own shape at each --batch: the forward and the backward pass on their own, the\n"
      "roof of each layer that analyze --peak reads a profiled sweep's layers against. Each pass then runs\n"
      "--profiled-runs times more under the profiler, timed as a profiled sweep times its layers (its\n"
      "kernels' time on a GPU, its operators' host time on a CPU), the measure analyze reads them in.");
  // clang-format off
  options.add_options()
      ("d,device", "cpu, cuda, cuda:N, or auto (the first GPU, else the CPU)", cxxopts::value<std::string>()->default_value("auto"))
      ("operation", "comma-separated: matmul (the matrix product), conv (the convolution), layers (each layer of --model alone); default matmul,conv, or layers with --model", cxxopts::value<std::string>())
      ("precision", "comma-separated: fp32, tf32, bf16, fp16 (default: all four on a GPU, fp32 on a CPU)", cxxopts::value<std::string>())
      ("size", "n of the matrix product's n×n matrices (default: 8192 on a GPU, 2048 on a CPU)", cxxopts::value<std::string>())
      ("conv-input", "the convolution's input NxCxHxW (default: 64x256x56x56 on a GPU, 8x128x28x28 on a CPU)", cxxopts::value<std::string>())
      ("phase", "comma-separated, the convolution's and the layers': train (forward and backward), infer (forward)", cxxopts::value<std::string>()->default_value("train,infer"))
      ("m,model", "layers: the model whose layers are timed alone (batchscope models lists them)", cxxopts::value<std::string>())
      ("b,batch", "layers: one batch size or several (64, 32,64 or 8:64:8), e.g. the one analyze's layer rates name (default: 64 on a GPU, 8 on a CPU)", cxxopts::value<std::string>())
      ("input", "layers: one sample's shape, e.g. 3,224,224, as the sweep's (default: the model's)", cxxopts::value<std::string>())
      ("classes", "layers: the number of classes, as the sweep's (default: the model's)", cxxopts::value<std::string>())
      ("cudnn-benchmark", "layers on a GPU, comma-separated: on (cuDNN's search for each shape's fastest algorithm), off (its heuristics, as a sweep without --cudnn-benchmark)", cxxopts::value<std::string>()->default_value("on"))
      ("profiled-runs", "layers: runs of each pass once more under the profiler, after the timed ones, timed as a profiled sweep times its layers (kernel time on a GPU, without the launch gaps between events; operators' host time on a CPU): the measure analyze --peak reads the sweep's layers against; 0 for none", cxxopts::value<std::string>()->default_value("5"))
      ("steps", "timed runs of each operation, precision, phase and layout", cxxopts::value<std::string>()->default_value("20"))
      ("warmup", "untimed runs before them", cxxopts::value<std::string>()->default_value("5"))
      ("threads", threads_help("CPU threads for LibTorch"), cxxopts::value<std::string>())
      ("json", "print the result as JSON")
      ("o,out", "append the result as a record to this JSON-lines file", cxxopts::value<std::string>())
      ("h,help", "this help");
  // clang-format on
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout
        << options.help()
        << "\nExample: batchscope peak --device cuda:0 --out results/peak.jsonl\n"
           "Then: analyze --peak results/peak.jsonl reads a sweep's TFLOP/s (report.md, analysis.json)\n"
           "against the rates of its precision.\n"
           "Example: batchscope peak --device cuda:0 --model vgg16 --batch 64 --precision tf32,fp32 --out\n"
           "results/peak.jsonl times VGG16's layers alone at batch 64, for the layer rates of a profiled\n"
           "sweep at that batch (analyze --peak reads each layer against its own rate alone).\n";
    return 0;
  }
  apply_threads_option(result);
  const std::string device_name = resolve_training_device(result["device"].as<std::string>());
  const torch::Device device(device_name);
  PeakOptions o;
  const std::vector<std::string> operations = list_option(
      result, "operation", kPeakOperations,
      result.count("model") ? std::vector<std::string>{"layers"} : std::vector<std::string>{"matmul", "conv"},
      "an operation peak measures", "conv");
  const auto measures = [&operations](const std::string& operation) {
    return std::find(operations.begin(), operations.end(), operation) != operations.end();
  };
  const LayerPeakOptions layers = layer_options(result, measures("layers"), device);
  if (measures("layers") && device.is_cpu()) check_layers_fit(layers);
  if (result.count("size") && !measures("matmul"))
    refuse("--size is the matrix product's, and --operation leaves it out",
           "add matmul to --operation or leave --size out");
  if (result.count("conv-input") && !measures("conv"))
    refuse("--conv-input is the convolution's, and --operation leaves it out",
           "add conv to --operation or leave --conv-input out");
  if (result.count("phase") && !measures("conv") && !measures("layers"))
    refuse("--phase is the convolution's and the layers', and --operation leaves both out",
           "add conv or layers to --operation or leave --phase out");
  const std::vector<std::string> phases = list_option(result, "phase", kConvPhases, kConvPhases,
                                                      "a phase of the convolution or the layers", "train");
  // cuDNN's modes for the layers; a CPU has none (its records say false).
  const std::vector<std::string> asked_searches =
      list_option(result, "cudnn-benchmark", {"on", "off"}, {"on"}, "a mode of cuDNN", "on,off");
  const std::vector<std::string> searches =
      device.is_cuda() ? asked_searches : std::vector<std::string>{"on"};
  o.size = result.count("size") ? whole_option(result, "size", 1, 65536) : default_peak_size(device);
  o.conv = conv_shape_option(result, device);
  o.steps = static_cast<int>(whole_option(result, "steps", 1, limits::kMaxSteps));
  o.warmup = static_cast<int>(whole_option(result, "warmup", 0, limits::kMaxSteps));
  LayerPeakOptions layer_peak = layers;
  layer_peak.steps = o.steps;
  layer_peak.warmup = o.warmup;
  const std::vector<std::string> precisions =
      list_option(result, "precision", kPeakPrecisions, default_peak_precisions(device),
                  "a precision peak measures", "fp32,bf16");
  // Each precision the device lacks is listed as not measured, beside the others; where it lacks them
  // all, the record would hold no rate at all, which analyze --peak cannot read: refused instead.
  if (std::all_of(precisions.begin(), precisions.end(), [&](const std::string& precision) {
        return !peak_precision_unavailable(device, precision).empty();
      })) {
    std::string names;
    for (const std::string& precision : precisions) names += (names.empty() ? "" : ",") + precision;
    refuse("--precision " + names + " on " + device_name + ": " +
               peak_precision_unavailable(device, precisions.front()),
           "give a precision " + device_name + " has, e.g. --precision fp32");
  }
  check_fits(operations, o, device);
  // Opened before the measurement, so that a path that cannot be written is refused at once. A record
  // an earlier run left half-written is cut off first: appended to, it would take the new one with it.
  std::optional<JsonlWriter> out;
  if (result.count("out")) {
    const std::string path = result["out"].as<std::string>();
    check_own_records(path, {record::kPeak}, "peak");
    if (const std::uintmax_t cut = cut_half_line(path); cut > 0)
      spdlog::warn("{}: its last {} bytes were half a record (a run stopped while writing it): cut off", path,
                   cut);
    out.emplace(path);
  }

  std::vector<PeakRate> rates;
  const auto measure = [&](const std::string& operation, const std::string& precision,
                           const std::string& phase, const std::string& layout) {
    const bool conv = operation == "conv";
    try {
      if (operation == "layers") {
        for (const std::string& search : searches) {
          LayerPeakOptions mode = layer_peak;
          mode.cudnn_benchmark = search == "on";
          for (PeakRate& r : measure_layer_peak_rates(device, precision, phase, kConvMemoryFormats, mode))
            rates.push_back(std::move(r));
        }
      } else {
        rates.push_back(conv ? measure_conv_peak_rate(device, precision, layout, phase, o)
                             : measure_peak_rate(device, precision, o));
      }
    } catch (const std::exception& error) {
      if (!is_out_of_memory(error)) throw;
      const std::string option = operation == "layers" ? "--batch " + joined_numbers(layer_peak.batches, ",")
                                 : conv                ? "--conv-input " + o.conv.text()
                                                       : "--size " + std::to_string(o.size);
      throw UserError(located("command line", 0,
                              option + " does not fit on " + device_name + " in " + precision,
                              "give a smaller " + option.substr(0, option.find(' '))));
    }
  };
  for (const std::string& operation : operations) {
    for (const std::string& precision : precisions) {
      if (operation == "matmul") {
        measure(operation, precision, "", "");
      } else if (operation == "layers") {
        for (const std::string& phase : phases) measure(operation, precision, phase, "");
      } else {
        for (const std::string& phase : phases)
          for (const std::string& layout : kConvMemoryFormats) measure(operation, precision, phase, layout);
      }
    }
  }
  // A GPU whose profiler records no kernels (no CUPTI) leaves the layers without profiled times.
  const bool unprofiled = std::any_of(rates.begin(), rates.end(), [](const PeakRate& r) {
    return r.operation == "layer" && r.skipped.empty() && r.profiled_ms.empty() && r.profiled_dropped.empty();
  });
  for (const PeakRate& r : rates) {
    if (r.profiled_dropped.empty()) continue;
    spdlog::warn(
        "{} {} at batch {} ({}, {}): the profiled runs are left out, as {}; analyze reads this pass by "
        "the timer alone",
        r.layer.name, r.layer.pass, r.layer.batch, r.precision, r.memory_format, r.profiled_dropped);
  }
  if (layer_peak.profiled_runs > 0 && unprofiled) {
    spdlog::warn(
        "the profiler recorded no time of some layers' passes (on a GPU: no kernels, as without CUPTI), "
        "so analyze reads those by the timer alone");
  }
  Json config = {{"device", device_name},
                 {"operations", operations},
                 {"warmup", o.warmup},
                 {"steps", o.steps},
                 {"precisions", precisions}};
  if (measures("matmul")) config["size"] = o.size;
  if (measures("conv")) {
    const auto sizes = o.conv.sizes();
    config["conv_input"] = Json(std::vector<int64_t>(sizes.begin(), sizes.end()));
  }
  if (measures("conv") || measures("layers")) config["phases"] = phases;
  if (measures("layers")) {
    config["model"] = layers.model;
    config["input"] = layers.input;
    config["classes"] = layers.classes;
    config["batches"] = layers.batches;
    config["profiled_runs"] = layers.profiled_runs;
  }
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
    print_table(device_name, o, layers, rates);
  }
  return 0;
}

}  // namespace batchscope::app
