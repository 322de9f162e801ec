#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lib/common/statistics.h"
#include "lib/power/energy_meter.h"
#include "lib/records/csv_writer.h"
#include "lib/records/summary_table.h"
#include "lib/sweep/sweep_runner.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

// An energy counter on the real clock that draws `idle_w` until the sweep first reads its telemetry
// (just before the first batch size's window) and `busy_w` from then on.
class SteppedPowerSource : public power::PowerSource {
 public:
  SteppedPowerSource(double idle_w, double busy_w) : idle_w_(idle_w), busy_w_(busy_w), opened_ms_(now()) {}

  std::string method() const override { return "fake counter"; }
  std::string scope() const override { return "test device"; }
  std::optional<double> energy_j() override {
    const double t = now();
    const double busy_from = busy_from_ms_.value_or(t);
    return (idle_w_ * (busy_from - opened_ms_) + busy_w_ * (t - busy_from)) / 1e3;
  }
  std::optional<double> power_w() override { return busy_from_ms_ ? busy_w_ : idle_w_; }
  double resolution_ms() const override { return 1; }
  power::Telemetry telemetry() override {
    if (!busy_from_ms_) busy_from_ms_ = now();
    power::Telemetry t;
    t.power_w = power_w();
    t.sm_clock_mhz = 1980;
    t.temperature_c = 41;
    return t;
  }
  nlohmann::json info() override { return {{"power_limit_w", 700}}; }

 private:
  static double now() { return power::steady_now_ms(); }
  double idle_w_, busy_w_, opened_ms_;
  std::optional<double> busy_from_ms_;
};

SweepConfig tiny_sweep() {
  ExperimentConfig e = testing_support::tiny_mnist_training("mnist_tiny");
  e.batch_sizes = {1, 4};
  return SweepConfig{"test", {e}};
}

// The records of one type as the log holds them.
std::vector<Json> of_type(const std::vector<SweepRecord>& records, const std::string& type) {
  std::vector<Json> out;
  for (const SweepRecord& r : records) {
    if (type_of(r) == type) out.push_back(to_json(r));
  }
  return out;
}

SweepOutcome sweep_with(const SweepOptions& base, const std::string& name) {
  SweepOptions options = base;
  const testing_support::TempDir dir;
  options.out_dir = dir / name;
  std::ostringstream progress;
  return run_sweep(resolve_for_machine(tiny_sweep()), options, progress);
}

TEST(EnergySweep, EveryPointCarriesTheEnergyOfItsWindow) {
  constexpr double kIdleW = 30, kBusyW = 100, kIdleSeconds = 0.05;
  SweepOptions options;
  options.idle_seconds = kIdleSeconds;
  options.min_energy_window_ms = 40;
  options.open_power = [&](const torch::Device& device, std::string&) -> std::unique_ptr<power::PowerSource> {
    EXPECT_TRUE(device.is_cpu());
    return std::make_unique<SteppedPowerSource>(kIdleW, kBusyW);
  };
  const SweepOutcome outcome = sweep_with(options, "fake");

  const Json run = of_type(outcome.records, "run").at(0);
  const Json cpu = run.at("power").at("cpu");
  EXPECT_TRUE(cpu.at("available").get<bool>());
  EXPECT_EQ(cpu.at("method"), "fake counter");
  EXPECT_EQ(cpu.at("min_window_ms"), 40);
  EXPECT_NEAR(cpu.at("idle").at("power_w").get<double>(), kIdleW, 0.5);
  EXPECT_TRUE(run.contains("energy_note"));
  EXPECT_NE(format_summary_table(outcome.records).find("samples/J"), std::string::npos);

  const auto points = of_type(outcome.records, "point");
  ASSERT_EQ(points.size(), 2u);
  for (const Json& p : points) {
    const double batch = p.at("batch_size").get<double>();
    const double window_ms = p.at("energy_window_ms").get<double>();
    const int steps = p.at("energy_steps").get<int>();
    EXPECT_EQ(p.at("energy_method"), "fake counter");
    EXPECT_GE(window_ms, 40.0);
    EXPECT_GE(steps, 3);
    EXPECT_NEAR(p.at("avg_power_w").get<double>(), kBusyW, 1.0);
    EXPECT_NEAR(p.at("energy_j").get<double>(), kBusyW * window_ms / 1e3, 0.01 * kBusyW * window_ms / 1e3);
    EXPECT_NEAR(p.at("j_per_step").get<double>(), p.at("energy_j").get<double>() / steps, 1e-9);
    EXPECT_NEAR(p.at("j_per_sample").get<double>(), p.at("j_per_step").get<double>() / batch, 1e-9);
    EXPECT_NEAR(p.at("samples_per_j").get<double>() * p.at("j_per_sample").get<double>(), 1.0, 1e-9);
    EXPECT_NEAR(p.at("idle_power_w").get<double>(), kIdleW, 0.5);
    EXPECT_NEAR(p.at("avg_power_above_idle_w").get<double>(), kBusyW - kIdleW, 1.5);
    EXPECT_NEAR(p.at("j_per_sample_above_idle").get<double>(),
                (kBusyW - kIdleW) * window_ms / 1e3 / steps / batch,
                0.03 * (kBusyW - kIdleW) * window_ms / 1e3 / steps / batch);
    EXPECT_EQ(p.at("start_sm_clock_mhz"), 1980);
    char row[64];
    std::snprintf(row, sizeof row, "%10.4g", p.at("samples_per_j").get<double>());
    EXPECT_NE(format_summary_table(outcome.records).find(row), std::string::npos) << row;
    EXPECT_EQ(p.at("end_temperature_c"), 41);
    EXPECT_TRUE(p.at("end_memory_clock_mhz").is_null());
  }
}

TEST(EnergySweep, ShortWindowsRunMoreStepsInsideTheWindow) {
  SweepOptions options;
  options.idle_seconds = 0;
  options.min_energy_window_ms = 400;
  options.open_power = [](const torch::Device&, std::string&) -> std::unique_ptr<power::PowerSource> {
    return std::make_unique<SteppedPowerSource>(0, 50);
  };
  const SweepOutcome outcome = sweep_with(options, "long_window");
  for (const Json& p : of_type(outcome.records, "point")) {
    EXPECT_GE(p.at("energy_window_ms").get<double>(), 400.0);
    // Where the 3 timed steps take less than the window (a tiny mnist_cnn step takes a few ms, unless
    // the machine is very busy), the window runs more of the same steps.
    EXPECT_GE(p.at("energy_steps").get<int>(), 3);
    if (3 * p.at("max_ms").get<double>() < 400) EXPECT_GT(p.at("energy_steps").get<int>(), 3);
    EXPECT_EQ(p.at("samples"), 3);  // the timed steps are still the 3 asked for
    EXPECT_TRUE(p.at("idle_power_w").is_null());
    EXPECT_TRUE(p.at("samples_per_j_above_idle").is_null());
  }
}

TEST(EnergySweep, WithoutASourceTheRunSaysWhyAndPointsHaveNoEnergy) {
  SweepOptions options;
  options.open_power = [](const torch::Device&, std::string& reason) -> std::unique_ptr<power::PowerSource> {
    reason = "this test has no power meter.";
    return nullptr;
  };
  SweepOutcome outcome = sweep_with(options, "none");
  const Json cpu = of_type(outcome.records, "run").at(0).at("power").at("cpu");
  EXPECT_FALSE(cpu.at("available").get<bool>());
  EXPECT_EQ(cpu.at("reason"), "this test has no power meter.");
  for (const Json& p : of_type(outcome.records, "point")) EXPECT_FALSE(p.contains("energy_j"));
  EXPECT_EQ(format_summary_table(outcome.records).find("samples/J"), std::string::npos);

  options.measure_energy = false;
  outcome = sweep_with(options, "off");
  const Json off = of_type(outcome.records, "run").at(0).at("power").at("cpu");
  EXPECT_FALSE(off.at("available").get<bool>());
  EXPECT_NE(off.at("reason").get<std::string>().find("--no-energy"), std::string::npos);
}

// A counter that stops answering inside the second batch size's window: after its opening read.
class FailingPowerSource : public SteppedPowerSource {
 public:
  FailingPowerSource() : SteppedPowerSource(0, 80) {}
  std::optional<double> energy_j() override {
    if (telemetry_reads_ >= 3 && reads_in_second_window_++ >= 1) return std::nullopt;
    return SteppedPowerSource::energy_j();
  }
  power::Telemetry telemetry() override {
    ++telemetry_reads_;
    return SteppedPowerSource::telemetry();
  }

 private:
  int telemetry_reads_ = 0;
  int reads_in_second_window_ = 0;
};

TEST(EnergySweep, ALostCounterCostsThatPointItsEnergyNotTheSweep) {
  SweepOptions options;
  options.idle_seconds = 0;
  options.min_energy_window_ms = 20;
  options.open_power = [](const torch::Device&, std::string&) -> std::unique_ptr<power::PowerSource> {
    return std::make_unique<FailingPowerSource>();
  };
  const SweepOutcome outcome = sweep_with(options, "lost_counter");
  const auto points = of_type(outcome.records, "point");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NEAR(points[0].at("avg_power_w").get<double>(), 80, 1);
  EXPECT_FALSE(points[1].contains("energy_j"));
  EXPECT_EQ(points[1].at("samples"), 3);
  EXPECT_EQ(of_type(outcome.records, "end").size(), 1u);
}

namespace {

// The cells of a CSV line, with quoted fields unquoted.
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// A CSV cell holds what the JSON line holds: the same text, the same double (read back exactly), or
// nothing for null.
void expect_same(const Json& value, const std::string& cell, const std::string& where) {
  if (value.is_null()) {
    EXPECT_EQ(cell, "") << where;
  } else if (value.is_string()) {
    EXPECT_EQ(cell, value.get<std::string>()) << where;
  } else if (value.is_boolean()) {
    EXPECT_EQ(cell, value.dump()) << where;
  } else {
    ASSERT_FALSE(cell.empty()) << where;
    EXPECT_EQ(std::strtod(cell.c_str(), nullptr), value.get<double>()) << where << ": " << cell;
  }
}

}  // namespace

// One sweep, every output: steps.jsonl, steps.csv and the terminal table carry the same records, field
// by field, and the medians of steps.csv reproduce from its own step times.
TEST(SweepOutputs, JsonlCsvAndTableCarryTheSameRecords) {
  SweepOptions options;
  options.idle_seconds = 0.02;
  options.min_energy_window_ms = 20;
  options.open_power = [](const torch::Device&, std::string&) -> std::unique_ptr<power::PowerSource> {
    return std::make_unique<SteppedPowerSource>(30, 100);
  };
  SweepOptions base = options;
  const testing_support::TempDir dir;
  base.out_dir = dir / "outputs";
  std::ostringstream progress;
  const SweepOutcome outcome = run_sweep(resolve_for_machine(tiny_sweep()), base, progress);

  const JsonlContents jsonl = read_jsonl(outcome.jsonl_path);
  std::string run_id;
  std::vector<std::pair<Json, std::string>> rows;  // each per-batch line with its session's run id
  for (const Json& r : jsonl.records) {
    if (r["type"] == "run" || r["type"] == "resume") run_id = r["run_id"].get<std::string>();
    if (r.contains("batch_size")) rows.emplace_back(r, run_id);
  }
  ASSERT_EQ(rows.size(), 2u * (3 + 1)) << "3 steps and a point per batch size";

  std::ifstream csv(outcome.csv_path);
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  const std::vector<std::string> header = csv_cells(line);
  EXPECT_EQ(line, csv_header_line());
  std::map<int64_t, std::vector<double>> csv_times;
  std::map<int64_t, double> csv_medians;
  std::size_t row = 0;
  for (; std::getline(csv, line); ++row) {
    ASSERT_LT(row, rows.size()) << "more CSV rows than per-batch records";
    const auto& [record, session] = rows[row];
    const std::vector<std::string> cells = csv_cells(line);
    ASSERT_EQ(cells.size(), header.size()) << line;
    std::set<std::string> shown;
    for (std::size_t c = 0; c < header.size(); ++c) {
      const std::string where = "row " + std::to_string(row + 1) + " column " + header[c];
      if (header[c] == "run_id") {
        EXPECT_EQ(cells[c], session) << where;
      } else if (record.contains(header[c])) {
        expect_same(record[header[c]], cells[c], where);
        shown.insert(header[c]);
      } else {
        EXPECT_EQ(cells[c], "") << where;
      }
    }
    for (const auto& [key, value] : record.items()) EXPECT_TRUE(shown.count(key)) << key << " is not in steps.csv";
    const int64_t batch = record["batch_size"].get<int64_t>();
    const auto column = [&](const char* name) {
      return cells[static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin())];
    };
    if (record["type"] == "step") csv_times[batch].push_back(std::strtod(column("time_ms").c_str(), nullptr));
    if (record["type"] == "point") csv_medians[batch] = std::strtod(column("median_ms").c_str(), nullptr);
  }
  EXPECT_EQ(row, rows.size());
  for (const auto& [batch, times] : csv_times) EXPECT_EQ(summarize(times).median, csv_medians.at(batch)) << batch;

  // The terminal table shows each point's numbers as its JSON line has them.
  const std::string table = format_summary_table(outcome.records);
  for (const auto& [record, session] : rows) {
    if (record["type"] != "point") continue;
    char text[200];
    std::snprintf(text, sizeof text, "%8lld %12.3f %12.3f %12.3f %14.1f %10.4f %8.1f %10.4g %10.4g",
                  static_cast<long long>(record["batch_size"].get<int64_t>()), record["median_ms"].get<double>(),
                  record["p10_ms"].get<double>(), record["p90_ms"].get<double>(),
                  record["samples_per_s"].get<double>(), record["tflops"].get<double>(),
                  record["avg_power_w"].get<double>(), record["j_per_sample"].get<double>(),
                  record["samples_per_j"].get<double>());
    EXPECT_NE(table.find(text), std::string::npos) << text << "\nnot in\n" << table;
  }
}

}  // namespace
