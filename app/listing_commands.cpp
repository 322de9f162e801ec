#include <torch/torch.h>

#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/power/device_power.h"
#include "models/registry.h"

// batchscope models and env: the commands that only print something.

namespace batchscope::app {
namespace {

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

}  // namespace

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
  std::printf("\nA TorchScript file's path is a model too: sweep --model my_net.pt --input 3,224,224, or\n"
              "--model my_lm.pt --input-kind tokens --seq-len 512 for a language model (add --vocab N for a\n"
              "sequence classifier); its classes and FLOPs are measured on one sample of that input (sweep\n"
              "--plan shows them).\n");
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
