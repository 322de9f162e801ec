#include "lib/training/device_comparison.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "lib/common/errors.h"
#include "lib/common/replaced_results.h"
#include "lib/device/environment.h"
#include "lib/records/jsonl.h"
#include "lib/training/training_parts.h"

namespace batchscope {
namespace fs = std::filesystem;
using namespace training_parts;
namespace {

std::string device_dir_name(std::string device) {
  for (char& c : device) {
    if (c == ':') c = '_';
  }
  return device;
}

// "cpu" or "cuda" of "cuda:1": devices of one kind share their random-number generator's algorithm.
std::string device_kind(const std::string& device) { return device.substr(0, device.find(':')); }

std::string significant(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.15g", v);
  return text;
}

}  // namespace

int agreeing_significant_digits(double a, double b) {
  // Two runs that both diverged to NaN agree there as much as two equal numbers do.
  if (a == b || (std::isnan(a) && std::isnan(b))) return 17;
  if (!std::isfinite(a) || !std::isfinite(b)) return 0;
  int best = 0;
  for (int digits = 1; digits <= 16; ++digits) {
    char ta[40], tb[40];
    std::snprintf(ta, sizeof ta, "%.*e", digits - 1, a);
    std::snprintf(tb, sizeof tb, "%.*e", digits - 1, b);
    if (std::string(ta) == tb) best = digits;
  }
  return best;
}

std::vector<Json> compare_epochs(DeviceComparison& c) {
  std::vector<Json> records;
  c.rows.clear();
  c.unequal.clear();
  c.min_digits = 17;
  // A run that diverged ends there: only the epochs both trained are compared, and the table says which
  // trained on alone.
  const std::size_t both = std::min(c.first.epochs.size(), c.second.epochs.size());
  if (c.first.epochs.size() != c.second.epochs.size()) {
    const bool first_longer = c.first.epochs.size() > c.second.epochs.size();
    const TrainingOutcome& shorter = first_longer ? c.second : c.first;
    c.unequal = (first_longer ? c.second_device : c.first_device) + " stopped after epoch " +
                std::to_string(both) + (shorter.diverged_epoch ? " (diverged)" : "") + " and " +
                (first_longer ? c.first_device : c.second_device) + " trained " +
                std::to_string(std::max(c.first.epochs.size(), c.second.epochs.size())) +
                ": only the epochs both trained are compared";
  }
  for (std::size_t i = 0; i < both; ++i) {
    const EpochResult& a = c.first.epochs[i];
    const EpochResult& b = c.second.epochs[i];
    Json record = {
        {"type", record::kComparison}, {"epoch", a.epoch}, {"devices", {c.first_device, c.second_device}}};
    int epoch_min = 17;
    const std::pair<const char*, std::pair<double, double>> quantities[] = {
        {"train_loss", {a.train_loss, b.train_loss}},
        {"train_accuracy", {a.train_accuracy, b.train_accuracy}},
        {"test_loss", {a.test.loss, b.test.loss}},
        {"test_accuracy", {a.test.accuracy, b.test.accuracy}}};
    for (const auto& [name, values] : quantities) {
      const int digits = agreeing_significant_digits(values.first, values.second);
      c.rows.push_back({a.epoch, name, values.first, values.second, digits});
      record[name] = {{"values", {values.first, values.second}}, {"digits", digits}};
      epoch_min = std::min(epoch_min, digits);
    }
    record["min_digits"] = epoch_min;
    record["identical"] = epoch_min == 17;
    records.push_back(record);
    c.min_digits = std::min(c.min_digits, epoch_min);
  }
  return records;
}

DeviceComparison compare_devices(const TrainingOptions& options, const std::string& first_device,
                                 const std::string& second_device) {
  check_options(options);
  DeviceComparison c;
  c.first_device = resolve_training_device(first_device);
  c.second_device = resolve_training_device(second_device);
  c.precision = options.precision;
  build_network(options.model, data::kind_of_data(options.data));
  const std::string first_name = device_dir_name(c.first_device);
  std::string second_name = device_dir_name(c.second_device);
  if (second_name == first_name) second_name += "_2";
  TrainingOptions first = options, second = options;
  first.device_independent = second.device_independent = true;
  first.device = c.first_device;
  second.device = c.second_device;
  first.out_dir = (fs::path(options.out_dir) / first_name).string();
  second.out_dir = (fs::path(options.out_dir) / second_name).string();
  c.jsonl_path = (fs::path(options.out_dir) / "compare.jsonl").string();
  std::error_code ec;
  if (!options.force && fs::exists(c.jsonl_path, ec)) {
    // A complete comparison goes on with more epochs, as a complete run does: each side trains on after
    // its last epoch, and the comparison is written again over all of them.
    int compared = 0;
    bool complete = false;
    for (const Json& r : read_jsonl(c.jsonl_path, BadLines::Collect).records) {
      if (r.value("type", "") == record::kComparison) ++compared;
      if (r.value("type", "") == record::kEnd) complete = true;
    }
    if (complete && options.epochs <= compared) {
      throw UserError(located(c.jsonl_path, 0,
                              "already holds a complete comparison of " + std::to_string(compared) +
                                  " epoch" + (compared == 1 ? "" : "s"),
                              "give more --epochs to go on with it, choose another --out directory, or pass "
                              "--force to run it again and replace it"));
    }
  }
  if (options.force) {
    // The comparison it replaces, compare.jsonl and both sides, is kept whole until this one is complete
    // (each side's own --force would drop its old run as soon as that side completed).
    const std::set<std::string> ours = {"compare.jsonl", first_name, second_name};
    if (const std::optional<std::string> kept = set_aside_replaced(
            options.out_dir, [&](const std::string& name) { return ours.count(name) > 0; },
            [&](const std::string&) { return log_ends_with(c.jsonl_path, record::kEnd); })) {
      spdlog::info("--force: the comparison this one replaces is kept in {} until this one is complete",
                   *kept);
    }
    first.force = second.force = false;
  }
  // A comparison stopped after its first device's run goes on with the second: a side already complete
  // with these options is taken as it is, one stopped in an epoch goes on after its last.
  first.reuse_complete = second.reuse_complete = true;
  check_output_dir(first);
  check_output_dir(second);

  const LoadedData data = load_data(options.data, options.limit_train, options.limit_test);
  spdlog::info("training on {} into {}", c.first_device, first.out_dir);
  c.first = train_on(first, c.first_device, data);
  spdlog::info("training on {} into {}", c.second_device, second.out_dir);
  c.second = train_on(second, c.second_device, data);

  fs::remove(c.jsonl_path, ec);
  JsonlWriter writer(c.jsonl_path);
  writer.add(context_record(record::kRun, options.command_line,
                            {{"devices", {c.first_device, c.second_device}},
                             {"runs", {c.first.jsonl_path, c.second.jsonl_path}},
                             {"dropout_masks", kMasksOnHost},
                             {"tf32", "off"},
                             {"drawn_on_device", c.first.drawn_on_device}}));
  for (const Json& record : compare_epochs(c)) writer.add(record);
  Json end = {{"type", record::kEnd}, {"time", iso8601_utc_now()}, {"complete", true}};
  if (!c.unequal.empty()) end["epochs"] = {c.first.epochs.size(), c.second.epochs.size()};
  writer.add(end);
  writer.flush();
  // A side stopped (Ctrl-C) leaves a comparison to go on with: the one it replaces stays until then.
  if (c.first.stopped || c.second.stopped) return c;
  const DroppedReplaced dropped = drop_replaced(options.out_dir);
  if (!dropped.left.empty())
    spdlog::warn(
        "the comparison this one replaced is kept in {}, which could not be removed: remove it by hand",
        dropped.left);
  return c;
}

std::string format_comparison_table(const DeviceComparison& c) {
  const std::string first = "A: " + c.first_device, second = "B: " + c.second_device;
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "%5s  %-14s  %-20s  %-20s  %s\n", "epoch", "quantity", first.c_str(),
                second.c_str(), "agreeing digits");
  out += line;
  for (const AgreementRow& r : c.rows) {
    const std::string digits = r.digits == 17 ? "17 (identical)" : std::to_string(r.digits);
    std::snprintf(line, sizeof line, "%5d  %-14s  %-20s  %-20s  %s\n", r.epoch, r.quantity.c_str(),
                  significant(r.first).c_str(), significant(r.second).c_str(), digits.c_str());
    out += line;
  }
  const std::string pair = c.first_device + " and " + c.second_device;
  if (!c.unequal.empty()) out += c.unequal + "\n";
  if (c.min_digits >= 15) {
    out += pair + " agree to ≥ 15 significant digits in every epoch" +
           (c.min_digits == 17 ? " (identical, bit for bit)\n" : "\n");
  } else {
    for (const AgreementRow& r : c.rows) {
      if (r.digits != c.min_digits) continue;
      out += pair + " agree to " + std::to_string(c.min_digits) + " significant digits at worst (epoch " +
             std::to_string(r.epoch) + ", " + r.quantity + ")\n";
      break;
    }
  }
  if (device_kind(c.first_device) == device_kind(c.second_device)) return out;
  const std::vector<std::string>& on_device = c.first.drawn_on_device;
  if (on_device.empty()) {
    const std::string fp32 = c.precision == Precision::FP32
                                 ? "fp32 without TF32 on a GPU"
                                 : to_string(c.precision) +
                                       " under autocast, and what autocast leaves in fp32 "
                                       "without TF32 on a GPU";
    out +=
        "Both ran the same computation: the same initial weights, order and dropout masks (drawn on the host "
        "from the seed), and " +
        fp32 + "; the digits above measure the devices' arithmetic.\n";
  } else {
    std::string names;
    for (const std::string& name : on_device) names += (names.empty() ? "" : ", ") + name;
    out += "Some random draws (" + names +
           ") come from each device's own generator, so the two runs part from "
           "the first step as two seeds would: the digits above measure that as well as the devices' "
           "arithmetic.\n";
  }
  return out;
}

}  // namespace batchscope
