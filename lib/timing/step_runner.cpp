#include "lib/timing/step_runner.h"

#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <sstream>

#include "lib/common/micro_batches.h"
#include "lib/device/gpu.h"
#include "lib/timing/autocast.h"
#include "lib/timing/optimizer.h"
#include "models/layer_scope.h"
#include "models/registry.h"

namespace batchscope {
namespace {

// The default random generator of a device, read and set under its lock.
torch::Tensor generator_state(const torch::Device& device) {
  at::Generator generator = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(const torch::Device& device, const torch::Tensor& state) {
  at::Generator generator = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

Workload::Workload(const ExperimentConfig& experiment, const torch::Device& device,
                   const data::Dataset* dataset)
    : experiment_(experiment), device_(device), dataset_(dataset) {
  spec_ = experiment_model(experiment);
  TORCH_CHECK(spec_ != nullptr, "unknown model ", experiment.model, " reached the sweep");
  torch::manual_seed(experiment.seed);
  forward_flops_per_sample_ = spec_->forward_flops(experiment.input_shape, experiment.classes);
  data_gradient_flops_per_sample_ =
      models::data_gradient_flops(*spec_, experiment.input_shape, experiment.classes);
  model_ = spec_->build(experiment.input_shape, experiment.classes);
  model_->to(device_);
  if (experiment.channels_last) to_channels_last(*model_);
  if (experiment.phase == Phase::Train) {
    model_->train();
    parameters_ = model_->parameters();
    optimizer_ = make_optimizer(experiment.optimizer, parameters_);
    if (experiment.loss_scale == LossScale::Dynamic)
      scaler_ = std::make_unique<LossScaler>(device_, experiment.loss_scaler);
  } else {
    model_->eval();
  }
}

Workload::~Workload() = default;

bool Workload::timed_copy() const { return experiment_.transfer == Transfer::Included && device_.is_cuda(); }

void Workload::prepare_batch(int64_t batch_size) {
  release_batch();
  if (experiment_.chunk > 0 && experiment_.chunk < batch_size) {
    // Training: gradient accumulation over even micro-batches of at most `chunk` samples, one optimizer
    // step. Inference: the forward pass over slices of those sizes. Worked out here, once per batch size,
    // not inside a timed step.
    micro_batches_ = micro_batch_sizes(batch_size, experiment_.chunk);
  } else {
    // Whole: not the micro-batches of a chunked size before it (chunk: auto sets chunk 0 for a size
    // that fits, and a smaller batch than those micro-batches would not add up).
    micro_batches_.clear();
  }
  // Each batch size gets the same data stream for a given seed, whatever ran before it.
  const uint64_t seed = experiment_.seed + static_cast<uint64_t>(batch_size);
  if (dataset_ != nullptr) {
    // Every timed step is a whole batch: an epoch's short last batch is dropped, not timed as a full one.
    loader_ = std::make_unique<data::BatchLoader>(*dataset_, batch_size, seed, /*shuffle=*/true, device_,
                                                  /*drop_last=*/true);
    epoch_ = 0;
    loader_->start_epoch(epoch_);
    return;
  }
  if (!samples_) {
    // Kept between batch sizes (up to SyntheticSamples::kKeptBytes) where the data is copied to a GPU,
    // so that after a maxbatch probe of thousands no more than that stays in host memory. On the CPU each
    // batch is made anew, so that a size's memory (what maxbatch and --memory-limit count there) is its own
    // alone.
    samples_ = std::make_unique<SyntheticSamples>(*spec_, experiment_.input_shape, experiment_.classes,
                                                  experiment_.seed,
                                                  device_.is_cuda() ? SyntheticSamples::kKeptBytes : 0);
  }
  // Made on the host and copied, so that the data are the same on every device for a seed.
  const auto where =
      timed_copy() ? torch::TensorOptions().pinned_memory(true) : torch::TensorOptions().device(device_);
  const models::Batch batch = samples_->first(batch_size, where);
  // The steps' own draws (dropout) start from the same state at a batch size, whatever ran before.
  torch::manual_seed(seed);
  targets_ = batch.targets;
  inputs_ = timed_copy() ? batch.inputs : in_memory_format(batch.inputs, experiment_.channels_last);
  if (!timed_copy()) synchronize();
}

void to_channels_last(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters()) {
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

torch::Tensor in_memory_format(const torch::Tensor& inputs, bool channels_last) {
  return channels_last && inputs.dim() == 4 ? inputs.contiguous(at::MemoryFormat::ChannelsLast) : inputs;
}

void Workload::stage() {
  if (!loader_) return;
  data::Batch batch;
  if (!loader_->next_host_batch(batch)) {
    // A new epoch: the loader reshuffles with the next seed.
    loader_->start_epoch(++epoch_);
    TORCH_CHECK(loader_->next_host_batch(batch), "a new epoch gave no batch of ", loader_->batch_size());
  }
  if (timed_copy()) {
    inputs_ = batch.images;
    targets_ = batch.labels;
    return;
  }
  const data::Batch on_device = loader_->to_device(batch);
  inputs_ = in_memory_format(on_device.images, experiment_.channels_last);
  targets_ = on_device.labels;
  synchronize();
}

void Workload::release_batch() {
  loader_.reset();
  inputs_ = torch::Tensor();
  targets_ = torch::Tensor();
  loss_ = torch::Tensor();
  for (auto& p : parameters_) p.mutable_grad().reset();
}

void Workload::step() {
  torch::Tensor inputs = inputs_;
  torch::Tensor targets = targets_;
  if (timed_copy()) {
    // From pinned host memory, asynchronously on the current stream, as a data loader would.
    models::LayerScope scope("step.copy");
    inputs = in_memory_format(inputs.to(device_, /*non_blocking=*/true), experiment_.channels_last);
    // Inference reads no labels: only a training step copies them.
    if (experiment_.phase == Phase::Train) targets = targets.to(device_, /*non_blocking=*/true);
  }
  if (experiment_.phase == Phase::Train) {
    train_step(inputs, targets);
  } else {
    infer_step(inputs);
  }
}

void Workload::set_micro_batches(std::vector<int64_t> sizes) {
  TORCH_CHECK(sizes.empty() || training(), "micro-batches are for training steps");
  for (int64_t size : sizes) TORCH_CHECK(size > 0, "a micro-batch holds at least one sample");
  micro_batches_ = std::move(sizes);
}

void Workload::train_step(const torch::Tensor& inputs, const torch::Tensor& targets) {
  using models::LayerScope;
  {
    // Gradients set to none (not zero-filled) on every LibTorch version, as PyTorch 2 does by default.
    LayerScope scope("step.zero_grad");
    for (auto& p : parameters_) p.mutable_grad().reset();
  }
  const int64_t batch = inputs.size(0);
  // One micro-batch is the batch itself: the step is the undivided one, to the operation.
  const bool whole = micro_batches_.size() <= 1;
  TORCH_CHECK(micro_batches_.size() != 1 || micro_batches_.front() == batch, "the micro-batch of ",
              micro_batches_.front(), " is not the batch of ", batch);
  const std::size_t count = whole ? 1 : micro_batches_.size();
  torch::Tensor loss;
  int64_t start = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const int64_t size = whole ? batch : micro_batches_[i];
    TORCH_CHECK(start + size <= batch, "the micro-batches add up to more than the batch of ", batch);
    torch::Tensor part;
    {
      AutocastScope autocast(experiment_.precision, device_);
      torch::Tensor output;
      {
        LayerScope scope("step.forward");
        output = model_->forward(whole ? inputs : inputs.narrow(0, start, size));
      }
      LayerScope scope("step.loss");
      part = model_->loss(output, whole ? targets : targets.narrow(0, start, size));
      // Each slice's mean loss weighted by its share, so the gradients add up to the batch's.
      if (!whole) part = part * (static_cast<double>(size) / static_cast<double>(batch));
    }
    {
      LayerScope scope("step.backward");
      if (scaler_) {
        scaler_->scale(part).backward();
      } else {
        part.backward();
      }
    }
    // Keep the value only: each slice's autograd graph is torn down here, inside the step.
    loss = loss.defined() ? loss + part.detach() : part.detach();
    start += size;
  }
  TORCH_CHECK(start == batch, "the micro-batches add up to ", start, ", not the batch of ", batch);
  {
    // With loss scaling this also holds the unscale, the overflow check and the scale's update.
    LayerScope scope("step.optimizer");
    if (scaler_) {
      scaler_->step(*optimizer_, parameters_);
    } else {
      optimizer_->step();
    }
  }
  loss_ = loss;
}

void Workload::infer_step(const torch::Tensor& inputs) {
  torch::NoGradGuard no_grad;
  AutocastScope autocast(experiment_.precision, device_);
  models::LayerScope scope("step.forward");
  if (!micro_batches_.empty()) {
    for (const torch::Tensor& part : inputs.split_with_sizes(micro_batches_)) model_->forward(part);
    return;
  }
  model_->forward(inputs);
}

Workload::State Workload::save_state() {
  torch::NoGradGuard no_grad;
  State state;
  // Kept in host memory: a copy on the device would take the memory of the largest batch sizes' steps.
  const auto host_copy = [](const torch::Tensor& t) {
    return t.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
  };
  for (const torch::Tensor& p : model_->parameters()) state.parameters.push_back(host_copy(p));
  for (const torch::Tensor& b : model_->buffers()) state.buffers.push_back(host_copy(b));
  if (optimizer_) {
    torch::serialize::OutputArchive archive;
    optimizer_->save(archive);
    std::ostringstream bytes;
    archive.save_to(bytes);
    state.optimizer = bytes.str();
  }
  state.cpu_generator = generator_state(torch::Device(torch::kCPU));
  if (device_.is_cuda()) state.device_generator = generator_state(device_);
  if (scaler_) state.loss_scale = scaler_->save();
  return state;
}

void Workload::restore_state(const State& state) {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (torch::Tensor& p : model_->parameters()) p.copy_(state.parameters.at(i++));
  i = 0;
  for (torch::Tensor& b : model_->buffers()) b.copy_(state.buffers.at(i++));
  if (optimizer_) {
    torch::serialize::InputArchive archive;
    std::istringstream bytes(state.optimizer);
    archive.load_from(bytes, device_);
    optimizer_->load(archive);
  }
  set_generator_state(torch::Device(torch::kCPU), state.cpu_generator);
  if (state.device_generator.defined()) set_generator_state(device_, state.device_generator);
  if (scaler_) scaler_->restore(state.loss_scale);
  for (auto& p : parameters_) p.mutable_grad().reset();
  synchronize();
}

std::vector<models::GemmLayer> Workload::file_gemm_layers() const {
  if (!spec_->gemm_layers_of) return {};
  return spec_->gemm_layers_of(experiment_.input_shape);
}

void Workload::warm_up(int steps, const StepObserver* observer) {
  for (int i = 0; i < steps; ++i) {
    stage();
    step();
    if (observer != nullptr) {
      synchronize();  // the observer is told of finished steps; untimed here, so waiting costs nothing
      (*observer)(StepPart::WarmUp, i + 1, steps);
    }
  }
  synchronize();
}

void Workload::synchronize() const {
  if (device_.is_cuda()) gpu::synchronize(device_.index());
}

TimedSteps run_timed_steps(Workload& workload, StepTimer& timer, int steps, const StepObserver* observer) {
  const auto n = static_cast<std::size_t>(steps);
  const bool train = workload.training();
  // Each step's loss read to the host once the step has ended, outside the timer: kept as tensors until
  // after the loop, they would hold one allocation per step on the device, in the size's peak memory.
  std::vector<double> losses(train ? n : 0);
  // The issuing thread's CPU time, read just outside the timer's own two timestamps.
  std::vector<timespec> cpu_start(n), cpu_stop(n);
  const LossScaler* scaler = workload.loss_scaler();
  const int64_t skipped_before = scaler != nullptr ? scaler->skipped_steps() : 0;
  timer.reserve(steps);
  for (std::size_t i = 0; i < n; ++i) {
    const int step = static_cast<int>(i);
    workload.stage();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_start[i]);
    timer.start(step);
    workload.step();
    timer.stop(step);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_stop[i]);
    workload.synchronize();
    if (train) losses[i] = workload.last_loss().item<double>();
    if (observer != nullptr) (*observer)(StepPart::Timed, step + 1, steps);
  }
  TimedSteps out;
  out.times_ms.resize(n);
  out.host_ms.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.times_ms[i] = timer.elapsed_ms(static_cast<int>(i));
    out.host_ms[i] = static_cast<double>(cpu_stop[i].tv_sec - cpu_start[i].tv_sec) * 1e3 +
                     static_cast<double>(cpu_stop[i].tv_nsec - cpu_start[i].tv_nsec) / 1e6;
  }
  out.losses = std::move(losses);
  if (scaler != nullptr) {
    out.skipped_steps = scaler->skipped_steps() - skipped_before;
    out.loss_scale = scaler->current_scale();
  }
  return out;
}

std::optional<std::string> unsupported_operation(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  if (torch_error == nullptr) return std::nullopt;
  const std::string what = torch_error->what_without_backtrace();
  const bool not_implemented = dynamic_cast<const c10::NotImplementedError*>(&error) != nullptr ||
                               what.find("not implemented for") != std::string::npos;
  if (!not_implemented) return std::nullopt;
  return what.substr(0, what.find('\n'));
}

std::string short_error_message(const std::exception& error) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&error);
  const std::string message = c10_error != nullptr ? c10_error->what_without_backtrace() : error.what();
  return message.substr(0, message.find('\n'));
}

bool is_out_of_memory(const std::exception& error) {
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) return true;
  const char* what = error.what();
  return std::strstr(what, "out of memory") != nullptr ||
         std::strstr(what, "can't allocate memory") != nullptr ||
         std::strstr(what, "Tried to allocate") != nullptr;
}

}  // namespace batchscope
