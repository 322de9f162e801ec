#include "models/torchscript.h"

#include <ATen/record_function.h>
#include <torch/script.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>
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

// What went wrong in a module's forward. The interpreter's message of a module saved from Python opens
// with "The following operation failed", then the TorchScript traceback, and ends with the error itself
// ("RuntimeError: Expected tensor for argument #1 'indices' ..."): its last line, without the type.
std::string forward_failure(const std::string& text) {
  if (text.rfind("The following operation failed", 0) != 0) return first_line(text);
  const size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return first_line(text);
  const size_t newline = text.rfind('\n', end);
  std::string line = text.substr(newline == std::string::npos ? 0 : newline + 1, end + 1 - (newline + 1));
  const size_t type = line.find("Error: ");
  if (type != std::string::npos &&
      std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(type),
                  [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }))
    line.erase(0, type + 7);
  return first_line(line);
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
    std::set<const c10::TensorImpl*> registered;
    for (const auto& p : module_.named_parameters()) {
      register_parameter(unique(p.name), p.value, p.value.requires_grad());
      registered.insert(p.value.unsafeGetTensorImpl());
    }
    for (const auto& b : module_.named_buffers()) {
      register_buffer(unique(b.name), b.value);
      registered.insert(b.value.unsafeGetTensorImpl());
    }
    // A tensor a module holds as a plain attribute (self.mask = torch.ones(...) in Python, neither a
    // parameter nor a buffer) is a buffer here too, so that moving the network to a device moves it.
    for (const auto& a : module_.named_attributes(/*recurse=*/true)) {
      if (!a.value.isTensor()) continue;
      const torch::Tensor& t = a.value.toTensor();
      if (t.defined() && registered.insert(t.unsafeGetTensorImpl()).second)
        register_buffer(unique(a.name), t);
    }
  }

  torch::Tensor forward(torch::Tensor input) override {
    const c10::IValue out = module_.forward({std::move(input)});
    TORCH_CHECK(out.isTensor(), "the TorchScript module's forward returned ", out.tagKind(), ", not a tensor");
    return out.toTensor();
  }

  // [batch, classes] logits against [batch] classes, or [batch, positions, vocabulary] logits against
  // [batch, positions] tokens (FileInput::Tokens).
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    if (output.dim() != 3) return Network::loss(output, targets);
    return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(2)}), targets.reshape(-1));
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
// through aten::conv2d, a traced one through aten::_convolution directly, and both through the latter),
// matrix products (mm, addmm, bmm, baddbmm, mv, addmv, dot) and attention (scaled_dot_product_attention:
// its two products, whichever kernel runs them; the operators inside it count nothing more).
// Element-wise operators, normalisation and pooling count nothing.
class FlopCount {
 public:
  FlopCount() {
    total() = 0;
    inside_attention() = 0;
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
  // the multiply-adds per element of its output, or of its input where a transposed convolution's, or
  // the whole count of an attention.
  struct Work : at::ObserverContext {
    double per_element = 0;
    double input_elements = -1;  // >= 0: counted per input element
    double attention = -1;       // >= 0: an attention's FLOPs
  };

  static double& total() {
    static thread_local double flops = 0;
    return flops;
  }
  // Attentions running on this thread: the products of an unfused one are in its count already.
  static int& inside_attention() {
    static thread_local int depth = 0;
    return depth;
  }

  static std::unique_ptr<at::ObserverContext> start(const at::RecordFunction& fn) {
    const std::string name = fn.name();
    const auto inputs = fn.inputs();
    const auto tensor = [&inputs](std::size_t i) {
      return i < inputs.size() && inputs[i].isTensor() ? inputs[i].toTensor() : torch::Tensor();
    };
    auto work = std::make_unique<Work>();
    if (name == "aten::scaled_dot_product_attention") {
      // query [..., L, E], key [..., S, E], value [..., S, Ev]: query x key^T, then the weights x value.
      const torch::Tensor q = tensor(0), k = tensor(1), v = tensor(2);
      if (!q.defined() || !k.defined() || !v.defined() || q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
        return nullptr;
      const double queries = static_cast<double>(q.numel()) / static_cast<double>(q.size(-1));
      const double keys = static_cast<double>(k.size(-2));
      work->attention = 2 * queries * keys * static_cast<double>(q.size(-1) + v.size(-1));
      ++inside_attention();
      return work;
    }
    if (inside_attention() > 0) return nullptr;
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
    if (work->attention >= 0) {
      --inside_attention();
      total() += work->attention;
      return;
    }
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
  int64_t classes = 0;    // or the vocabulary
  int64_t positions = 0;  // FileInput::Tokens: the output's positions per sample
  double flops = 0;
  int64_t smallest_train_batch = 1;
};

// Synthetic token ids below `vocabulary`: [batch, sequence] inputs and [batch, positions] targets.
Batch token_ids_batch(int64_t batch, int64_t sequence, int64_t positions, int64_t vocabulary) {
  const auto tokens = torch::TensorOptions().dtype(torch::kLong);
  return {torch::randint(vocabulary, {batch, sequence}, tokens),
          torch::randint(vocabulary, {batch, positions}, tokens)};
}

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
    summary_ = "TorchScript module read from " + path + " (" + std::to_string(parameters) + " parameters)";
    specs_[0] = make_spec(FileInput::Float);
    specs_[1] = make_spec(FileInput::Tokens);
  }

  const ModelSpec& spec(FileInput input) const { return specs_[input == FileInput::Tokens ? 1 : 0]; }

 private:
  ModelSpec make_spec(FileInput input) {
    const bool tokens = input == FileInput::Tokens;
    ModelSpec spec;
    spec.name = file_.path;
    spec.file = file_;
    spec.file->input = input;
    spec.summary = summary_ + (tokens ? ", token ids to logits per position" : "");
    spec.input_kind = tokens ? InputKind::Tokens : InputKind::Image;
    spec.sequence_axis = tokens ? 0 : -1;
    spec.input_layout = tokens ? "sequence length" : "the module's input without the batch";
    spec.build = [this](const SampleShape&, int64_t) { return std::make_shared<ScriptedNetwork>(copy()); };
    spec.classes_of = [this, input](const SampleShape& shape) { return probe(input, shape).classes; };
    spec.forward_flops = [this, input](const SampleShape& shape, int64_t classes) {
      const Probe& p = probe(input, shape);
      if (classes != p.classes) {
        throw std::invalid_argument(file_.path + " returns " + std::to_string(p.classes) + " classes for a " +
                                    shape_text(shape) + " sample, not " + std::to_string(classes) +
                                    "; leave classes out, or give " + std::to_string(p.classes));
      }
      return p.flops;
    };
    spec.smallest_train_batch = [this, input](const SampleShape& shape, int64_t) {
      return probe(input, shape).smallest_train_batch;
    };
    if (tokens) {
      spec.synthetic_batch = [this](int64_t batch, const SampleShape& shape, int64_t vocabulary) {
        return token_ids_batch(batch, shape.at(0), probe(FileInput::Tokens, shape).positions, vocabulary);
      };
    } else {
      spec.synthetic_batch = image_batch;
    }
    return spec;
  }

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

  const Probe& probe(FileInput input, const SampleShape& shape) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto key = std::make_pair(input, shape);
    const auto found = probes_.find(key);
    if (found != probes_.end()) return found->second;
    return probes_.emplace(key, measure(input, shape)).first->second;
  }

  // One sample through a copy of the module (standard normal values, or token 0 throughout): in eval
  // mode, counting its FLOPs, for them and its output, then in training mode, where a batch norm may
  // refuse a single value.
  Probe measure(FileInput input, const SampleShape& shape) const {
    const bool tokens = input == FileInput::Tokens;
    const std::string sample = "one sample of " + shape_text(shape) + (tokens ? " tokens" : "");
    if (tokens && shape.size() != 1) {
      throw std::invalid_argument(file_.path +
                                  " takes token ids, so its input is the sequence length alone, not " +
                                  shape_text(shape) + "; give one size, like [128]");
    }
    torch::jit::Module module = copy();
    if (module.hasattr("training")) module.eval();
    const auto batch_of = [&](int64_t batch, bool as_tokens) {
      std::vector<int64_t> sizes{batch};
      sizes.insert(sizes.end(), shape.begin(), shape.end());
      return as_tokens ? torch::zeros(sizes, torch::TensorOptions().dtype(torch::kLong))
                       : torch::randn(sizes);
    };
    const torch::Tensor x = batch_of(1, tokens);
    c10::IValue out;
    Probe p;
    try {
      // With gradients, as in training: the fused inference paths that PyTorch's layers take without
      // them (nn.TransformerEncoderLayer's, nn.MultiheadAttention's) run as one operator, uncounted.
      const FlopCount count;
      out = module.forward({x});
      p.flops = count.flops();
    } catch (const std::exception& error) {
      throw std::invalid_argument(
          file_.path + "'s forward fails on " + sample + " (" + forward_failure(error.what()) + "); " +
          (tokens ? "give the sequence length it takes, or leave input_kind: tokens out "
                    "for a module that takes float values"
                  : other_input_hint(module, batch_of(1, true))));
    }
    torch::NoGradGuard no_grad;
    const std::string wanted = tokens ? "[batch, positions, vocabulary]" : "[batch, classes]";
    const std::string why = "batchscope trains it with cross-entropy" +
                            std::string(tokens ? " at every position" : "") +
                            ", so its forward must return " + wanted;
    if (!out.isTensor()) {
      throw std::invalid_argument(file_.path + "'s forward returns " + out.tagKind() + " for " + sample +
                                  ", not one tensor of logits; " + why);
    }
    const torch::Tensor logits = out.toTensor();
    const int64_t dims = tokens ? 3 : 2;
    if (logits.dim() != dims || logits.size(0) != 1 || logits.size(dims - 1) < 1 ||
        !logits.is_floating_point()) {
      throw std::invalid_argument(file_.path + "'s forward returns " + sizes_text(logits) + " for " + sample +
                                  ", not " + (tokens ? "[1, positions, vocabulary]" : "[1, classes]") +
                                  " logits; " + why);
    }
    p.classes = logits.size(dims - 1);
    if (tokens) {
      p.positions = logits.size(1);
      // A module that puts the sequence first ([positions, batch, vocabulary]) gives [S, 1, V] at batch
      // 1, which reads like a batch-first output: a batch of 2 tells them apart.
      const torch::Tensor two = module.forward({batch_of(2, true)}).toTensor();
      if (two.dim() != 3 || two.size(0) != 2 || two.size(1) != p.positions) {
        throw std::invalid_argument(file_.path + "'s forward returns " + sizes_text(two) +
                                    " for a batch of 2, not [2, " + std::to_string(p.positions) + ", " +
                                    std::to_string(p.classes) + "]; " + why +
                                    ", the batch first (transpose a sequence-first output in the module)");
      }
    }
    if (!module.hasattr("training")) return p;
    module.train(true);
    try {
      module.forward({x});
    } catch (const std::exception& error) {
      const std::string reason = error.what();
      if (reason.find("more than 1 value per channel") == std::string::npos) {
        throw std::invalid_argument(file_.path + "'s forward fails in training mode on " + sample + " (" +
                                    forward_failure(reason) + ")");
      }
      p.smallest_train_batch = 2;
    }
    return p;
  }

  // Where a float input fails, whether token ids would do: the fix names input_kind then.
  static std::string other_input_hint(torch::jit::Module& module, const torch::Tensor& token_ids) {
    const std::string shape_fix = "give the input shape the module takes, without the batch";
    try {
      module.forward({token_ids});
    } catch (const std::exception&) {
      return shape_fix;
    }
    return "it takes token ids: give input_kind: tokens (--input-kind tokens) with the sequence length as "
           "the input";
  }

  ModelFile file_;
  torch::jit::Module module_;
  std::string summary_;
  ModelSpec specs_[2];  // FileInput::Float, FileInput::Tokens
  std::mutex mutex_;
  std::map<std::pair<FileInput, SampleShape>, Probe> probes_;
};

}  // namespace

std::string crc32_text(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

std::optional<uint32_t> crc32_from_text(const std::string& text) {
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.size() != 8 || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

const char* to_string(FileInput input) { return input == FileInput::Tokens ? "tokens" : "float"; }

const ModelSpec& torchscript_model(const std::string& path, FileInput input) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ScriptFile>> files;
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = files.find(path);
  if (found != files.end()) return found->second->spec(input);
  auto file = std::make_unique<ScriptFile>(path);
  return files.emplace(path, std::move(file)).first->second->spec(input);
}

}  // namespace batchscope::models
