#include "models/torchscript.h"

#include <ATen/record_function.h>
#include <torch/script.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/flop_tally.h"
#include "models/model_file.h"

namespace batchscope::models {

bool is_model_file_name(const std::string& name) {
  if (name.find('/') != std::string::npos) return true;
  for (const std::string extension : {".pt", ".pth", ".ts", ".zip", ".torchscript"}) {
    if (name.size() > extension.size() &&
        name.compare(name.size() - extension.size(), extension.size(), extension) == 0)
      return true;
  }
  return false;
}

std::string model_stem(const std::string& name) {
  if (!is_model_file_name(name)) return name;
  const std::string stem = std::filesystem::path(name).stem().string();
  return stem.empty() || stem == "." || stem == ".." ? "model" : stem;
}

namespace {

// LibTorch's messages run over several lines (the TorchScript source, a C++ trace): the first says it.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '.')) line.pop_back();
  return line;
}

std::string sizes_text(const torch::Tensor& t) {
  std::string text = "[";
  for (int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
  return text + "]";
}

// A TorchScript module as a zoo network: its parameters and buffers are registered under names without
// dots (the tensors themselves, so that moving, converting and optimising them acts on the module's).
class ScriptedNetwork : public Network {
 public:
  explicit ScriptedNetwork(torch::jit::Module module) : module_(std::move(module)) {
    std::set<std::string> taken;
    const auto unique = [&taken](std::string name) {
      std::replace(name.begin(), name.end(), '.', '_');
      std::string candidate = name;
      for (int i = 2; !taken.insert(candidate).second; ++i) candidate = name + "_" + std::to_string(i);
      return candidate;
    };
    for (const auto& p : module_.named_parameters()) register_parameter(unique(p.name), p.value, p.value.requires_grad());
    for (const auto& b : module_.named_buffers()) register_buffer(unique(b.name), b.value);
  }

  torch::Tensor forward(torch::Tensor input) override {
    const c10::IValue out = module_.forward({std::move(input)});
    TORCH_CHECK(out.isTensor(), "the TorchScript module's forward returned ", out.tagKind(), ", not a tensor");
    return out.toTensor();
  }

  void train(bool on) override {
    Network::train(on);
    if (module_.hasattr("training")) module_.train(on);  // every module saved from Python has it
  }

 private:
  torch::jit::Module module_;
};

// The FLOPs of the operators that LibTorch runs while a FlopCount lives on this thread: convolutions
// (2 per multiply-add of each output, or each input where transposed; a scripted module reaches them
// through aten::conv2d, a traced one through aten::_convolution directly, and both through the latter)
// and matrix products (mm, addmm, bmm, baddbmm, mv, addmv, dot). Element-wise operators, normalisation,
// pooling and fused attention kernels count nothing.
class FlopCount {
 public:
  FlopCount() {
    total() = 0;
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(start, end)
                                             .needsInputs(true)
                                             .needsOutputs(true)
                                             .scopes({at::RecordScope::FUNCTION}));
  }
  ~FlopCount() { at::removeCallback(handle_); }
  FlopCount(const FlopCount&) = delete;
  FlopCount& operator=(const FlopCount&) = delete;

  double flops() const { return total(); }

 private:
  // What an operator's inputs say, read when it starts (its inputs are no longer there when it ends):
  // the multiply-adds per element of its output, or of its input where a transposed convolution's.
  struct Work : at::ObserverContext {
    double per_element = 0;
    double input_elements = -1;  // >= 0: counted per input element
  };

  static double& total() {
    static thread_local double flops = 0;
    return flops;
  }

  static std::unique_ptr<at::ObserverContext> start(const at::RecordFunction& fn) {
    const std::string name = fn.name();
    const auto inputs = fn.inputs();
    const auto tensor = [&inputs](std::size_t i) {
      return i < inputs.size() && inputs[i].isTensor() ? inputs[i].toTensor() : torch::Tensor();
    };
    auto work = std::make_unique<Work>();
    if (name == "aten::_convolution") {
      const torch::Tensor input = tensor(0), weight = tensor(1);
      if (!input.defined() || !weight.defined() || weight.dim() < 1 || weight.size(0) == 0) return nullptr;
      work->per_element = static_cast<double>(weight.numel()) / static_cast<double>(weight.size(0));
      if (inputs.size() > 6 && inputs[6].isBool() && inputs[6].toBool())
        work->input_elements = static_cast<double>(input.numel());
      return work;
    }
    // A product's multiply-adds per output element: the summed dimension, the right operand's first
    // (a matrix's rows, a vector's length).
    std::size_t right = 0;
    if (name == "aten::mm" || name == "aten::bmm" || name == "aten::mv" || name == "aten::dot") right = 1;
    if (name == "aten::addmm" || name == "aten::baddbmm" || name == "aten::addmv") right = 2;
    if (right == 0) return nullptr;
    const torch::Tensor b = tensor(right);
    if (!b.defined() || b.dim() < 1) return nullptr;
    work->per_element = static_cast<double>(b.dim() == 1 ? b.size(0) : b.size(b.dim() - 2));
    return work;
  }

  static void end(const at::RecordFunction& fn, at::ObserverContext* context) {
    const auto* work = static_cast<const Work*>(context);
    if (work == nullptr) return;
    if (work->input_elements >= 0) {
      total() += 2 * work->per_element * work->input_elements;
      return;
    }
    const std::vector<c10::IValue>& outputs = fn.outputs();
    if (outputs.empty() || !outputs[0].isTensor()) return;
    total() += 2 * work->per_element * static_cast<double>(outputs[0].toTensor().numel());
  }

  at::CallbackHandle handle_;
};

// What one sample on the CPU tells of the module at an input shape.
struct Probe {
  int64_t classes = 0;
  double flops = 0;
  int64_t smallest_train_batch = 1;
};

class ScriptFile {
 public:
  explicit ScriptFile(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw std::invalid_argument("there is no file " + path + "; give the path of a TorchScript file, or a zoo model");
    if (std::filesystem::is_directory(path, ec))
      throw std::invalid_argument(path + " is a directory, not a TorchScript file");
    // Not a device or a pipe, whose reading might never end.
    if (!std::filesystem::is_regular_file(path, ec))
      throw std::invalid_argument(path + " is not a regular file; give the path of a TorchScript file");
    file_.path = path;
    file_.crc32 = file_crc32(path, file_.bytes);
    try {
      module_ = torch::jit::load(path, torch::kCPU);
    } catch (const std::exception& error) {
      throw std::invalid_argument(path + " is not a TorchScript file this LibTorch (" + TORCH_VERSION +
                                  ") can read (" + first_line(error.what()) +
                                  "); save the model with torch.jit.script(model).save(path) or "
                                  "torch.jit.trace(model, example).save(path)");
    }
    if (!module_.find_method("forward").has_value())
      throw std::invalid_argument(path + " holds a TorchScript module without a forward method");
    int64_t parameters = 0;
    for (const torch::Tensor& p : module_.parameters()) parameters += p.numel();
    spec_.name = path;
    spec_.summary = "TorchScript module read from " + path + " (" + std::to_string(parameters) + " parameters)";
    spec_.input_layout = "the module's input without the batch";
    spec_.file = file_;
    spec_.build = [this](const SampleShape&, int64_t) { return std::make_shared<ScriptedNetwork>(copy()); };
    spec_.classes_of = [this](const SampleShape& input) { return probe(input).classes; };
    spec_.forward_flops = [this](const SampleShape& input, int64_t classes) {
      const Probe& p = probe(input);
      if (classes != p.classes) {
        throw std::invalid_argument(file_.path + " returns " + std::to_string(p.classes) + " classes for a " +
                                    shape_text(input) + " sample, not " + std::to_string(classes) +
                                    "; leave classes out, or give " + std::to_string(p.classes));
      }
      return p.flops;
    };
    spec_.smallest_train_batch = [this](const SampleShape& input, int64_t) {
      return probe(input).smallest_train_batch;
    };
    spec_.synthetic_batch = image_batch;
  }

  const ModelSpec& spec() const { return spec_; }

 private:
  static uint32_t file_crc32(const std::string& path, uint64_t& bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::invalid_argument("cannot read " + path + "; check its permissions");
    std::vector<char> buffer(1 << 20);
    uLong crc = crc32(0L, Z_NULL, 0);
    bytes = 0;
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const std::streamsize got = in.gcount();
      if (got <= 0) break;
      crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(got));
      bytes += static_cast<uint64_t>(got);
    }
    return static_cast<uint32_t>(crc);
  }

  // A deep copy whose parameters are leaves that require gradients where the file's do: a copy made
  // with autograd on would be the clone of each, and one made without it requires none.
  torch::jit::Module copy() const {
    torch::jit::Module module;
    {
      torch::NoGradGuard no_grad;
      module = module_.deepcopy();
    }
    const auto originals = module_.parameters();
    auto original = originals.begin();
    for (const torch::Tensor& p : module.parameters()) {
      TORCH_CHECK(original != originals.end(), "the copy of a TorchScript module has more parameters than it");
      p.set_requires_grad((*original).requires_grad());
      ++original;
    }
    return module;
  }

  const Probe& probe(const SampleShape& input) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = probes_.find(input);
    if (found != probes_.end()) return found->second;
    return probes_.emplace(input, measure(input)).first->second;
  }

  // One sample of standard normal values through a copy of the module: in eval mode, counting its FLOPs,
  // for them and its output, then in training mode, where a batch norm may refuse a single value.
  Probe measure(const SampleShape& input) const {
    const std::string sample = "a " + shape_text(input) + " sample";
    torch::jit::Module module = copy();
    if (module.hasattr("training")) module.eval();
    std::vector<int64_t> shape{1};
    shape.insert(shape.end(), input.begin(), input.end());
    const torch::Tensor x = torch::randn(shape);
    torch::NoGradGuard no_grad;
    c10::IValue out;
    Probe p;
    try {
      const FlopCount count;
      out = module.forward({x});
      p.flops = count.flops();
    } catch (const std::exception& error) {
      throw std::invalid_argument(file_.path + "'s forward fails on " + sample + " (" + first_line(error.what()) +
                                  "); give the input shape the module takes, without the batch");
    }
    if (!out.isTensor()) {
      throw std::invalid_argument(file_.path + "'s forward returns " + out.tagKind() + " for " + sample +
                                  ", not one tensor of logits; batchscope trains it with cross-entropy, so its "
                                  "forward must return [batch, classes]");
    }
    const torch::Tensor logits = out.toTensor();
    if (logits.dim() != 2 || logits.size(0) != 1 || logits.size(1) < 1 || !logits.is_floating_point()) {
      throw std::invalid_argument(file_.path + "'s forward returns " + sizes_text(logits) + " for " + sample +
                                  ", not [1, classes] logits; batchscope trains it with cross-entropy, so its "
                                  "forward must return [batch, classes]");
    }
    p.classes = logits.size(1);
    if (!module.hasattr("training")) return p;
    module.train(true);
    try {
      module.forward({x});
    } catch (const std::exception& error) {
      const std::string reason = error.what();
      if (reason.find("more than 1 value per channel") == std::string::npos) {
        throw std::invalid_argument(file_.path + "'s forward fails in training mode on " + sample + " (" +
                                    first_line(reason) + ")");
      }
      p.smallest_train_batch = 2;
    }
    return p;
  }

  ModelFile file_;
  torch::jit::Module module_;
  ModelSpec spec_;
  std::mutex mutex_;
  std::map<SampleShape, Probe> probes_;
};

}  // namespace

const ModelSpec& torchscript_model(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ScriptFile>> files;
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = files.find(path);
  if (found != files.end()) return found->second->spec();
  auto file = std::make_unique<ScriptFile>(path);
  return files.emplace(path, std::move(file)).first->second->spec();
}

}  // namespace batchscope::models
