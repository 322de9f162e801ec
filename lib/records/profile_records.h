#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/records/records.h"
#include "models/gemm_layer.h"

namespace batchscope {

using models::GemmLayer;

// What the profiled steps of one batch size spent, per layer and per operator or kernel
// (`sweep --profile`; one record per batch size in profile.jsonl beside steps.jsonl). Profiled steps
// run after the timed ones and are never among them. Every figure is per step: the profiled steps'
// totals divided by their number.

// The parts a step is divided into: the layers of the model (by module name, "features.0"), in their
// forward or backward pass, and the parts of a step outside them ("step.optimizer", pass "step").
namespace profile_pass {
inline constexpr const char* kForward = "forward";
inline constexpr const char* kBackward = "backward";
inline constexpr const char* kStep = "step";
}  // namespace profile_pass

struct LayerTime {
  std::string layer, pass;
  double calls = 0;
  // Host time the layer owns: from its scope's start to its end, less the layers nested in it; for a
  // backward pass, the autograd nodes of its operators.
  double cpu_ms = 0;
  std::optional<double> device_ms;  // time of the kernels it launched, where a GPU ran them
};

// One operator (on the CPU: its self time, without the operators it called) or one device kernel
// (its time on the GPU), within a layer and pass.
struct KernelTime {
  std::string layer, pass, name;
  std::string kind;  // "kernel" or "operator"
  double count = 0;
  double total_ms = 0;
  double mean_ms = 0;
  std::string grid, block;  // a kernel's launch shape, "[x, y, z]", where the profiler's trace gives it
};

struct ProfileRecord {
  BatchKey key;
  int64_t steps = 0;       // profiled steps the figures are averaged over
  std::string method;      // how the times were taken, e.g. "profiler: cpu operators" or "... + cuda kernels"
  double step_ms = 0;      // wall time of a profiled step, device synchronised
  std::optional<double> kernel_ms;  // all kernel time of a step, where kernels were recorded
  std::vector<LayerTime> layers;
  std::vector<KernelTime> kernels;
  std::string trace;  // the Chrome trace of its first profiled step, "" where none was asked for
  // A TorchScript file's convolution and linear layers as GEMMs (the zoo's are in its layer tables), so
  // that analyze can give its layers' TFLOP/s and predict its tiles' waves without the file.
  std::vector<GemmLayer> gemm_layers;
};

Json to_json(const ProfileRecord& r);
// Read back with every field's type checked; BadRecord (in words that follow "the record") otherwise.
ProfileRecord profile_record_from_json(const Json& j);

// Whether a kernel converts a tensor between NCHW and NHWC (cuDNN's nchwToNhwcKernel, nhwcToNchwKernel):
// the price of a layout that the fastest kernels do not take.
bool is_layout_conversion(const std::string& kernel_name);

}  // namespace batchscope
