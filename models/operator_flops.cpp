#include "models/operator_flops.h"

#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "models/module_hierarchy.h"

namespace batchscope::models {
namespace {

// What an operator's inputs say, read when it starts (its inputs are no longer there when it ends):
// the multiply-adds per element of its output, or of its input where a transposed convolution's, or
// the whole count of an attention.
struct Work : at::ObserverContext {
  double per_element = 0;
  double input_elements = -1;  // >= 0: counted per input element
  double attention = -1;       // >= 0: an attention's FLOPs
  // A convolution's or a matrix product's GEMM, with the module it ran in (name empty where none); its
  // output rows are filled in at its end.
  std::optional<GemmLayer> layer;
  bool convolution = false;  // its output's rows are the pixels after [batch, channels]
  // Its input needs no gradient (the data itself, or what only the data made): a training step computes
  // none through it, so its data-gradient GEMM is skipped.
  bool input_without_gradient = false;
};

// The elements of a tensor's sizes after the first two: a convolution's pixels, or its kernel's.
int64_t spatial(const torch::Tensor& t) {
  int64_t elements = 1;
  for (int64_t d = 2; d < t.dim(); ++d) elements *= t.size(d);
  return elements;
}

double& total() {
  static thread_local double flops = 0;
  return flops;
}
std::vector<GemmLayer>& ran() {
  static thread_local std::vector<GemmLayer> layers;
  return layers;
}
double& skipped_data_gradients() {
  static thread_local double flops = 0;
  return flops;
}
// Attentions running on this thread: the products of an unfused one are in its count already.
int& inside_attention() {
  static thread_local int depth = 0;
  return depth;
}

// A GEMM of the module that TorchScript's interpreter runs now.
GemmLayer gemm_in_module() {
  GemmLayer g;
  g.name = module_path(torch::jit::currentModuleHierarchy());
  return g;
}

std::unique_ptr<at::ObserverContext> start(const at::RecordFunction& fn) {
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
    const bool transposed = inputs.size() > 6 && inputs[6].isBool() && inputs[6].toBool();
    if (transposed) work->input_elements = static_cast<double>(input.numel());
    // A convolution of 1, 2 or 3 dimensions, batched: one implicit GEMM whose rows are its pixels (a
    // transposed one's shape is left out).
    if (!transposed && input.dim() >= 3 && input.dim() <= 5 && weight.dim() == input.dim() &&
        weight.size(1) > 0 && input.size(1) % weight.size(1) == 0) {
      GemmLayer g = gemm_in_module();
      g.groups = input.size(1) / weight.size(1);
      g.in = weight.size(1);
      g.n = weight.size(0) / g.groups;
      g.kernel_area = spatial(weight);
      g.k = g.in * g.kernel_area;
      g.input_rows = spatial(input);
      work->layer = g;
      work->convolution = true;
      work->input_without_gradient = !input.requires_grad();
    }
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
  // A linear layer's product: inputs times a [in, out] matrix, the weight transposed.
  if ((name == "aten::mm" || name == "aten::addmm") && b.dim() == 2) {
    GemmLayer g = gemm_in_module();
    g.in = b.size(0);
    g.k = g.in;
    g.n = b.size(1);
    work->layer = g;
    const torch::Tensor a = tensor(right - 1);
    work->input_without_gradient = a.defined() && !a.requires_grad();
  }
  return work;
}

void end(const at::RecordFunction& fn, at::ObserverContext* context) {
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
  const torch::Tensor output = outputs[0].toTensor();
  total() += 2 * work->per_element * static_cast<double>(output.numel());
  if (!work->layer || output.dim() < 2 || output.size(0) == 0) return;
  GemmLayer g = *work->layer;
  if (work->convolution) {
    g.rows = spatial(output);  // a convolution's output pixels
  } else {
    // A product's rows for the one sample (a sequence's positions, or 1).
    g.rows = g.n > 0 ? output.numel() / g.n : 0;
    g.input_rows = g.rows;
  }
  // An empty GEMM has no rate (and a record refuses its sizes).
  if (g.rows < 1 || g.input_rows < 1 || g.n < 1 || g.k < 1) return;
  if (work->input_without_gradient) skipped_data_gradients() += g.gemm_flops();
  ran().push_back(g);
}

}  // namespace

FlopCount::FlopCount() {
  total() = 0;
  skipped_data_gradients() = 0;
  inside_attention() = 0;
  ran().clear();
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(start, end)
                                           .needsInputs(true)
                                           .needsOutputs(true)
                                           .scopes({at::RecordScope::FUNCTION}));
}

FlopCount::~FlopCount() { at::removeCallback(handle_); }

double FlopCount::flops() const { return total(); }

double FlopCount::data_gradient_flops() const { return skipped_data_gradients(); }

std::vector<GemmLayer> FlopCount::layers() const {
  std::map<std::string, int> runs;
  for (const GemmLayer& l : ran()) ++runs[l.name];
  std::vector<GemmLayer> out;
  for (const GemmLayer& l : ran()) {
    if (l.name.empty() || l.name == kDifferentiableGraph || runs[l.name] != 1) continue;
    out.push_back(l);
    out.back().first = &l == &ran().front();
  }
  return out;
}

}  // namespace batchscope::models
