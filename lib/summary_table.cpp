#include "lib/summary_table.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace batchscope {
namespace {

// A record's number, NaN where it is null or missing.
double number(const Json& record, const char* key) {
  const auto found = record.find(key);
  return found != record.end() && found->is_number() ? found->get<double>() : std::nan("");
}

}  // namespace

std::string format_summary_table(const std::vector<Json>& records) {
  std::vector<std::string> order;
  std::map<std::string, std::map<int64_t, const Json*>> rows;
  for (const Json& r : records) {
    const std::string type = r.value("type", "");
    if (type != record::kPoint && type != record::kOom && type != record::kSkipped) continue;
    const std::string name = r.value("experiment", "");
    if (rows.find(name) == rows.end()) order.push_back(name);
    rows[name][r.value("batch_size", int64_t{0})] = &r;
  }
  std::ostringstream out;
  for (const std::string& name : order) {
    const auto& by_batch = rows[name];
    const Json& first = *by_batch.begin()->second;
    out << "\n"
        << name << "  (" << first.value("model", "") << ", " << first.value("phase", "") << ", "
        << first.value("precision", "") << ", " << first.value("device", "") << ")\n";
    // Energy columns where this experiment's points carry energy.
    bool energy = false;
    for (const auto& [batch, r] : by_batch) energy = energy || r->contains("j_per_sample");
    char line[200];
    std::snprintf(line, sizeof line, "%8s %12s %12s %12s %14s %10s", "batch", "median ms", "p10 ms", "p90 ms",
                  "samples/s", "TFLOP/s");
    out << line << (energy ? "    avg W   J/sample  samples/J\n" : "\n");
    for (const auto& [batch, r] : by_batch) {
      const std::string type = r->value("type", "");
      if (type == record::kPoint) {
        std::snprintf(line, sizeof line, "%8lld %12.3f %12.3f %12.3f %14.1f %10.4f",
                      static_cast<long long>(batch), r->value("median_ms", 0.0), r->value("p10_ms", 0.0),
                      r->value("p90_ms", 0.0), r->value("samples_per_s", 0.0), r->value("tflops", 0.0));
        out << line;
        if (energy && r->contains("j_per_sample") && r->at("j_per_sample").is_number()) {
          std::snprintf(line, sizeof line, " %8.1f %10.4g %10.4g", number(*r, "avg_power_w"),
                        number(*r, "j_per_sample"), number(*r, "samples_per_j"));
          out << line;
        }
        out << "\n";
        continue;
      }
      std::snprintf(line, sizeof line, "%8lld %12s\n", static_cast<long long>(batch),
                    type == record::kOom ? "out of memory" : "skipped");
      out << line;
    }
  }
  return out.str();
}

}  // namespace batchscope
