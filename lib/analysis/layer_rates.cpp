#include "lib/analysis/layer_rates.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "lib/records/profile_records.h"

namespace batchscope {

double gemm_flops_per_sample(const GemmLayer& layer, const std::string& pass) {
  const double forward = layer.gemm_flops();
  if (pass == profile_pass::kForward) return forward;
  if (pass == profile_pass::kBackward) return layer.first ? forward : 2.0 * forward;
  return 0.0;
}

std::optional<LayerRates> layer_rates(const std::vector<GemmLayer>& layers, const GroupProfile& profile,
                                      const std::map<int64_t, ProfileRecord>& records, int64_t near) {
  if (layers.empty() || profile.batch_sizes.empty()) return std::nullopt;
  int64_t batch = profile.batch_sizes.front();
  for (int64_t b : profile.batch_sizes) {
    if (std::llabs(b - near) <= std::llabs(batch - near)) batch = b;
  }
  std::map<std::pair<std::string, std::string>, double> ms;
  for (const LayerSeries& s : profile.layers) {
    const auto found = s.ms.find(batch);
    if (found != s.ms.end()) ms[{s.layer, s.pass}] += found->second;
  }
  std::map<std::pair<std::string, std::string>, double> layout_ms;
  const auto record = records.find(batch);
  if (record != records.end()) {
    for (const KernelTime& k : record->second.kernels) {
      if (k.kind == "kernel" && is_layout_conversion(k.name)) layout_ms[{k.layer, k.pass}] += k.total_ms;
    }
  }
  LayerRates out;
  out.batch_size = batch;
  const auto step = profile.step_ms.find(batch);
  out.step_ms = step == profile.step_ms.end() ? 0.0 : step->second;
  const auto add = [&](const GemmLayer& l, const char* pass) {
    const auto found = ms.find({l.name, pass});
    if (found == ms.end()) return;
    LayerRate r;
    r.layer = l.name;
    r.pass = pass;
    r.gflop = gemm_flops_per_sample(l, pass) * static_cast<double>(batch) / 1e9;
    r.ms = found->second;
    if (r.ms > 0) r.tflops = r.gflop / r.ms;  // GFLOP per ms is TFLOP/s
    const auto layout = layout_ms.find({l.name, pass});
    if (layout != layout_ms.end()) r.layout_ms = layout->second;
    out.gemm_gflop += r.gflop;
    out.gemm_ms += r.ms;
    out.layout_ms += r.layout_ms;
    out.layers.push_back(std::move(r));
  };
  // As the step runs them: the forward passes, then the backward passes from the last layer to the first.
  for (const GemmLayer& l : layers) add(l, profile_pass::kForward);
  for (auto l = layers.rbegin(); l != layers.rend(); ++l) add(*l, profile_pass::kBackward);
  if (out.layers.empty()) return std::nullopt;
  if (out.gemm_ms > 0) out.gemm_tflops = out.gemm_gflop / out.gemm_ms;
  return out;
}

namespace {

// A layer's rate alone: the faster of its timed runs and its runs under the profiler, where the peak file
// has those. On a GPU the profiled one, the kernels' time that the step's layers are read in, is the
// faster by construction (the events' span holds them and the launch gaps between); on a CPU both are
// host time, and the faster one is the less disturbed (2 threads on 2 cores stall now and then).
double alone_rate(const PeakEntry& e) { return std::max(e.profiled_tflops, e.median_tflops); }

// Every pass's rate alone at every batch size the table has the model at, in the step's cuDNN mode where
// it was timed so, else in the other; all of them together where every pass was timed at that size.
void read_layers_alone_by_batch(LayerRates& rates, const PeakTable& table, LayerQuery query) {
  for (const int64_t batch : layer_alone_batches(table, query)) {
    query.batch = batch;
    double gflop = 0, ms = 0;
    bool all = true;
    for (LayerRate& l : rates.layers) {
      const PeakEntry* e = layer_alone(table, query, l.layer, l.pass, query.cudnn_benchmark);
      if (e == nullptr) e = layer_alone(table, query, l.layer, l.pass, !query.cudnn_benchmark);
      if (e == nullptr) {
        all = false;
        continue;
      }
      l.alone_by_batch[batch] = alone_rate(*e);
      const double layer_gflop = l.gflop / static_cast<double>(rates.batch_size) * static_cast<double>(batch);
      gflop += layer_gflop;
      ms += layer_gflop / alone_rate(*e);  // GFLOP over TFLOP/s is ms
    }
    if (all && ms > 0) rates.all_alone_by_batch[batch] = gflop / ms;
  }
}

}  // namespace

void read_layers_alone(LayerRates& rates, const PeakTable& table, LayerQuery query) {
  read_layers_alone_by_batch(rates, table, query);
  query.batch = rates.batch_size;
  LayersAlone alone;
  for (LayerRate& l : rates.layers) {
    const PeakEntry* e = layer_alone(table, query, l.layer, l.pass, query.cudnn_benchmark);
    const PeakEntry* other = layer_alone(table, query, l.layer, l.pass, !query.cudnn_benchmark);
    if (l.ms <= 0 || (e == nullptr && other == nullptr)) continue;
    if (e == nullptr) {
      e = other;  // timed alone in the other mode only
      alone.step_mode = false;
    }
    l.alone_tflops = alone_rate(*e);
    l.alone_profiled = e->profiled_tflops > e->median_tflops;
    l.alone_precision = e->precision;
    l.alone_cudnn_benchmark = e->cudnn_benchmark;
    if (query.cuda && !e->cudnn_benchmark && other != nullptr && other->cudnn_benchmark) {
      l.searched_tflops = alone_rate(*other);
      alone.searched = true;
    }
    if (alone.passes++ == 0) alone.from = e->file + ":" + std::to_string(e->line);
    if (e->profiled_tflops > 0) ++alone.profiled;
    if (e->profiled_layout_ms) {
      l.alone_layout_ms = e->profiled_layout_ms;
      ++alone.layout_passes;
      alone.layout_ms += *e->profiled_layout_ms;
      alone.step_layout_ms += l.layout_ms;
    }
    alone.ms += l.gflop / *l.alone_tflops;  // GFLOP over TFLOP/s is ms
    alone.step_ms += l.ms;
  }
  if (alone.passes > 0) rates.alone = alone;
}

std::optional<double> all_alone_tflops(const LayerRates& rates) {
  if (!rates.alone || rates.alone->passes != static_cast<int>(rates.layers.size()) || rates.alone->ms <= 0)
    return std::nullopt;
  return rates.gemm_gflop / rates.alone->ms;
}

}  // namespace batchscope
