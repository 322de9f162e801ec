#pragma once

// Sweep logs written to order for the analysis tests (with energy fields from a known power curve where
// asked), and the fixture that holds them.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/common/errors.h"
#include "lib/records/records.h"

namespace batchscope::analysis_test {
namespace fs = std::filesystem;

// A sweep log with a step-time curve the test chooses; step times spread ±0.4% around it.
struct FakeLog {
  std::string gpu = "GPU A";  // "cpu" for a CPU log
  int64_t gpu_memory_bytes = 0;    // the GPU entry's total_memory_bytes, written where not 0
  int64_t memory_limit_bytes = 0;  // the run record's memory_limit_bytes for the device, where not 0
  std::string libtorch = "2.5.1";
  std::string experiment = "vgg16_train_fp32";
  std::string precision = "fp32";
  std::string run_id = "run-a";
  bool cudnn_benchmark = false;
  int64_t chunk = 0;  // written where not 0
  std::vector<int64_t> batches;
  std::function<double(int64_t)> level = [](int64_t b) { return 10.0 + 0.5 * static_cast<double>(b); };
  int steps = 8;
  std::optional<int64_t> oom_from;
  bool end = true;
  // The energy fields of a batch size's point record, from its step-time level; none where unset or null.
  std::function<Json(int64_t batch, double level_ms, int steps)> energy;
  // The point's host_median_ms from its step-time level; none where unset.
  std::function<double(int64_t batch, double level_ms)> host;
  // The run record's tf32 object (a LibTorch with CUDA writes one); none where null.
  Json tf32;
  // The run record's cpu.onednn object (version, enabled); none where null.
  Json onednn;
  // The run record's cuda_allocator_environment object (variable: value); none where null.
  Json cuda_allocator;
  // The run record's cuda_library_environment object (variable: value); none where null.
  Json cuda_library;
  // The experiment's tf32 setting (on or off); none where empty, as LibTorch's default is written.
  std::string tf32_setting;
  // The optimizer stepped multi-tensor (foreach), as its record says then.
  bool foreach = false;
  // The experiment's loss_scale (dynamic); none where empty, as unscaled training is written.
  std::string loss_scale;
  // The experiment's loss_scaler settings object, as a scaled experiment's record has them; none where null.
  Json loss_scaler;
  // More fields of a batch size's point record (skipped_steps, loss_scale); none where unset.
  std::function<Json(int64_t batch)> point_fields;

  std::string text() const {
    const bool cpu = gpu == "cpu";
    Json config = {{"name", experiment},
                   {"model", "vgg16"},
                   {"phase", "train"},
                   {"precision", precision},
                   {"input", {3, 32, 32}},
                   {"classes", 10},
                   {"data", "synthetic"},
                   {"channels_last", false},
                   {"cudnn_benchmark", cudnn_benchmark},
                   {"optimizer", {{"type", "sgd"}, {"lr", 0.01}}}};
    if (!tf32_setting.empty()) config["tf32"] = tf32_setting;
    if (!loss_scale.empty()) config["loss_scale"] = loss_scale;
    if (!loss_scaler.is_null()) config["loss_scaler"] = loss_scaler;
    if (chunk > 0) config["chunk"] = chunk;
    if (foreach) config["optimizer"]["foreach"] = true;
    Json run = {{"type", "run"},
                {"run_id", run_id},
                {"cpu", {{"model", "Test CPU"}, {"torch_threads", 4}}},
                {"gpus", cpu ? Json::array() : Json::array({{{"index", 0}, {"name", gpu}}})},
                {"libtorch_version", libtorch},
                {"config", {{"experiments", {config}}}}};
    if (!cpu && gpu_memory_bytes > 0) run["gpus"][0]["total_memory_bytes"] = gpu_memory_bytes;
    if (memory_limit_bytes > 0) run["memory_limit_bytes"] = {{cpu ? "cpu" : "cuda:0", memory_limit_bytes}};
    if (!tf32.is_null()) run["tf32"] = tf32;
    if (!onednn.is_null()) run["cpu"]["onednn"] = onednn;
    if (!cuda_allocator.is_null()) run["cuda_allocator_environment"] = cuda_allocator;
    if (!cuda_library.is_null()) run["cuda_library_environment"] = cuda_library;
    std::ostringstream out;
    out << run.dump() << "\n";
    const Json common = {{"experiment", experiment},
                         {"model", "vgg16"},
                         {"phase", "train"},
                         {"precision", precision},
                         {"device", cpu ? "cpu" : "cuda:0"}};
    bool out_of_memory = false;
    for (int64_t b : batches) {
      if (oom_from && b >= *oom_from) {
        Json r = {{"type", out_of_memory ? "skipped" : "oom"}};
        r.update(common);
        r["batch_size"] = b;
        out << r.dump() << "\n";
        out_of_memory = true;
        continue;
      }
      for (int i = 0; i < steps; ++i) {
        Json r = {{"type", "step"}};
        r.update(common);
        r["batch_size"] = b;
        r["time_ms"] = level(b) * (1.0 + 0.002 * ((i % 5) - 2));
        out << r.dump() << "\n";
      }
      Json p = {{"type", "point"}};
      p.update(common);
      p["batch_size"] = b;
      p["flops_per_step"] = 1e9 * static_cast<double>(b);
      if (host) p["host_median_ms"] = host(b, level(b));
      if (point_fields) p.update(point_fields(b));
      if (energy) {
        const Json fields = energy(b, level(b), steps);
        if (fields.is_object()) p.update(fields);
      }
      out << p.dump() << "\n";
    }
    if (end)
      out << R"({"type":"end","complete":true})"
          << "\n";
    return out.str();
  }
};

inline std::vector<int64_t> range(int64_t first, int64_t last) {
  std::vector<int64_t> out;
  for (int64_t b = first; b <= last; ++b) out.push_back(b);
  return out;
}

class AnalyzeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("batchscope_analysis_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  fs::path dir_;
};

inline std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// report.md of an analysis, as analyze writes it with these plots (none by default).
inline std::string report_of(const Analysis& a, const PlotOutcome& plots = {}) {
  std::ostringstream out;
  write_report(out, a, plots, "plots");
  return out.str();
}

// The terminal summary of an analysis.
inline std::string terminal_of(const Analysis& a) {
  std::ostringstream out;
  write_terminal_summary(out, a);
  return out.str();
}

inline bool contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

// Point-record energy fields from a known power curve: power = idle + 20 W per sample, read over
// all timed steps. With the fake log's step time 10 + 0.5 b ms, J/sample = (60 + 20 b)(10 + 0.5 b)/b mJ
// = 600/b + 230 + 10 b, least at b = 8; above idle it is 20 (10 + 0.5 b), least at b = 1.
struct PowerModel {
  double idle_w = 60;
  double w_per_sample = 20;
  double resolution_ms = 1;
  bool idle_baseline = true;
  std::string scope = "GPU 0000:3B:00.0 board";
  std::map<int64_t, double> window_ms;                       // windows other than steps x step time
  std::map<int64_t, std::pair<double, double>> sm_clock;     // start, end; 1980 -> 1980 elsewhere
  std::map<int64_t, std::pair<double, double>> temperature;  // start, end; 40 -> 45 elsewhere

  Json fields(int64_t b, double level_ms, int steps) const {
    const double samples = static_cast<double>(b);
    const double power = idle_w + w_per_sample * samples;
    const auto window = window_ms.find(b);
    const double ms = window == window_ms.end() ? level_ms * steps : window->second;
    const double joules = power * ms / 1e3;
    const double per_step = joules / steps;
    const auto clock = sm_clock.count(b) ? sm_clock.at(b) : std::make_pair(1980.0, 1980.0);
    const auto temp = temperature.count(b) ? temperature.at(b) : std::make_pair(40.0, 45.0);
    Json f = {{"energy_method", "nvml energy counter"},
              {"energy_scope", scope},
              {"energy_resolution_ms", resolution_ms},
              {"energy_window_ms", ms},
              {"energy_steps", steps},
              {"energy_j", joules},
              {"avg_power_w", power},
              {"j_per_step", per_step},
              {"j_per_sample", per_step / samples},
              {"samples_per_j", samples / per_step},
              {"idle_power_w", idle_baseline ? Json(idle_w) : Json()}};
    const double above = (power - idle_w) * ms / 1e3 / steps;
    f["avg_power_above_idle_w"] = idle_baseline ? Json(power - idle_w) : Json();
    f["j_per_step_above_idle"] = idle_baseline ? Json(above) : Json();
    f["j_per_sample_above_idle"] = idle_baseline ? Json(above / samples) : Json();
    f["samples_per_j_above_idle"] = idle_baseline ? Json(samples / above) : Json();
    f["start_sm_clock_mhz"] = clock.first;
    f["end_sm_clock_mhz"] = clock.second;
    f["start_memory_clock_mhz"] = 2619;
    f["end_memory_clock_mhz"] = 2619;
    f["start_temperature_c"] = temp.first;
    f["end_temperature_c"] = temp.second;
    f["start_utilization_pct"] = Json();  // a source that cannot tell
    f["end_utilization_pct"] = 100;
    f["start_power_w"] = idle_w;
    f["end_power_w"] = power;
    return f;
  }
};

inline FakeLog energy_log(const PowerModel& model, int64_t first = 1, int64_t last = 24) {
  FakeLog log;
  log.batches = range(first, last);
  log.energy = [model](int64_t b, double level_ms, int steps) { return model.fields(b, level_ms, steps); };
  return log;
}

inline bool gnuplot_on_path() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace batchscope::analysis_test
