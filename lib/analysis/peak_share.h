#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchscope {

struct PointStats;

// A sweep's achieved TFLOP/s against the device's measured peaks: `analyze --peak FILE` reads the rates
// that `batchscope peak --out FILE` wrote, of the matrix product and of the convolution.

struct PeakEntry {
  std::string device;  // the GPU's name as the run records give it, or "cpu"
  std::string cpu;     // for "cpu": the CPU's model and LibTorch's threads, as cpu_key() gives them
  std::string operation = "matmul";  // or "conv" or "layer"; records from before the convolution are matmul's
  std::string precision;
  std::string memory_format;  // conv and layer: contiguous or channels_last
  std::string phase;          // conv and layer: train (forward and backward) or infer (forward)
  double median_tflops = 0;
  std::string file;
  int line = 0;
  // layer: one layer of a model alone (peak --model), at the model's input and classes as its sweep had.
  std::string model, layer, kind, pass;  // kind: conv or linear; pass: forward or backward
  std::vector<int64_t> input;
  int64_t classes = 0, batch = 0;
  bool cudnn_benchmark = false;  // conv and layer: whether cuDNN searched for its algorithms (a GPU's)
  // layer: its rate from the runs under the profiler, timed as a profiled step times its layers
  // ("kernels" on a GPU, "operators" on a CPU); 0 and "" where the record has none (before they were).
  double profiled_tflops = 0;
  std::string profiled_as;
  // layer on a GPU: of the profiled runs' time, the kernels that convert tensors between NCHW and NHWC.
  std::optional<double> profiled_layout_ms;
};

struct PeakTable {
  std::vector<std::string> files;  // none without --peak
  // A later record (a later line, or a later file) replaces an earlier one of the same device, operation,
  // precision, phase and layout (and for a layer, of the same model, input, classes, batch, layer and pass).
  std::vector<PeakEntry> entries;
};

// What a CPU's peak is matched by: its model and the threads LibTorch ran with ("AMD EPYC · 2 threads"),
// since a peak at 2 threads is no roof for a sweep at 1; the model alone where threads is 0 (unknown).
std::string cpu_key(const std::string& model, int64_t threads);

// Reads peak files; throws UserError naming the file, the line and the fix.
PeakTable read_peak_table(const std::string& path);
PeakTable read_peak_tables(const std::vector<std::string>& paths);

// The peaks that a group's steps are read against: its own precision; for fp32 on a GPU also TF32,
// where its run let cuDNN's convolutions use it (tf32 "default" or "on"), and TF32 alone with "on".
std::vector<std::string> peak_precisions_for(const std::string& precision, const std::string& tf32,
                                             bool cuda);

struct PeakShare {
  std::string operation;  // the peak's: matmul or conv
  std::string precision;
  std::string memory_format;  // conv: the faster layout's
  std::string phase;          // conv: the group's
  double peak_tflops = 0;
  std::string from;  // "FILE:LINE"
  double share = 0;  // the group's highest TFLOP/s over the peak
};

// The group's highest TFLOP/s (among the sizes with enough steps) and its share of each matching peak:
// per precision the matrix product's, then the convolution's of the group's phase in its faster layout.
struct GroupPeak {
  int64_t batch_size = 0;
  double tflops = 0;
  std::vector<PeakShare> shares;
};

// The device's fastest peak of this operation and precision (the convolution's: of the phase, in its
// faster layout); nullptr where the table has none. `cpu` must match too where the device is "cpu".
const PeakEntry* fastest_peak(const PeakTable& table, const std::string& device, const std::string& cpu,
                              const std::string& precision, const std::string& operation,
                              const std::string& phase);

// The precision a group's convolutions run in: its own; TF32 for fp32 on a GPU where its run let cuDNN
// use it (tf32 "default", LibTorch's, or "on").
std::string convolution_precision(const std::string& precision, const std::string& tf32, bool cuda);

// The convolution peak that a group's layers are read against: that of the precision its convolutions
// run in, as fastest_peak finds it.
std::optional<PeakEntry> convolution_roof(const PeakTable& table, const std::string& device,
                                          const std::string& cpu, const std::string& precision,
                                          const std::string& phase);

// What a group's layer was timed alone as: the group's device, model and shape, the layer rates' batch.
struct LayerQuery {
  std::string device, cpu, model;
  std::vector<int64_t> input;
  int64_t classes = 0, batch = 0;
  std::string phase;      // the group's: train or infer
  std::string precision;  // the group's: fp32, bf16 or fp16
  std::string tf32;       // the group's TF32 setting on a GPU: default, on or off
  bool cuda = false;
  bool channels_last = false;
  bool cudnn_benchmark = false;  // the group's, on a GPU
};

// The precision a layer of `kind` (conv or linear) ran in, as peak names it: a GPU's fp32 convolutions
// in TF32 where the group allowed it (LibTorch's default allows cuDNN, not cuBLAS), else as the group's.
std::string layer_precision(const LayerQuery& query, const std::string& kind);

// The layer's pass timed alone in the group's device, model, shape, batch, phase, precision (as
// layer_precision gives it for the layer's kind) and layout (a linear layer's in any), with cuDNN's search
// or without it; nullptr if none.
const PeakEntry* layer_alone(const PeakTable& table, const LayerQuery& query, const std::string& layer,
                             const std::string& pass, bool cudnn_benchmark);

// The batch sizes at which the table holds the group's model (device, input and classes) timed alone.
std::vector<int64_t> layer_alone_batches(const PeakTable& table, const LayerQuery& query);

// The group's rate against the peaks of its device (device and cpu as its identity gives them): no
// shares where the table has no matching peak, none at all where the group has no rate.
std::optional<GroupPeak> peak_for_group(const PeakTable& table, const std::vector<PointStats>& points,
                                        const std::string& device, const std::string& cpu,
                                        const std::vector<std::string>& precisions, const std::string& phase);

}  // namespace batchscope
