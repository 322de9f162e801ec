#include "lib/records/summary_table.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

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
    out << "\n";
    return;
  }
  std::snprintf(line, sizeof line, "%8lld %12s\n", static_cast<long long>(batch),
                std::holds_alternative<OomRecord>(r) ? "out of memory" : "skipped");
  out << line;
}

}  // namespace

std::string format_summary_table(const std::vector<SweepRecord>& records) {
  std::vector<std::string> order;
  std::map<std::string, std::map<int64_t, const SweepRecord*>> rows;
  // With repeated passes, a batch size's row pools the steps of all its passes.
  std::map<std::pair<std::string, int64_t>, std::vector<double>> pooled_times;
  for (const SweepRecord& r : records) {
    if (const auto* step = std::get_if<StepRecord>(&r); step != nullptr && step->key.pass) {
      pooled_times[{step->key.experiment, step->key.batch_size}].push_back(step->time_ms);
    }
  }
  std::vector<SweepRecord> pooled;
  pooled.reserve(records.size());
  for (const SweepRecord& r : records) {
    if (std::holds_alternative<StepRecord>(r)) continue;
    const BatchKey* key = batch_key_of(r);
    if (key == nullptr) continue;
    if (rows.find(key->experiment) == rows.end()) order.push_back(key->experiment);
    const auto* point = std::get_if<PointRecord>(&r);
    const auto times = pooled_times.find({key->experiment, key->batch_size});
    if (point != nullptr && times != pooled_times.end()) {
      BatchKey all = point->key;
      all.pass.reset();
      pooled.push_back(point_record(all, times->second, point->flops_per_step.value_or(0), point->peak_memory_bytes));
      rows[key->experiment][key->batch_size] = &pooled.back();
      continue;
    }
    rows[key->experiment][key->batch_size] = &r;
  }
  std::ostringstream out;
  for (const std::string& name : order) {
    const auto& by_batch = rows[name];
    const BatchKey& first = *batch_key_of(*by_batch.begin()->second);
    out << "\n"
        << name << "  (" << first.model << ", " << first.phase << ", " << first.precision << ", " << first.device
        << ")\n";
    // Energy columns where this experiment's points carry energy.
    bool energy = false;
    for (const auto& [batch, r] : by_batch) {
      const auto* p = std::get_if<PointRecord>(r);
      energy = energy || (p != nullptr && p->energy);
    }
    char line[200];
    std::snprintf(line, sizeof line, "%8s %12s %12s %12s %14s %10s", "batch", "median ms", "p10 ms", "p90 ms",
                  "samples/s", "TFLOP/s");
    out << line << (energy ? "    avg W   J/sample  samples/J\n" : "\n");
    for (const auto& [batch, r] : by_batch) add_row(out, *r, energy);
  }
  return out.str();
}

}  // namespace batchscope
