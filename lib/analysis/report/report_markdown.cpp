#include "lib/analysis/report/report_markdown.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "lib/analysis/grouping.h"
#include "lib/analysis/report/cost_report.h"
#include "lib/analysis/report/energy_report.h"
#include "lib/analysis/report/memory_report.h"
#include "lib/analysis/report/profile_report.h"
#include "lib/common/words.h"

namespace batchscope {
namespace {

std::string text(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

// Whether j[key] is a true boolean; anything else a log may hold there (a text, a number) is not.
bool flag(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

std::string batch_list(const std::vector<int64_t>& sizes) {
  std::string out;
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out;
}

std::string jump_name(const Jump& j) {
  return std::to_string(j.from_batch) + "→" + std::to_string(j.to_batch);
}

// "46% of the measured fp32 matrix-product peak (51.2 TFLOP/s, peak.jsonl:1), 38% of the fp32
// convolution peak (62.0 TFLOP/s, forward and backward, channels-last, peak.jsonl:1), 11% of the tf32 ..."
std::string peak_shares(const GroupPeak& peak, bool with_sources) {
  std::string text;
  for (std::size_t i = 0; i < peak.shares.size(); ++i) {
    const PeakShare& s = peak.shares[i];
    const bool conv = s.operation == "conv";
    std::string details;  // how the convolution ran, and where the peak was read
    if (conv && s.phase == "train") details += ", forward and backward";
    if (conv && s.phase == "infer") details += ", forward";
    if (conv && !s.memory_format.empty())
      details += s.memory_format == "channels_last" ? ", channels-last" : ", " + s.memory_format;
    details += ", " + s.from;
    text += (i ? ", " : "") + significant(100 * s.share, 3) + "% of the " + (i ? "" : "measured ") +
            s.precision + (conv ? " convolution" : " matrix-product") + " peak (" +
            significant(s.peak_tflops, 4) + " TFLOP/s" + (with_sources ? details : "") + ")";
  }
  return text;
}

void write_environment(std::ostream& out, const Analysis& a) {
  out << "## Environment\n\n";
  std::set<std::string> shown;
  for (const LogSummary& log : a.logs) {
    const Json& env = log.environment;
    if (!env.is_object()) {
      out << "- `" << log.path << "`: no run record, so the environment is unknown.\n";
      continue;
    }
    const std::string run = text(env, "run_id");
    if (!shown.insert(run).second) continue;
    out << "- **Run " << run << "** (`" << log.path << "`), started " << text(env, "start_time")
        << " on host `" << text(env, "host") << "`, batchscope " << text(env, "batchscope_version")
        << ", LibTorch " << text(env, "libtorch_version");
    if (!text(env, "cuda_runtime_version").empty()) out << ", CUDA " << text(env, "cuda_runtime_version");
    if (!text(env, "cudnn_version").empty()) out << ", cuDNN " << text(env, "cudnn_version");
    if (env.contains("tf32") && env["tf32"].is_object()) {
      out << ", by LibTorch's default fp32 convolutions "
          << (flag(env["tf32"], "cudnn_convolutions") ? "in TF32" : "in fp32") << " and matrix products "
          << (flag(env["tf32"], "cublas_matmul") ? "in TF32" : "in fp32");
    }
    out << ", " << text(env, "os") << ".\n";
    if (env.contains("cpu") && env["cpu"].is_object()) {
      const Json& cpu = env["cpu"];
      out << "  - CPU: " << text(cpu, "model") << ", " << text(cpu, "logical_cores")
          << " logical cores, LibTorch threads: " << text(cpu, "torch_threads");
      if (cpu.contains("onednn") && cpu["onednn"].is_object() && cpu["onednn"].contains("enabled") &&
          cpu["onednn"]["enabled"] == false) {
        out << "; oneDNN " << text(cpu["onednn"], "version")
            << " disabled (a build known to crash), so CPU convolutions ran in LibTorch's own, slower "
               "kernels";
      }
      out << "\n";
    }
    if (env.contains("gpus") && env["gpus"].is_array()) {
      for (const Json& g : env["gpus"]) {
        out << "  - GPU " << text(g, "index") << ": " << text(g, "name") << ", "
            << significant(g.value("total_memory_bytes", 0.0) / (1024.0 * 1024 * 1024), 3) << " GiB, "
            << text(g, "sm_count") << " SMs, compute capability " << text(g, "compute_capability") << "\n";
      }
    }
    for (const auto& [key, label] :
         {std::pair<const char*, const char*>{"cuda_allocator_environment",
                                              "CUDA caching allocator set by the environment"},
          {"cuda_library_environment", "cuDNN and cuBLAS set by the environment"}}) {
      if (!env.contains(key) || !env[key].is_object()) continue;
      out << "  - " << label << ":";
      for (const auto& [name, value] : env[key].items())
        out << " `" << name << "=" << (value.is_string() ? value.get<std::string>() : value.dump()) << "`";
      out << "\n";
    }
    if (env.contains("command")) out << "  - command: `" << text(env, "command") << "`\n";
  }
  out << "\n";
}

void write_jumps(std::ostream& out, const GroupAnalysis& g) {
  const JumpAnalysis& j = g.jumps;
  if (j.tested_pairs == 0) {
    // The sizes that ran whole: those run in micro-batches are no part of the trend and the jumps.
    std::size_t whole = 0, usable = 0;
    for (const PointStats& p : g.points) {
      if (p.chunk) continue;
      ++whole;
      if (!p.too_few_samples) ++usable;
    }
    out << "**Jumps:** not tested. Finding one needs at least three batch sizes with enough timed steps, and "
        << usable << " of " << whole << (g.accumulated.empty() ? "" : " run whole") << " have them";
    if (!g.flagged.empty()) {
      out << " (too few timed steps: " << joined_numbers(g.flagged, ", ")
          << "; sweep with more `--steps`, or lower `analyze --min-samples`)";
    } else {
      out << " (sweep more batch sizes)";
    }
    out << ".\n\n";
  } else if (j.jumps.empty()) {
    out << "**Jumps:** none. Across " << j.tested_pairs
        << " consecutive pairs the step time follows its trend within the noise (noise "
        << significant(j.noise_ms, 3) << " ms).\n\n";
  } else {
    out << "**Jumps:** " << j.jumps.size()
        << " where the step time rises beyond the local trend (median slope "
        << significant(j.slope_ms_per_sample, 3) << " ms per sample) and the noise ("
        << significant(j.noise_ms, 3) << " ms):\n\n";
    // Beside each jump, how the peak memory moved beyond its line (the Memory paragraph below).
    const bool memory = g.memory && !g.memory->at_changes.empty();
    out << "| jump | before (ms) | after (ms) | rise beyond trend (ms) | rise beyond trend (%) | z | "
           "confidence |"
        << (memory ? " peak memory beyond its line |" : "") << "\n"
        << "|---|---:|---:|---:|---:|---:|---|" << (memory ? "---:|" : "") << "\n";
    for (const Jump& x : j.jumps) {
      out << "| " << jump_name(x) << " | " << significant(x.from_ms) << " | " << significant(x.to_ms) << " | "
          << significant(x.delta_ms, 3) << " | " << significant(x.delta_pct, 3) << " | "
          << significant(x.z, 3) << " | " << x.confidence
          << (x.passes > 0
                  ? ", in " + std::to_string(x.passes_with) + " of " + std::to_string(x.passes) + " passes"
                  : "")
          << " |";
      if (memory) {
        const std::string moved = memory_at_change_text(g, x);
        out << " " << (moved.empty() ? "–" : moved) << " |";
      }
      out << "\n";
    }
    out << "\n";
  }
  if (!j.drops.empty()) {
    out << "**Drops** (step time falls beyond the noise, e.g. a faster algorithm from this size on): ";
    for (size_t i = 0; i < j.drops.size(); ++i) {
      const std::string moved = memory_at_change_text(g, j.drops[i]);
      out << (i ? ", " : "") << jump_name(j.drops[i]) << " (" << significant(j.drops[i].delta_pct, 3) << "%"
          << (moved.empty() ? "" : "; peak memory beyond its line " + moved) << ")";
    }
    out << ".\n\n";
  }
  if (!j.spikes.empty()) {
    out << "**Spikes** (one batch size slower than both neighbours, not a step): " << batch_list(j.spikes)
        << ".\n\n";
  }
  if (!j.fast_sizes.empty()) {
    out << "**Fast sizes** (one to three batch sizes that step faster than the sizes on both sides, beyond "
           "the noise: sizes to prefer over their neighbours): ";
    for (size_t i = 0; i < j.fast_sizes.size(); ++i) {
      const FastSizes& f = j.fast_sizes[i];
      out << (i ? ", " : "") << f.first_batch;
      if (f.last_batch != f.first_batch) out << "–" << f.last_batch;
      out << " (" << significant(f.fastest_ms);
      if (f.last_batch != f.first_batch) out << "–" << significant(f.slowest_ms);
      out << " ms against " << significant(f.before_ms) << " and " << significant(f.after_ms) << " ms, "
          << significant(f.gain_pct, 2) << "% less";
      if (f.passes > 0) {
        out << ", in " << f.passes_with << " of " << f.passes << " passes"
            << (f.doubtful ? ": doubtful" : "");
      }
      out << ")";
    }
    out << ".\n\n";
  }
  if (j.jumps.size() >= 1 && !j.segments.empty()) {
    out << "**Segments between jumps**"
        << (j.staircase ? " (a staircase: flat steps separated by jumps)" : "")
        << ":\n\n| batch sizes | points | slope (ms/sample) | rise inside (ms) | plateau "
           "|\n|---|---:|---:|---:|---|\n";
    for (const Segment& s : j.segments) {
      out << "| " << s.first_batch << "–" << s.last_batch << " | " << s.points << " | "
          << significant(s.slope_ms_per_sample, 3) << " | " << significant(s.rise_ms, 3) << " | "
          << (s.plateau ? "yes" : "no") << " |\n";
    }
    out << "\n";
  }
}

// The sizes above the first that reaches 90% of the highest throughput that fall below it again (a
// sawtooth's slow sizes), as runs: "33–47, 49–54"; empty where none does.
std::string sizes_below_saturation(const GroupAnalysis& g) {
  std::string text;
  int64_t first = -1, last = -1;
  const auto close_run = [&] {
    if (first < 0) return;
    text += (text.empty() ? "" : ", ") + std::to_string(first) +
            (last != first ? "–" + std::to_string(last) : "");
    first = -1;
  };
  for (const PointStats& p : g.points) {
    if (p.batch_size <= g.saturation->batch_size || p.too_few_samples) continue;
    if (p.samples_per_s < kSaturationShare * g.fastest->samples_per_s) {
      if (first < 0) first = p.batch_size;
      last = p.batch_size;
    } else {
      close_run();
    }
  }
  close_run();
  return text;
}

// The pattern the batch-size literature reports for VGG-like nets, answered for every group.
std::string multiples_of_16(const Periodicity& p) {
  for (const PeriodCheck& c : p.tested) {
    if (c.k != 16) continue;
    if (c.jumps == 0) return "no jumps, so no multiples-of-16 pattern";
    if (c.multiples_in_range == 0)
      return "not testable: no step between the measured sizes crosses a multiple of 16";
    const bool holds = c.jumps_on_multiples >= 2 && c.score >= 0.75;
    return std::string(holds                      ? "the pattern holds"
                       : c.jumps_on_multiples > 0 ? "the pattern holds in part"
                                                  : "the pattern does not hold") +
           ": " + std::to_string(c.jumps_on_multiples) + " of " + std::to_string(c.jumps) +
           " jumps fall on a multiple of 16, and " + std::to_string(c.multiples_with_jump) + " of the " +
           std::to_string(c.multiples_in_range) +
           " steps between measured sizes across a multiple of 16 have one";
  }
  return "";
}

// The steps after multiples of k, ranked among all steps between neighbouring sizes: whether the step
// time rises after a multiple of 16 even where the jump detector calls no jump.
void write_after_multiples(std::ostream& out, const Periodicity& p) {
  if (p.after_multiples.empty()) return;
  out << "**Steps after multiples of k** (each step m → m+1 from a multiple of k, beyond the typical step, "
         "ranked among all "
      << p.after_multiples.front().steps
      << " steps between neighbouring sizes; no jump threshold):\n\n"
         "| k | rise after each multiple | mean percentile | p (rank sum) |\n|---:|---|---:|---:|\n";
  for (const RisesAfterMultiples& r : p.after_multiples) {
    std::string rises;
    for (const auto& [from, rise] : r.rises) {
      if (!rises.empty()) rises += ", ";
      rises += std::to_string(from) + "→" + std::to_string(from + 1) + " " + (rise >= 0 ? "+" : "") +
               significant(100 * rise, 2) + "%";
    }
    out << "| " << r.k << " | " << rises << " | " << significant(r.mean_percentile, 2) << " | "
        << significant(r.p_value, 2) << " |\n";
  }
  out << "\n";
}

// One sentence on the k = 16 row: does the step time rise after multiples of 16?
std::string after_multiples_of_16(const Periodicity& p) {
  for (const RisesAfterMultiples& r : p.after_multiples) {
    if (r.k != 16) continue;
    const bool rises = r.p_value < 0.01 && r.mean_percentile >= 75;
    return std::string(rises
                           ? "the step after each multiple of 16 rises more than the others"
                           : "the steps after multiples of 16 rise no more than the others would by chance") +
           " (mean percentile " + significant(r.mean_percentile, 2) + " of " + std::to_string(r.steps) +
           " steps, p = " + significant(r.p_value, 2) + ")";
  }
  return "";
}

void write_periodicity(std::ostream& out, const Periodicity& p, bool jumps_tested) {
  out << "**Periodicity:** " << p.verdict << "\n\n";
  if (!jumps_tested) return;  // no pairs of sizes to judge: neither "no jumps" nor a pattern
  if (const std::string sixteen = multiples_of_16(p); !sixteen.empty()) {
    const std::string after = after_multiples_of_16(p);
    out << "**Multiples of 16:** " << sixteen << (after.empty() ? "" : "; " + after) << ".\n\n";
  }
  write_after_multiples(out, p);
  if (p.tested.empty() || p.tested.front().jumps == 0) return;
  out << "| k | jumps on multiples of k | steps across a multiple of k with a jump | p (chance) | score |\n"
      << "|---:|---:|---:|---:|---:|\n";
  auto row = [&](const PeriodCheck& c, const std::string& note, const std::string& p_note) {
    out << "| " << c.k << note << " | " << c.jumps_on_multiples << " of " << c.jumps << " | "
        << c.multiples_with_jump << " of " << c.multiples_in_range << " | " << significant(c.p_value, 2)
        << p_note << " | " << significant(c.score, 2) << " |\n";
  };
  for (const PeriodCheck& c : p.tested) row(c, "", "");
  // The best of many k: its chance is that of any of them fitting as well (Bonferroni), as the verdict
  // judges it.
  if (p.best)
    row(*p.best, " (best fit)",
        " (" + significant(std::min(1.0, p.best->p_value * p.periods_tried), 2) + " for the best of " +
            std::to_string(p.periods_tried) + " k)");
  out << "\n";
}

// The note of a size in the table of every batch size: too few steps, or chunk: auto's micro-batches.
std::string point_note(const PointStats& p) {
  std::string note = p.too_few_samples ? "too few steps: not used" : "";
  if (p.chunk) {
    const int64_t count = (p.batch_size + *p.chunk - 1) / *p.chunk;
    note += (note.empty() ? "" : "; ") + std::string("did not fit whole: ") + std::to_string(count) +
            " × at most " + std::to_string(*p.chunk) + " (chunk: auto)";
  }
  return note;
}

void write_points_table(std::ostream& out, const GroupAnalysis& g) {
  out << "<details><summary>Every batch size (" << g.points.size() << ")</summary>\n\n"
      << "| batch | steps | median ms | p10 ms | p90 ms | CV | samples/s | TFLOP/s | peak memory MiB | note "
         "|\n"
      << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const PointStats& p : g.points) {
    out << "| " << p.batch_size << " | " << p.samples << " | " << significant(p.median_ms) << " | "
        << significant(p.p10_ms) << " | " << significant(p.p90_ms) << " | "
        << (p.cv ? significant(*p.cv * 100, 2) + "%" : "–") << " | " << significant(p.samples_per_s) << " | "
        << (p.tflops ? significant(*p.tflops, 3) : "–") << " | "
        << (p.peak_memory_bytes ? significant(*p.peak_memory_bytes / (1024.0 * 1024.0), 4) : "–") << " | "
        << point_note(p) << " |\n";
  }
  out << "\n</details>\n\n";
}

// The settings of a group that change which kernels run or what a step times, where they depart from the
// defaults. A heading names only what tells the groups of one report apart, and the run record holds
// LibTorch's defaults, so without this a report of a single `--tf32 off` sweep would not say it ran in
// IEEE fp32.
std::string departed_settings(const nlohmann::ordered_json& id) {
  std::vector<std::string> settings;
  const auto text_at = [&](const char* key) {
    return id.contains(key) && id[key].is_string() ? id[key].get<std::string>() : std::string();
  };
  const auto flag_at = [&](const char* key) { return id.contains(key) && id[key] == true; };
  if (text_at("tf32") == "off")
    settings.push_back("TF32 off (convolutions and matrix products in IEEE fp32)");
  if (text_at("tf32") == "on") settings.push_back("TF32 on (convolutions and matrix products)");
  if (flag_at("cudnn_benchmark")) settings.push_back("cuDNN benchmark mode (algorithms timed per shape)");
  if (flag_at("channels_last")) settings.push_back("channels-last memory format");
  if (!text_at("cudnn_workspace_cap").empty())
    settings.push_back("cuDNN's workspace capped at " + text_at("cudnn_workspace_cap") +
                       " (CUDNN_CONV_WSCAP_DBG)");
  if (text_at("transfer") == "included") settings.push_back("the host-to-device copy timed in each step");
  if (!text_at("memory_limit").empty())
    settings.push_back("memory limited to " + text_at("memory_limit") + " (--memory-limit)");
  if (!text_at("loss_scale").empty()) {
    const std::string scaler = id.contains("loss_scaler") ? loss_scaler_words(id["loss_scaler"]) : "";
    settings.push_back("loss scaling " + text_at("loss_scale") + (scaler.empty() ? "" : " (" + scaler + ")"));
  }
  if (text_at("chunk") == "auto") {
    settings.push_back(text_at("phase") == "train"
                           ? "chunk: auto (a batch that does not fit whole runs in the largest even "
                             "micro-batches that fit, gradients accumulated, one optimizer step)"
                           : "chunk: auto (a batch that does not fit whole runs its forward pass in the "
                             "largest even slices that fit)");
  }
  if (id.contains("chunk") && id["chunk"].is_number_integer() && id["chunk"].get<int64_t>() > 0) {
    const std::string chunk = std::to_string(id["chunk"].get<int64_t>());
    settings.push_back(text_at("phase") == "train"
                           ? "gradient accumulation over micro-batches of " + chunk +
                                 " samples (chunk), one optimizer step"
                           : "the forward pass in slices of " + chunk + " samples (chunk)");
  }
  std::string out;
  for (const std::string& s : settings) out += (out.empty() ? "" : "; ") + s;
  return out;
}

void write_group(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                 const std::string& dir) {
  out << "## " << g.label << "\n\n";
  if (g.points.empty()) {
    out << "No batch size was measured";
    if (g.first_oom) out << ": even batch size " << *g.first_oom << " ran out of memory";
    out << ".\n\n";
    return;
  }
  embed_plot(out, plots, dir, g.id + "_time", "step time vs batch size");
  embed_plot(out, plots, dir, g.id + "_throughput", "samples/s vs batch size");
  embed_plot(out, plots, dir, g.id + "_rate", "TFLOP/s vs batch size against the measured peaks");
  embed_plot(out, plots, dir, g.id + "_time_to_accuracy", "time to an accuracy vs batch size");
  if (g.points.size() == 1) {
    out << "Batch size " << g.points.front().batch_size << " alone";
  } else {
    out << "Batch sizes " << g.points.front().batch_size << "–" << g.points.back().batch_size << " ("
        << g.points.size() << " measured)";
  }
  out << " from " << counted(static_cast<long long>(g.logs.size()), "log") << ".\n\n";
  if (const std::string settings = departed_settings(g.identity); !settings.empty()) {
    out << "**Settings:** " << settings << ".\n\n";
  }
  if (g.trend) {
    out << "**Trend** (Theil–Sen over " << g.trend->points << " points): step time ≈ "
        << significant(g.trend->intercept_ms) << " ms + " << significant(g.trend->slope_ms_per_sample)
        << " ms × batch size, i.e. " << significant(g.trend->slope_ms_per_sample)
        << " ms per extra sample.\n\n";
  }
  write_jumps(out, g);
  write_prediction(out, g);
  write_periodicity(out, g.periodicity, g.jumps.tested_pairs > 0);
  out << "**Best batch sizes:**\n\n";
  if (g.fastest) {
    out << "- highest throughput: batch " << g.fastest->batch_size << ", "
        << significant(g.fastest->samples_per_s) << " samples/s (" << significant(g.fastest->median_ms)
        << " ms per step)\n";
  }
  if (g.peak) {
    out << "- highest rate: batch " << g.peak->batch_size << ", " << significant(g.peak->tflops)
        << " TFLOP/s, " << peak_shares(*g.peak, /*with_sources=*/true) << "\n";
  }
  write_energy_bests(out, g);
  write_cost_best(out, g);
  write_time_to_accuracy_best(out, g);
  if (g.saturation) {
    const std::string below = sizes_below_saturation(g);
    out << "- 90% of the highest throughput first at batch " << g.saturation->batch_size << " ("
        << significant(g.saturation->samples_per_s) << " samples/s)"
        << (below.empty() ? ": larger batches gain little more" : "; larger sizes below 90% again: " + below)
        << "\n";
  }
  for (const BatchChoice& c : g.before_jumps) {
    out << "- the largest size before a jump: batch " << c.batch_size << ", " << significant(c.samples_per_s)
        << " samples/s\n";
  }
  if (g.largest_fitting) out << "- largest batch size measured: " << *g.largest_fitting << "\n";
  if (!g.accumulated.empty()) {
    out << "- did not fit whole from batch " << g.accumulated.front() << " on";
    if (g.largest_whole) out << " (the largest whole: " << *g.largest_whole << ")";
    out << "; in chunk: auto's micro-batches: " << batch_list(g.accumulated)
        << ". Their step times follow their count of micro-batches, not the batch's shapes: the trend, "
           "the jumps and the periodicity read the whole sizes only\n";
  }
  if (g.first_oom) {
    out << "- out of memory from batch " << *g.first_oom;
    if (!g.skipped.empty()) out << " (" << g.skipped.size() << " larger size(s) not tried)";
    out << "\n";
  }
  if (!g.flagged.empty()) {
    out << "- flagged, too few timed steps to use: " << batch_list(g.flagged) << "\n";
  }
  if (!g.launch_bound.empty()) {
    out << "- launch-bound, the GPU waits for the host (issuing a step takes at least "
        << static_cast<int>(kLaunchBoundShare * 100) << "% of it): " << batch_list(g.launch_bound)
        << "; a faster GPU would not speed these up, CUDA graphs or larger batches would\n";
  }
  if (!g.overflowed.empty()) {
    out << "- loss scaling skipped the optimizer's step of some timed steps (a gradient overflowed): "
        << batch_list(g.overflowed) << "; these medians read low\n";
  }
  out << "\n";
  write_memory_section(out, g, plots, dir);
  write_points_table(out, g);
  write_profile_section(out, g, plots, dir);
  write_energy_section(out, g, plots, dir);
}

void write_comparison(std::ostream& out, const Comparison& c, const PlotOutcome& plots,
                      const std::string& dir) {
  out << "### " << c.workload << ": speedup over " << c.baseline_label << "\n\n";
  embed_plot(out, plots, dir, c.id + "_speedup", "speedup vs batch size");
  embed_plot(out, plots, dir, c.id + "_energy", "samples/J ratio vs batch size");
  out << "Speedup = baseline median step time / median step time at the same batch size (> 1 is faster).\n\n"
      << "| compared | batch sizes in common | median speedup | lowest | highest "
         "|\n|---|---:|---:|---:|---:|\n";
  for (const SpeedupCurve& s : c.curves) {
    out << "| " << s.label << " | " << s.speedup.size() << " | " << significant(s.median_speedup, 3) << "× | "
        << significant(s.min_speedup, 3) << "× at " << s.min_at << " | " << significant(s.max_speedup, 3)
        << "× at " << s.max_at << " |\n";
  }
  out << "\n<details><summary>Speedup per batch size</summary>\n\n| batch |";
  for (const SpeedupCurve& s : c.curves) out << " " << s.label << " |";
  out << "\n|---:|";
  for (size_t i = 0; i < c.curves.size(); ++i) out << "---:|";
  out << "\n";
  std::set<int64_t> batches;
  for (const SpeedupCurve& s : c.curves) {
    for (const auto& p : s.speedup) batches.insert(p.first);
  }
  for (int64_t b : batches) {
    out << "| " << b << " |";
    for (const SpeedupCurve& s : c.curves) {
      const auto it =
          std::find_if(s.speedup.begin(), s.speedup.end(), [&](const auto& p) { return p.first == b; });
      out << " " << (it == s.speedup.end() ? "–" : significant(it->second, 3)) << " |";
    }
    out << "\n";
  }
  out << "\n</details>\n\n";
  write_energy_comparison(out, c);
}

std::string mib(const std::optional<int64_t>& bytes) {
  return bytes ? significant(static_cast<double>(*bytes) / (1024.0 * 1024.0), 4) : "–";
}

// ", loss scaled, adamw foreach": how a study's train steps ran, where its record says (a log may hold
// anything there, so only a text loss scale and an optimizer's text type make words).
std::string train_step_words(const Json& c) {
  std::string out;
  if (text(c, "loss_scale") == "dynamic") {
    const std::string scaler = c.contains("loss_scaler") ? loss_scaler_words(c["loss_scaler"]) : "";
    out += ", loss scaled" + (scaler.empty() ? "" : " (" + scaler + ")");
  }
  const Json optimizer = c.is_object() && c.contains("optimizer") ? c["optimizer"] : Json();
  if (optimizer.is_object() && optimizer.contains("type") && optimizer["type"].is_string()) {
    out += ", " + optimizer["type"].get<std::string>();
    if (flag(optimizer, "foreach")) out += " foreach";
  }
  return out;
}

void write_microbatch(std::ostream& out, const std::vector<MicroBatchLog>& studies) {
  out << "## Micro-batching\n\n";
  for (const MicroBatchLog& s : studies) {
    const Json& c = s.config;
    out << "### " << text(c, "model") << ", mini-batch " << text(c, "batch") << ", " << text(c, "precision")
        << train_step_words(c) << " on " << text(c, "device") << " (mode " << text(c, "mode")
        << ", cuDNN benchmark " << (flag(c, "cudnn_benchmark") ? "on" : "off") << ")\n\n`" << s.log << "`\n\n"
        << "| policy | predicted speedup | measured step speedup | undivided step ms | planned step ms | "
           "peak MiB undivided | peak MiB planned | gradient difference |\n"
        << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const MicroBatchResultRecord& r : s.results) {
      out << "| " << r.policy << " | " << significant(r.predicted_speedup, 3) << "× | "
          << significant(r.measured_speedup, 3) << "× | " << significant(r.undivided.median_ms) << " | "
          << significant(r.planned.median_ms) << " | " << mib(r.undivided.peak_memory_bytes) << " | "
          << mib(r.planned.peak_memory_bytes) << " | "
          << (r.gradient_difference ? significant(*r.gradient_difference * 100, 2) + "%" : "–") << " |\n";
    }
    out << "\nPredicted: from the measured times of each convolution (or of the whole step, mode model) at "
           "each micro-batch size; measured: whole training steps, undivided against planned.\n\n";
    for (const MicroBatchResultRecord& r : s.results) {
      const std::string skipped = skipped_steps_note(r);
      if (!skipped.empty()) out << r.policy << ": " << skipped << " (those steps are cheaper).\n\n";
    }
    if (!s.plans.empty()) {
      out << "<details><summary>Per-layer splits</summary>\n\n| policy | layer | split | predicted ms | "
             "undivided ms |\n|---|---|---|---:|---:|\n";
      for (const LayerPlanRecord& p : s.plans) {
        std::string split;
        for (int64_t size : p.split) split += (split.empty() ? "" : "+") + std::to_string(size);
        out << "| " << p.policy << " | " << p.layer << " | " << split << " | " << significant(p.predicted_ms)
            << " | " << significant(p.undivided_ms) << " |\n";
      }
      out << "\n</details>\n\n";
    }
  }
}

}  // namespace

void embed_plot(std::ostream& out, const PlotOutcome& plots, const std::string& dir, const std::string& stem,
                const std::string& alt) {
  if (std::find(plots.files.begin(), plots.files.end(), stem + ".png") == plots.files.end()) return;
  out << "![" << alt << "](" << dir << "/" << stem << ".png) ([SVG](" << dir << "/" << stem << ".svg))\n\n";
}

std::string significant(double value, int digits) {
  if (!std::isfinite(value)) return value > 0 ? "inf" : (value < 0 ? "-inf" : "nan");
  if (value == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int decimals = std::max(0, digits - 1 - magnitude);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

void write_report(std::ostream& out, const Analysis& a, const PlotOutcome& plots, const std::string& dir) {
  out << "# batchscope analysis\n\n";
  out << "| log | run | records | state |\n|---|---|---:|---|\n";
  for (const LogSummary& log : a.logs) {
    std::string runs;
    for (const std::string& r : log.run_ids) runs += (runs.empty() ? "" : ", ") + r;
    out << "| `" << log.path << "` | " << (runs.empty() ? "–" : runs) << " | " << log.records << " | "
        << (log.complete ? "complete" : "incomplete (interrupted or still running)")
        << (log.truncated_tail ? ", unfinished last line ignored" : "") << " |\n";
  }
  out << "\n";
  for (const LogSummary& log : a.logs) {
    if (!log.time_spent) continue;
    out << "Time spent by the session that completed `" << log.path
        << "`: " << describe_time_spent(*log.time_spent) << " ("
        << significant(100 * stepping_share(*log.time_spent), 3) << "% warm-up and timed steps).\n";
  }
  if (std::any_of(a.logs.begin(), a.logs.end(), [](const LogSummary& l) { return l.time_spent.has_value(); }))
    out << "\n";
  if (!plots.made) out << "Plots were skipped: " << plots.skipped_reason << "\n\n";

  const bool energy =
      std::any_of(a.groups.begin(), a.groups.end(), [](const GroupAnalysis& g) { return g.energy; });
  out << "| group | batch sizes | jumps | periodic | fastest batch | samples/s |"
      << (energy ? " most efficient batch | samples/J |" : "") << "\n|---|---|---|---|---:|---:|"
      << (energy ? "---:|---:|" : "") << "\n";
  for (const GroupAnalysis& g : a.groups) {
    std::string jumps;
    for (const Jump& j : g.jumps.jumps) jumps += (jumps.empty() ? "" : ", ") + jump_name(j);
    out << "| " << g.label << " | "
        << (g.points.empty() ? "none"
                             : std::to_string(g.points.front().batch_size) + "–" +
                                   std::to_string(g.points.back().batch_size))
        << " | "
        << (g.jumps.tested_pairs == 0 ? "not tested"
            : jumps.empty()           ? "none"
                                      : jumps)
        << " | "
        << (g.jumps.tested_pairs == 0                      ? "not tested"
            : g.periodicity.periodic && g.periodicity.best ? "every " + std::to_string(g.periodicity.best->k)
                                                           : "no")
        << " | " << (g.fastest ? std::to_string(g.fastest->batch_size) : "–") << " | "
        << (g.fastest ? significant(g.fastest->samples_per_s) : "–") << " |";
    out << (energy ? energy_summary_cells(g) : "") << "\n";
  }
  out << "\n";
  embed_plot(out, plots, dir, "energy_all", "energy per sample of every group with energy");
  for (const GroupAnalysis& g : a.groups) write_group(out, g, plots, dir);
  if (!a.comparisons.empty()) {
    out << "## Comparisons\n\n";
    for (const Comparison& c : a.comparisons) write_comparison(out, c, plots, dir);
  }
  write_cost_section(out, a);
  write_transfer_verdicts(out, a);
  if (!a.microbatch.empty()) write_microbatch(out, a.microbatch);
  write_environment(out, a);
  std::vector<std::string> warnings = a.warnings;
  warnings.insert(warnings.end(), plots.warnings.begin(), plots.warnings.end());
  if (!warnings.empty()) {
    out << "## Warnings\n\n";
    for (const std::string& w : warnings) out << "- " << w << "\n";
    out << "\n";
  }
  out << "How the trend, jumps and periods are found: README, \"How analyze finds jumps\".\n";
}

namespace {

// Jumps whose cause the terminal summary names (report.md names them all).
constexpr int kCausesOnTerminal = 3;

// Why the first jumps happen, where the sweep profiled: the layer that changed most at each.
void write_causes_terminal(std::ostream& out, const GroupAnalysis& g) {
  if (!g.profile) return;
  int named = 0;
  for (const JumpCause& c : g.profile->causes) {
    if (c.drop) continue;
    if (named++ == kCausesOnTerminal) break;
    out << "  why " << c.from_batch << "→" << c.to_batch << ": ";
    if (!c.missing.empty() || c.layers.empty()) {
      out << (c.missing.empty() ? "no layer's time changed" : c.missing) << "\n";
      continue;
    }
    out << describe_change(c.layers.front());
    if (c.layers.size() > 1)
      out << " and " << counted(static_cast<long long>(c.layers.size() - 1), "more layer") << " (report.md)";
    out << "\n";
  }
}

}  // namespace

void write_terminal_summary(std::ostream& out, const Analysis& a) {
  for (const GroupAnalysis& g : a.groups) {
    out << g.label << "\n";
    if (g.points.empty()) {
      out << "  nothing measured"
          << (g.first_oom ? ": out of memory at batch " + std::to_string(*g.first_oom) : "") << "\n";
      continue;
    }
    out << "  batch sizes " << g.points.front().batch_size << "-" << g.points.back().batch_size << ", "
        << g.points.size() << " measured";
    if (g.trend) out << "; trend " << significant(g.trend->slope_ms_per_sample) << " ms per extra sample";
    if (!g.accumulated.empty())
      out << "\n  did not fit whole, in micro-batches (chunk: auto): " << batch_list(g.accumulated);
    out << "\n  jumps: ";
    if (g.jumps.tested_pairs == 0)
      out << "not tested";
    else if (g.jumps.jumps.empty())
      out << "none";
    for (size_t i = 0; i < g.jumps.jumps.size(); ++i) {
      const Jump& j = g.jumps.jumps[i];
      out << (i ? ", " : "") << jump_name(j) << " +" << significant(j.delta_pct, 3) << "%";
    }
    out << "\n";
    write_causes_terminal(out, g);
    out << "  " << g.periodicity.verdict << "\n";
    if (const std::string sixteen = multiples_of_16(g.periodicity);
        !sixteen.empty() && !g.jumps.jumps.empty())
      out << "  multiples of 16: " << sixteen << "\n";
    if (const std::string after = after_multiples_of_16(g.periodicity);
        !after.empty() && g.jumps.tested_pairs > 0)
      out << "  after multiples of 16: " << after << "\n";
    if (g.fastest) {
      out << "  fastest: batch " << g.fastest->batch_size << " at " << significant(g.fastest->samples_per_s)
          << " samples/s";
      if (g.saturation) out << "; 90% of that first at batch " << g.saturation->batch_size;
      out << "\n";
      if (g.peak) {
        out << "  highest rate: " << significant(g.peak->tflops) << " TFLOP/s at batch " << g.peak->batch_size
            << ", " << peak_shares(*g.peak, /*with_sources=*/false) << "\n";
      }
    }
    if (g.layer_rates) {
      // "convolution and linear layers at batch 64: 159 TFLOP/s in 76.6% of the profiled step; 21.9% of
      // their time NCHW/NHWC conversions"
      const LayerRates& r = *g.layer_rates;
      out << "  convolution and linear layers at batch " << r.batch_size << ": "
          << significant(r.gemm_tflops, 3) << " TFLOP/s";
      if (r.step_ms > 0)
        out << " in " << significant(100 * r.gemm_ms / r.step_ms, 3) << "% of the profiled step";
      if (r.layout_ms > 0)
        out << "; " << significant(100 * r.layout_ms / r.gemm_ms, 3)
            << "% of their time NCHW/NHWC conversions";
      if (r.alone) {
        out << "; " << significant(100 * r.alone->ms / r.alone->step_ms, 3) << "% of their rate alone";
        if (r.alone->passes != static_cast<int>(r.layers.size()))
          out << " (" << r.alone->passes << " of " << r.layers.size() << " passes)";
      }
      out << "\n";
    }
    write_energy_terminal(out, g);
    write_cost_terminal(out, g);
    write_time_to_accuracy_terminal(out, g);
    write_memory_terminal(out, g);
  }
  for (const Comparison& c : a.comparisons) {
    for (const SpeedupCurve& s : c.curves) {
      out << c.workload << ": " << s.label << " vs " << c.baseline_label << ": median speedup "
          << significant(s.median_speedup, 3) << "x (" << significant(s.min_speedup, 3) << "x at " << s.min_at
          << " to " << significant(s.max_speedup, 3) << "x at " << s.max_at << ")\n";
      write_energy_ratio_terminal(out, c, s);
    }
  }
}

}  // namespace batchscope
