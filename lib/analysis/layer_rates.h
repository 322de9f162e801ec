#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/jump_causes.h"
#include "lib/analysis/peak_share.h"
#include "lib/analysis/tile_model.h"
#include "lib/records/profile_records.h"

namespace batchscope {

// How fast each convolution and linear layer ran in the profiled steps: the FLOPs of its GEMMs over the
// time the profile gave it. A step's TFLOP/s says how far the whole step is from the roof; this says
// which layers hold it back, and how much of the step is spent outside the layers that do the FLOPs
// (normalisation, activations, pooling, the optimizer).

// FLOPs of one sample through one GEMM layer's pass, a multiply-add counted as 2 as the models count
// theirs (biases left out): forward 2·groups·rows·n·k; backward the weight gradient (as much as the
// forward) and, for all but the model's first layer, the input gradient (as much again), so that a
// training step's GEMM layers come to 3× their forward FLOPs, as a step is counted. A strided or
// grouped layer counts the same: the work its outputs need, not the work an algorithm does.
double gemm_flops_per_sample(const GemmLayer& layer, const std::string& pass);

struct LayerRate {
  std::string layer, pass;  // pass: forward or backward
  double gflop = 0;         // per step, at the batch size
  double ms = 0;            // per step, as the profile gives it (GPU kernel time, or host time)
  double tflops = 0;        // 0 where no time was recorded
  // Of its time, cuDNN's conversions of the tensors between NCHW and NHWC (kernels named so): the price
  // of a layout that the fastest kernels do not take.
  double layout_ms = 0;
  // The same pass timed alone at the same batch (peak --model, read by analyze --peak), and in which
  // precision: the layer's own roof.
  std::optional<double> alone_tflops;
  std::string alone_precision;
  bool alone_cudnn_benchmark = false;  // whether cuDNN searched (benchmark mode) when it ran alone
  // Whether alone_tflops is of its runs under the profiler, timed as the step's layers are (kernel time
  // on a GPU), the faster; else of the timer's runs (CUDA events on a GPU, launch gaps included).
  bool alone_profiled = false;
  // Of the pass's kernels alone under the profiler (a GPU's), those that convert tensors between NCHW and
  // NHWC: the conversions a layer pays in its layout on its own, against layout_ms in the step.
  std::optional<double> alone_layout_ms;
  // Its rate alone at every batch size the peak files have the model at (the rates' batch among them,
  // where alone_tflops is), in the step's cuDNN mode where it was timed so: where its own shape falls.
  std::map<int64_t, double> alone_by_batch;
  // Where the step ran without cuDNN's search and the pass was timed alone both ways: its rate alone with
  // the search, what benchmark mode would give the layer.
  std::optional<double> searched_tflops;
};

// The passes that were also timed alone, together: their time alone against their time in the step.
struct LayersAlone {
  int passes = 0;
  double ms = 0;       // alone: each pass's FLOPs over its rate alone, summed
  double step_ms = 0;  // the same passes' time in the profiled step
  std::string from;    // "FILE:LINE" of the first
  bool step_mode = true;  // every pass alone ran in the step's cuDNN mode (search or heuristics)
  bool searched = false;  // any pass has a searched_tflops
  int profiled = 0;       // passes whose peak record has runs under the profiler too
  // The passes whose kernels alone are known (alone_layout_ms): their conversions alone, and the same
  // passes' conversions in the step.
  int layout_passes = 0;
  double layout_ms = 0, step_layout_ms = 0;
};

struct LayerRates {
  int64_t batch_size = 0;
  std::vector<LayerRate> layers;  // the GEMM layers that the profile timed, in the step's order
  // All of them together: their FLOPs over their summed time.
  double gemm_gflop = 0, gemm_ms = 0, gemm_tflops = 0, layout_ms = 0;
  double step_ms = 0;  // the profiled step's wall time at the batch size
  // The convolution peak of the group's device and precision in its phase, where analyze --peak gave one.
  std::optional<PeakEntry> roof;
  std::optional<LayersAlone> alone;  // where analyze --peak gave any of the layers alone
  // All the passes together timed alone, at each batch size where every one was: their FLOPs over their
  // summed time alone.
  std::map<int64_t, double> all_alone_by_batch;
};

// The rates at the profiled batch size nearest `near` (the larger of two as near); nullopt where the
// model has no GEMM layers or the profile timed none of them. `records` (the profiles by batch size)
// give the layout conversions among the layers' kernels.
std::optional<LayerRates> layer_rates(const std::vector<GemmLayer>& layers, const GroupProfile& profile,
                                      const std::map<int64_t, ProfileRecord>& records, int64_t near);

// Each layer's pass against the same pass timed alone in `table` (the query's batch is the rates'), in the
// step's cuDNN mode where it was timed so, else in the other; sets `alone` where any matched. A pass's
// rate alone is the faster of its timer's runs and its runs under the profiler, where the table has those.
void read_layers_alone(LayerRates& rates, const PeakTable& table, LayerQuery query);

// All the passes together timed alone: their FLOPs over their summed time alone, where every pass was.
std::optional<double> all_alone_tflops(const LayerRates& rates);

}  // namespace batchscope
