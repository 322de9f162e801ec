#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "data/batch_loader.h"
#include "data/datasets.h"
#include "lib/config/config.h"
#include "lib/timing/loss_scaler.h"
#include "lib/timing/step_timer.h"
#include "lib/timing/synthetic_samples.h"
#include "models/network.h"
#include "models/registry.h"

namespace batchscope {

// The FLOPs of one step: the forward pass, or in training forward and backward, the backward counted as
// twice the forward less the data gradient of the first layer, which is never computed (ModelSpec's
// data_gradient_flops).
inline double step_flops(Phase phase, double forward_flops_per_sample, double data_gradient_flops_per_sample,
                         int64_t batch_size) {
  const auto batch = static_cast<double>(batch_size);
  const double forward = forward_flops_per_sample * batch;
  return phase == Phase::Train ? 3.0 * forward - data_gradient_flops_per_sample * batch : forward;
}

// Which steps of a batch size a step is one of.
enum class StepPart { WarmUp, Timed };
// Told after each warm-up and timed step, outside its timed region, once the device has finished it:
// the part, and how many of that part's steps are done of how many. It must cost nothing a step would
// notice: the sweep's progress line reads a clock and returns until a redraw is due.
using StepObserver = std::function<void(StepPart part, int done, int total)>;

// One experiment's model, optimizer and batches on its device, ready to run steps. Everything a step
// needs is made by prepare_batch() and stage(), so step() is the framework's work alone, plus the
// host-to-device copy of the batch when the experiment times it (transfer: included).
class Workload {
 public:
  // dataset: the images the steps take their batches from (data: mnist and the like), or null for
  // synthetic data. It must outlive the workload.
  Workload(const ExperimentConfig& experiment, const torch::Device& device,
           const data::Dataset* dataset = nullptr);
  ~Workload();

  // Makes this batch size's data (outside any timed region): synthetic batches once, on the device,
  // or in host memory (pinned for a GPU) when the copy is timed; for a dataset, a shuffled loader.
  // With a chunk below the batch: the even micro-batches (inference: slices) of at most that many samples
  // (micro_batch_sizes; set_micro_batches).
  void prepare_batch(int64_t batch_size);
  // Before each step, untimed: the next batch of a dataset, copied to the device and waited for
  // unless the copy is timed. Nothing for synthetic data.
  void stage();
  // The copy of the staged batch to the device when it is timed, then train: gradients to none,
  // forward, loss, backward, optimizer step; infer: forward under no-grad (in chunks if asked).
  void step();
  // The loss tensor of the last step (train only); reading its value waits for the device.
  const torch::Tensor& last_loss() const { return loss_; }
  // The inputs the next step runs on (staged or prepared).
  const torch::Tensor& staged_inputs() const { return inputs_; }
  // Drops the batch and gradients, e.g. after running out of memory.
  void release_batch();
  // Training only: the steps that follow run their batch as micro-batches of these sizes, which add up
  // to the batch, as gradient accumulation does: each slice's forward (under autocast) and backward on
  // its own, its loss weighted by its share of the batch, then one optimizer step (with the loss
  // scaler's unscale and check where there is one). Empty runs the batch whole again.
  void set_micro_batches(std::vector<int64_t> sizes);
  const std::vector<int64_t>& micro_batches() const { return micro_batches_; }
  // The chunk that the next prepare_batch() runs its batch in (0: whole), in place of the experiment's:
  // chunk: auto's choice for a batch size that does not fit whole, and the search's tries before it.
  void set_chunk(int64_t chunk) { experiment_.chunk = chunk; }

  // Everything a step changes that a later step depends on: weights, buffers (batch-norm statistics),
  // the optimizer's state and the random generators. Extra steps between save_state() and
  // restore_state() (profiled steps) then leave the next batch size exactly as it would have been.
  struct State {
    std::vector<torch::Tensor> parameters, buffers;
    std::string optimizer;
    torch::Tensor cpu_generator, device_generator;
    LossScaler::State loss_scale;
  };
  State save_state();
  void restore_state(const State& state);

  // Untimed staged steps, then waits until the device has finished them. An observer is told of
  // each step once the device has finished it.
  void warm_up(int steps, const StepObserver* observer = nullptr);
  // Waits for the device (a no-op on the CPU, where every op has finished when it returns).
  void synchronize() const;
  const torch::Device& device() const { return device_; }
  models::Network& network() { return *model_; }
  torch::optim::Optimizer* optimizer() { return optimizer_.get(); }
  bool training() const { return experiment_.phase == Phase::Train; }
  // The loss scaler of a training step with loss_scale: dynamic; null otherwise.
  const LossScaler* loss_scaler() const { return scaler_.get(); }

  // A TorchScript file's convolution and linear layers at the experiment's input (ModelSpec's
  // gemm_layers_of); empty for the zoo, whose layer tables analyze reads.
  std::vector<models::GemmLayer> file_gemm_layers() const;

  // Work of one step at this batch size (step_flops).
  double flops_per_step(int64_t batch_size) const {
    return step_flops(experiment_.phase, forward_flops_per_sample_, data_gradient_flops_per_sample_,
                      batch_size);
  }

 private:
  void train_step(const torch::Tensor& inputs, const torch::Tensor& targets);
  void infer_step(const torch::Tensor& inputs);
  bool timed_copy() const;

  ExperimentConfig experiment_;
  const models::ModelSpec* spec_ = nullptr;
  torch::Device device_;
  std::shared_ptr<models::Network> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LossScaler> scaler_;  // training with loss_scale: dynamic
  std::vector<torch::Tensor> parameters_;
  std::vector<int64_t> micro_batches_;  // empty: the batch whole
  double forward_flops_per_sample_ = 0;
  double data_gradient_flops_per_sample_ = 0;
  const data::Dataset* dataset_ = nullptr;
  std::unique_ptr<data::BatchLoader> loader_;
  int64_t epoch_ = 0;
  std::unique_ptr<SyntheticSamples> samples_;  // synthetic data, made at the first batch size
  // The batch a step runs on: on the device, or in host memory when the step copies it.
  torch::Tensor inputs_, targets_, loss_;
};

struct TimedSteps {
  std::vector<double> times_ms;
  std::vector<double> host_ms;  // CPU time of the issuing thread per step
  std::vector<double> losses;  // train only
  // Training with loss scaling: the steps whose optimizer step was skipped (a gradient overflowed), and
  // the scale after the last step.
  std::optional<int64_t> skipped_steps;
  std::optional<double> loss_scale;
};

// The timed loop of every sweep and benchmark: `steps` steps of a prepared workload, each between its
// own two timestamps with nothing else there. The device is synchronised after each stop, outside the
// timed region, so that steps do not overlap; times and losses are read after the loop.
// An observer is told of each step after the device has finished it, outside its timed region.
TimedSteps run_timed_steps(Workload& workload, StepTimer& timer, int steps, const StepObserver* observer = nullptr);

// True for the out-of-memory errors of LibTorch's CUDA and CPU allocators.
bool is_out_of_memory(const std::exception& error);

// "CPU out of memory: tried to allocate ..." without LibTorch's backtrace: the first line of the message.
std::string short_error_message(const std::exception& error);

// An image batch (4-D) laid out as a step with channels_last trains on it: NHWC where asked, else as it is.
torch::Tensor in_memory_format(const torch::Tensor& inputs, bool channels_last);
// A model's 4-D parameters (convolutions' weights) laid out NHWC, as channels_last trains them.
void to_channels_last(torch::nn::Module& model);

// LibTorch's own sentence when it has no kernel for an operation in this precision on this device
// ("\"hardshrink_backward_cpu\" not implemented for 'BFloat16'"), without its backtrace; nullopt for
// any other error. Such a gap is the same at every batch size.
std::optional<std::string> unsupported_operation(const std::exception& error);

}  // namespace batchscope
