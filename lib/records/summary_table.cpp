#include "lib/records/summary_table.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "lib/records/jsonl.h"

namespace batchscope {
namespace {

double or_nan(const std::optional<double>& value) { return value.value_or(std::nan("")); }

// One row: the point's statistics (and energy where the experiment has any), or what happened instead.
void add_row(std::ostringstream& out, const SweepRecord& r, bool energy) {
  char line[200];
  const int64_t batch = batch_key_of(r)->batch_size;
  if (const auto* p = std::get_if<PointRecord>(&r)) {
    std::snprintf(line, sizeof line, "%8lld %12.3f %12.3f %12.3f %14.1f %10.4f", static_cast<long long>(batch),
                  p->median_ms.value_or(0), p->p10_ms.value_or(0), p->p90_ms.value_or(0),
                  p->samples_per_s.value_or(0), p->tflops.value_or(0));
    out << line;
    if (energy && p->energy && p->energy->j_per_sample) {
      std::snprintf(line, sizeof line, " %8.1f %10.4g %10.4g", or_nan(p->energy->avg_power_w),
                    or_nan(p->energy->j_per_sample), or_nan(p->energy->samples_per_j));
      out << line;
    }
    // Steps that skipped their optimizer step are cheaper: the median reads low (analyze warns too).
    if (p->skipped_steps.value_or(0) > 0)
      out << "  (" << *p->skipped_steps << " timed step(s) skipped: gradients overflowed)";
    if (p->chunk) {
      const int64_t count = (batch + p->chunk->chunk - 1) / p->chunk->chunk;
      out << "  (did not fit whole: " << count << (p->key.phase == "train" ? " micro-batches" : " slices")
          << " of at most " << p->chunk->chunk << ")";
    }
    out << "\n";
    return;
  }
  std::snprintf(line, sizeof line, "%8lld %12s\n", static_cast<long long>(batch),
                std::holds_alternative<OomRecord>(r) ? "out of memory" : "skipped");
  out << line;
}

// The rows of the summary, per experiment in the order they first appear, each batch size's point (its
// passes pooled into one) or what happened instead.
struct SummaryRows {
  std::vector<std::string> order;
  std::map<std::string, std::map<int64_t, SweepRecord>> rows;
};

SummaryRows summary_rows(const std::vector<SweepRecord>& records) {
  SummaryRows out;
  // With repeated passes, a batch size's row pools the steps of all its passes.
  std::map<std::pair<std::string, int64_t>, std::vector<double>> pooled_times;
  std::map<std::pair<std::string, int64_t>, std::vector<PointRecord>> pass_points;
  for (const SweepRecord& r : records) {
    if (const auto* step = std::get_if<StepRecord>(&r); step != nullptr && step->key.pass) {
      pooled_times[{step->key.experiment, step->key.batch_size}].push_back(step->time_ms);
    }
    if (const auto* point = std::get_if<PointRecord>(&r); point != nullptr && point->key.pass) {
      pass_points[{point->key.experiment, point->key.batch_size}].push_back(*point);
    }
  }
  for (const SweepRecord& r : records) {
    if (std::holds_alternative<StepRecord>(r)) continue;
    const BatchKey* key = batch_key_of(r);
    if (key == nullptr) continue;
    if (out.rows.find(key->experiment) == out.rows.end()) out.order.push_back(key->experiment);
    const auto* point = std::get_if<PointRecord>(&r);
    const auto times = pooled_times.find({key->experiment, key->batch_size});
    if (point != nullptr && point->key.pass && times != pooled_times.end()) {
      const PointRecord passes = merge_pass_points(pass_points[{key->experiment, key->batch_size}]);
      PointRecord pooled = point_record(passes.key, times->second, passes.flops_per_step.value_or(0),
                                        passes.peak_memory_bytes);
      pooled.skipped_steps = passes.skipped_steps;
      pooled.chunk = passes.chunk;
      pooled.energy = passes.energy;
      out.rows[key->experiment].insert_or_assign(key->batch_size, pooled);
      continue;
    }
    out.rows[key->experiment].insert_or_assign(key->batch_size, r);
  }
  return out;
}

}  // namespace

std::string format_summary_table(const std::vector<SweepRecord>& records) {
  const SummaryRows summary = summary_rows(records);
  const auto& order = summary.order;
  auto rows = summary.rows;
  std::ostringstream out;
  for (const std::string& name : order) {
    const auto& by_batch = rows[name];
    const BatchKey& first = *batch_key_of(by_batch.begin()->second);
    out << "\n"
        << name << "  (" << first.model << ", " << first.phase << ", " << first.precision << ", " << first.device
        << ")\n";
    // Energy columns where this experiment's points carry energy.
    bool energy = false;
    for (const auto& [batch, r] : by_batch) {
      const auto* p = std::get_if<PointRecord>(&r);
      energy = energy || (p != nullptr && p->energy);
    }
    char line[200];
    std::snprintf(line, sizeof line, "%8s %12s %12s %12s %14s %10s", "batch", "median ms", "p10 ms", "p90 ms",
                  "samples/s", "TFLOP/s");
    out << line << (energy ? "    avg W   J/sample  samples/J\n" : "\n");
    for (const auto& [batch, r] : by_batch) add_row(out, r, energy);
  }
  return out.str();
}

Json summary_json(const std::vector<SweepRecord>& records) {
  const SummaryRows summary = summary_rows(records);
  Json out = Json::array();
  for (const std::string& name : summary.order) {
    for (const auto& [batch, r] : summary.rows.at(name)) {
      const BatchKey& key = *batch_key_of(r);
      Json row = {{"experiment", key.experiment}, {"model", key.model},   {"phase", key.phase},
                  {"precision", key.precision},   {"device", key.device}, {"batch_size", batch}};
      if (const auto* p = std::get_if<PointRecord>(&r)) {
        row["status"] = "measured";
        row["samples"] = optional_json(p->samples);
        row["median_ms"] = optional_json(p->median_ms);
        row["p10_ms"] = optional_json(p->p10_ms);
        row["p90_ms"] = optional_json(p->p90_ms);
        row["samples_per_s"] = optional_json(p->samples_per_s);
        row["tflops"] = optional_json(p->tflops);
        if (p->skipped_steps) row["skipped_steps"] = *p->skipped_steps;
        if (p->chunk) row["chunk"] = p->chunk->chunk;
        if (p->energy) {
          row["avg_power_w"] = optional_json(p->energy->avg_power_w);
          row["j_per_sample"] = optional_json(p->energy->j_per_sample);
          row["samples_per_j"] = optional_json(p->energy->samples_per_j);
        }
      } else {
        row["status"] = std::holds_alternative<OomRecord>(r) ? "out of memory" : "skipped";
      }
      out.push_back(row);
    }
  }
  return out;
}

}  // namespace batchscope
