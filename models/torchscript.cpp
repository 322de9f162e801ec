#include "models/torchscript.h"

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
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "lib/common/words.h"
#include "models/flop_tally.h"
#include "models/model_file.h"
#include "models/operator_flops.h"

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

std::string sizes_text(c10::IntArrayRef sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

// The logits in what a forward returns: the tensor itself, the first element of a tuple or a list (a
// Hugging Face model traced with torchscript=True returns (logits, ...)), or a dict's "logits" entry.
// Undefined where there is none.
torch::Tensor logits_of(const c10::IValue& out) {
  if (out.isTensor()) return out.toTensor();
  if (out.isTuple()) {
    const auto& elements = out.toTupleRef().elements();
    if (!elements.empty() && elements[0].isTensor()) return elements[0].toTensor();
  } else if (out.isList()) {
    const auto elements = out.toListRef();
    if (!elements.empty() && elements[0].isTensor()) return elements[0].toTensor();
  } else if (out.isGenericDict()) {
    for (const auto& item : out.toGenericDict()) {
      if (item.key().isString() && item.key().toStringRef() == "logits" && item.value().isTensor())
        return item.value().toTensor();
    }
  }
  return {};
}

// What batchscope passes a forward argument after the first, the input: a token model's required
// argument named as a mask (attention_mask) gets ones, one named as token types or segments
// (token_type_ids) zeros, both int64 of the token ids' sizes, as a tokenizer gives them for sequences
// without padding; one named position_ids each row's positions 0, 1, ...; an argument with a default,
// followed by a required one, its default. A padding mask (key_padding_mask) is not filled, its ones
// would mean padding, nor a head mask (head_mask), whose shape is the heads'.
struct Argument {
  enum class Fill { Ones, Zeros, Positions, Default, None } fill = Fill::None;  // None: cannot be filled
  std::string name;
  c10::IValue default_value;
};

// What an argument is given, as records say it.
std::string given_text(const Argument& a) {
  switch (a.fill) {
    case Argument::Fill::Ones:
      return "ones";
    case Argument::Fill::Zeros:
      return "zeros";
    case Argument::Fill::Positions:
      return "positions";
    case Argument::Fill::Default: {
      std::ostringstream value;
      value << a.default_value;
      return "its default (" + value.str() + ")";
    }
    case Argument::Fill::None:
      break;
  }
  return "nothing";
}

// The forward's arguments after the input, up to its last required one.
std::vector<Argument> arguments_after_input(const c10::FunctionSchema& schema) {
  const auto& all = schema.arguments();  // self first
  std::size_t end = all.size();
  while (end > 2 && all[end - 1].default_value().has_value()) --end;
  std::vector<Argument> arguments;
  for (std::size_t i = 2; i < end; ++i) {
    Argument a;
    a.name = all[i].name();
    const std::string lower = lowercase(a.name);
    if (all[i].default_value().has_value()) {
      a.fill = Argument::Fill::Default;
      a.default_value = *all[i].default_value();
    } else if (lower.find("mask") != std::string::npos && lower.find("pad") == std::string::npos &&
               lower.find("head") == std::string::npos) {
      a.fill = Argument::Fill::Ones;
    } else if (lower.find("token_type") != std::string::npos || lower.find("segment") != std::string::npos) {
      a.fill = Argument::Fill::Zeros;
    } else if (lower == "position_ids") {
      a.fill = Argument::Fill::Positions;
    }
    arguments.push_back(std::move(a));
  }
  return arguments;
}

// The forward's inputs for a batch: the input, then each argument after it. The ones, zeros and positions
// are kept for the largest batch seen and given as its first rows (a view), so that a step allocates none.
class ForwardInputs {
 public:
  explicit ForwardInputs(std::vector<Argument> arguments) : arguments_(std::move(arguments)) {}

  std::vector<c10::IValue> operator()(const torch::Tensor& input) {
    std::vector<c10::IValue> inputs{input};
    for (const Argument& a : arguments_) {
      TORCH_CHECK(a.fill != Argument::Fill::None, "batchscope cannot fill the forward's argument ", a.name);
      if (a.fill == Argument::Fill::Default) {
        inputs.push_back(a.default_value);
      } else {
        inputs.push_back(filled(kept_[static_cast<int>(a.fill)], input, a.fill));
      }
    }
    return inputs;
  }

 private:
  static torch::Tensor filled(torch::Tensor& kept, const torch::Tensor& like, Argument::Fill fill) {
    const bool fits = kept.defined() && kept.device() == like.device() && kept.dim() == like.dim() &&
                      like.dim() > 0 && kept.size(0) >= like.size(0) &&
                      kept.sizes().slice(1) == like.sizes().slice(1);
    if (!fits) {
      const auto options = like.options().dtype(torch::kLong);
      if (fill == Argument::Fill::Positions) {
        kept = torch::arange(like.size(-1), options).expand(like.sizes()).contiguous();
      } else {
        kept = torch::full(like.sizes(), fill == Argument::Fill::Ones ? 1 : 0, options);
      }
    }
    return kept.size(0) == like.size(0) ? kept : kept.narrow(0, 0, like.size(0));
  }

  std::vector<Argument> arguments_;
  torch::Tensor kept_[3];  // by Argument::Fill: ones, zeros, positions
};

// A TorchScript module as a zoo network: its parameters and buffers are registered under names without
// dots (the tensors themselves, so that moving, converting and optimising them acts on the module's).
class ScriptedNetwork : public Network {
 public:
  ScriptedNetwork(torch::jit::Module module, std::vector<Argument> arguments)
      : module_(std::move(module)), inputs_(std::move(arguments)) {
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
    const c10::IValue out = module_.forward(inputs_(input));
    torch::Tensor logits = logits_of(out);
    TORCH_CHECK(logits.defined(), "the TorchScript module's forward returned ", out.tagKind(),
                ", not logits");
    return logits;
  }

  // [batch, classes] logits against [batch] classes, or [batch, positions, vocabulary] logits against
  // [batch, positions] tokens (a language model).
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
  ForwardInputs inputs_;
};

// What one sample on the CPU tells of the module at an input shape.
struct Probe {
  int64_t classes = 0;    // or the vocabulary
  int64_t positions = 0;  // FileInput::Tokens: the output's positions per sample; 0 for one per sequence
  double flops = 0;
  int64_t smallest_train_batch = 1;
  std::vector<GemmLayer> gemm_layers;
  double data_gradient_flops = 0;  // FlopCount::data_gradient_flops
};

// Synthetic token ids below `ids`, [batch, sequence], and their targets below `classes`: [batch,
// positions] tokens, or [batch] classes where the output is one per sequence (positions 0).
Batch token_ids_batch(int64_t batch, int64_t sequence, int64_t positions, int64_t ids, int64_t classes) {
  const auto tokens = torch::TensorOptions().dtype(torch::kLong);
  torch::Tensor input = torch::randint(ids, {batch, sequence}, tokens);
  if (positions == 0) return {std::move(input), torch::randint(classes, {batch}, tokens)};
  return {std::move(input), torch::randint(classes, {batch, positions}, tokens)};
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
    if (!module_.find_method("forward").has_value()) {
      // What batchscope train writes (weights in a module archive) reads as exactly this.
      throw std::invalid_argument(
          path +
          " holds a TorchScript module without a forward method, such as a batchscope "
          "train checkpoint (weights only); evaluate a checkpoint with batchscope eval "
          "--checkpoint DIR, or save a model with torch.jit.script(model).save(path)");
    }
    const c10::FunctionSchema& schema = module_.get_method("forward").function().getSchema();
    if (schema.arguments().size() < 2) {
      throw std::invalid_argument(path +
                                  "'s forward takes no input; batchscope gives it a batch, so save a "
                                  "module whose forward takes one");
    }
    for (std::size_t i = 1; i < schema.arguments().size(); ++i)
      argument_names_.push_back(schema.arguments()[i].name());
    arguments_ = arguments_after_input(schema);
    int64_t parameters = 0;
    for (const torch::Tensor& p : module_.parameters()) parameters += p.numel();
    summary_ = "TorchScript module read from " + path + " (" + std::to_string(parameters) + " parameters)";
  }

  // The spec for an input kind, and for token ids the vocab they lie below (0: the output's).
  const ModelSpec& spec(FileInput input, int64_t vocab) {
    const auto key = std::make_pair(input, input == FileInput::Tokens ? vocab : 0);
    std::unique_ptr<ModelSpec>& spec = specs_[key];
    if (!spec) spec = std::make_unique<ModelSpec>(make_spec(key.first, key.second));
    return *spec;
  }

 private:
  ModelSpec make_spec(FileInput input, int64_t vocab) {
    const bool tokens = input == FileInput::Tokens;
    ModelSpec spec;
    spec.name = file_.path;
    spec.file = file_;
    spec.file->input = input;
    spec.file->vocab = vocab;
    for (const Argument& a : arguments_) {
      if (a.fill == Argument::Fill::None) continue;  // refused when the module is probed
      spec.file->arguments.push_back({a.name, given_text(a)});
    }
    spec.summary = summary_ + (tokens ? ", token ids to logits" : "");
    spec.input_kind = tokens ? InputKind::Tokens : InputKind::Image;
    spec.sequence_axis = tokens ? 0 : -1;
    spec.input_layout = tokens ? "sequence length" : "the module's input without the batch";
    spec.build = [this](const SampleShape&, int64_t) {
      return std::make_shared<ScriptedNetwork>(copy(), arguments_);
    };
    spec.classes_of = [this, input, vocab](const SampleShape& shape) { return classes(input, vocab, shape); };
    spec.forward_flops = [this, input, vocab](const SampleShape& shape, int64_t classes_given) {
      const int64_t returned = classes(input, vocab, shape);
      if (classes_given != returned) {
        throw std::invalid_argument(file_.path + " returns " + std::to_string(returned) + " classes for " +
                                    sample_text(input, shape) + ", not " + std::to_string(classes_given) +
                                    "; leave classes out, or give " + std::to_string(returned));
      }
      return probe(input, shape).flops;
    };
    spec.smallest_train_batch = [this, input](const SampleShape& shape, int64_t) {
      return probe(input, shape).smallest_train_batch;
    };
    spec.gemm_layers_of = [this, input](const SampleShape& shape) { return probe(input, shape).gemm_layers; };
    spec.data_gradient_flops = [this, input](const SampleShape& shape, int64_t) {
      return probe(input, shape).data_gradient_flops;
    };
    if (tokens) {
      spec.synthetic_batch = [this, vocab](int64_t batch, const SampleShape& shape, int64_t classes) {
        return token_ids_batch(batch, shape.at(0), probe(FileInput::Tokens, shape).positions,
                               vocab > 0 ? vocab : classes, classes);
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

  static std::string sample_text(FileInput input, const SampleShape& shape) {
    return "one sample of " + shape_text(shape) + (input == FileInput::Tokens ? " tokens" : "");
  }

  const Probe& probe(FileInput input, const SampleShape& shape) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto key = std::make_pair(input, shape);
    const auto found = probes_.find(key);
    if (found != probes_.end()) return found->second;
    return probes_.emplace(key, measure(input, shape)).first->second;
  }

  // The output's class count (a language model's vocabulary). A sequence classifier's token ids need a
  // vocab, which its output does not tell; a vocab given must be one the module takes: one forward with
  // the largest id throughout, once per vocab and shape.
  int64_t classes(FileInput input, int64_t vocab, const SampleShape& shape) {
    const Probe& p = probe(input, shape);
    if (input != FileInput::Tokens) return p.classes;
    if (vocab == 0) {
      if (p.positions > 0) return p.classes;
      throw VocabError(
          file_.path + " returns one vector of " + std::to_string(p.classes) +
          " logits per sequence (a sequence classifier), so batchscope cannot tell which token ids it takes; "
          "give vocab: N (--vocab N), the number of token ids its embedding takes" +
          embedding_hint());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!vocabs_checked_.insert(std::make_pair(vocab, shape)).second) return p.classes;
    torch::jit::Module module = copy();
    if (module.hasattr("training")) module.eval();
    ForwardInputs inputs(arguments_);
    try {
      torch::NoGradGuard no_grad;
      module.forward(
          inputs(torch::full({1, shape.at(0)}, vocab - 1, torch::TensorOptions().dtype(torch::kLong))));
    } catch (const std::exception& error) {
      vocabs_checked_.erase(std::make_pair(vocab, shape));
      throw VocabError(file_.path + "'s forward fails on token id " + std::to_string(vocab - 1) + " (" +
                       forward_failure(error.what()) + "), so it takes fewer than vocab " +
                       std::to_string(vocab) + " token ids; give the number its embedding takes" +
                       embedding_hint());
    }
    return p.classes;
  }

  // " (its parameter embeddings.word_embeddings.weight has 30522 rows)": the first matrix whose name
  // says an embedding, a word's or a token's where there is one. Empty where none does.
  std::string embedding_hint() const {
    std::string name;
    int64_t rows = 0;
    for (const auto& p : module_.named_parameters()) {
      const std::string lower = lowercase(p.name);
      if (p.value.dim() != 2 || lower.find("emb") == std::string::npos) continue;
      const bool words = lower.find("word") != std::string::npos || lower.find("tok") != std::string::npos;
      if (name.empty() || words) {
        name = p.name;
        rows = p.value.size(0);
      }
      if (words) break;
    }
    return name.empty() ? "" : " (its parameter " + name + " has " + std::to_string(rows) + " rows)";
  }

  // Where the forward takes a required argument after the input that batchscope cannot fill: any, for a
  // module of float values; for token ids, one that is neither a mask nor token types.
  void check_arguments(FileInput input) const {
    const bool tokens = input == FileInput::Tokens;
    // Whether a token model's arguments are among them: a float module's fix names input_kind then.
    const bool fillable = std::any_of(arguments_.begin(), arguments_.end(), [](const Argument& a) {
      return a.fill != Argument::Fill::Default && a.fill != Argument::Fill::None;
    });
    for (const Argument& a : arguments_) {
      if (a.fill == Argument::Fill::Default) continue;
      if (tokens && a.fill != Argument::Fill::None) continue;
      if (tokens) {
        throw std::invalid_argument(
            file_.path + "'s forward takes " + listed(argument_names_) +
            "; after the token ids batchscope gives only an attention mask (ones, to an argument whose name "
            "holds \"mask\" and neither \"pad\" nor \"head\"), token types (zeros, \"token_type\" or "
            "\"segment\") and position_ids (0, 1, ...), not " +
            a.name + ": give " + a.name + " a default, or save a module that makes it");
      }
      throw std::invalid_argument(file_.path + "'s forward takes " + listed(argument_names_) +
                                  ", and batchscope gives a module of float values one tensor; give the "
                                  "arguments after " +
                                  argument_names_.front() + " defaults" +
                                  (fillable ? ", or give input_kind: tokens (--input-kind tokens) where " +
                                                  argument_names_.front() + " is token ids"
                                            : ""));
    }
  }

  // One sample through a copy of the module (standard normal values, or token 0 throughout): in eval
  // mode, counting its FLOPs, for them and its output, then in training mode, where a batch norm may
  // refuse a single value.
  Probe measure(FileInput input, const SampleShape& shape) const {
    const bool tokens = input == FileInput::Tokens;
    const std::string sample = sample_text(input, shape);
    if (tokens && shape.size() != 1) {
      throw std::invalid_argument(file_.path +
                                  " takes token ids, so its input is the sequence length alone, not " +
                                  shape_text(shape) + "; give one size, like [128]");
    }
    check_arguments(input);
    torch::jit::Module module = copy();
    if (module.hasattr("training")) module.eval();
    ForwardInputs inputs(arguments_);
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
      out = module.forward(inputs(x));
      p.flops = count.flops();
      p.gemm_layers = count.layers();
      p.data_gradient_flops = count.data_gradient_flops();
    } catch (const std::exception& error) {
      throw std::invalid_argument(
          file_.path + "'s forward fails on " + sample + " (" + forward_failure(error.what()) + "); " +
          (tokens ? "give the sequence length it takes, or leave input_kind: tokens out "
                    "for a module that takes float values"
                  : other_input_hint(module, batch_of(1, true))));
    }
    torch::NoGradGuard no_grad;
    const std::string wanted = tokens
                                   ? "[batch, positions, vocabulary] (a language model) or [batch, classes] "
                                     "(a sequence classifier)"
                                   : "[batch, classes]";
    const std::string why = "batchscope trains it with cross-entropy, so its forward must return " + wanted;
    const torch::Tensor logits = logits_of(out);
    if (!logits.defined()) {
      throw std::invalid_argument(
          file_.path + "'s forward returns " + out.tagKind() + " for " + sample +
          ", with no logits in it (a tensor, a tuple or list that begins with one, or a "
          "dict with \"logits\"); " +
          why);
    }
    const bool shaped = logits.dim() == 2 || (tokens && logits.dim() == 3);
    if (!shaped || logits.size(0) != 1 || logits.size(-1) < 1 || !logits.is_floating_point()) {
      throw std::invalid_argument(
          file_.path + "'s forward returns " + sizes_text(logits.sizes()) + " for " + sample + ", not " +
          (tokens ? "[1, positions, vocabulary] or [1, classes]" : "[1, classes]") + " logits; " + why);
    }
    p.classes = logits.size(-1);
    if (tokens) {
      p.positions = logits.dim() == 3 ? logits.size(1) : 0;
      // A module that puts the sequence first ([positions, batch, vocabulary]) gives [S, 1, V] at batch
      // 1, which reads like a batch-first output: a batch of 2 tells them apart.
      const torch::Tensor two = logits_of(module.forward(inputs(batch_of(2, true))));
      const std::vector<int64_t> expected = p.positions > 0 ? std::vector<int64_t>{2, p.positions, p.classes}
                                                            : std::vector<int64_t>{2, p.classes};
      if (!two.defined() || two.sizes() != c10::IntArrayRef(expected)) {
        throw std::invalid_argument(file_.path + "'s forward returns " +
                                    (two.defined() ? sizes_text(two.sizes()) : "no logits") +
                                    " for a batch of 2, not " + sizes_text(expected) + "; " + why +
                                    ", the batch first (transpose a sequence-first output in the module)");
      }
    }
    if (!module.hasattr("training")) return p;
    module.train(true);
    try {
      module.forward(inputs(x));
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
  std::string other_input_hint(torch::jit::Module& module, const torch::Tensor& token_ids) const {
    const std::string shape_fix = "give the input shape the module takes, without the batch";
    try {
      ForwardInputs inputs(arguments_);
      module.forward(inputs(token_ids));
    } catch (const std::exception&) {
      return shape_fix;
    }
    return "it takes token ids: give input_kind: tokens (--input-kind tokens) with the sequence length as "
           "the input";
  }

  ModelFile file_;
  torch::jit::Module module_;
  std::string summary_;
  std::vector<std::string> argument_names_;                                    // the forward's, self left out
  std::vector<Argument> arguments_;                                            // after the input
  std::map<std::pair<FileInput, int64_t>, std::unique_ptr<ModelSpec>> specs_;  // by input kind and vocab
  std::mutex mutex_;
  std::map<std::pair<FileInput, SampleShape>, Probe> probes_;
  std::set<std::pair<int64_t, SampleShape>> vocabs_checked_;
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

const ModelSpec& torchscript_model(const std::string& path, FileInput input, int64_t vocab) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<ScriptFile>> files;
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = files.find(path);
  if (found != files.end()) return found->second->spec(input, vocab);
  auto file = std::make_unique<ScriptFile>(path);
  return files.emplace(path, std::move(file)).first->second->spec(input, vocab);
}

}  // namespace batchscope::models
