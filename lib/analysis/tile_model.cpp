#include "lib/analysis/tile_model.h"

#include <algorithm>
#include <regex>
#include <stdexcept>

#include "lib/common/statistics.h"
#include "models/flop_tally.h"
#include "models/registry.h"

namespace batchscope {
namespace {

// Walks a plan as the network registers it, carrying the activation shape and each layer's module name.
void collect(const models::Layer& layer, const std::string& path, models::FlopTally& shape,
             std::vector<GemmLayer>& out) {
  using Kind = models::Layer::Kind;
  if (layer.kind == Kind::kStack) {
    models::FlopTally shortcut(shape.shape());
    for (std::size_t i = 0; i < layer.children.size(); ++i) {
      const models::Layer& child = layer.children[i];
      const std::string name = child.name.empty() ? std::to_string(i) : child.name;
      collect(child, path.empty() ? name : path + "." + name, shape, out);
    }
    for (std::size_t i = 0; i < layer.shortcut.size(); ++i) {
      const models::Layer& child = layer.shortcut[i];
      const std::string name = child.name.empty() ? std::to_string(i) : child.name;
      collect(child, path.empty() ? name : path + "." + name, shortcut, out);
    }
    if (layer.skip) shape.absorb(shortcut);
    return;
  }
  const std::vector<int64_t> in = shape.shape();
  models::tally_layer(shape, layer);
  const std::vector<int64_t>& outs = shape.shape();
  GemmLayer g;
  g.name = path;
  g.first = out.empty();
  if (layer.kind == Kind::kConv) {
    g.groups = layer.groups;
    g.in = in.at(0) / layer.groups;
    g.n = layer.out / layer.groups;
    g.kernel_area = layer.kernel * layer.kernel;
    g.k = g.in * g.kernel_area;
    g.rows = outs.at(1) * outs.at(2);
    g.input_rows = in.at(1) * in.at(2);
  } else if (layer.kind == Kind::kLinear) {
    g.in = in.at(0);
    g.n = layer.out;
    g.k = g.in;
    g.rows = 1;
    g.input_rows = 1;
  } else {
    return;
  }
  out.push_back(g);
}

// Work of one wave of a GEMM's tiles: proportional to the tile's outputs times its reduction length.
double wave_cost(const Tile& t, int64_t reduction) {
  return static_cast<double>(t.m) * static_cast<double>(t.n) * static_cast<double>(reduction);
}

}  // namespace

std::vector<GemmLayer> gemm_layers(const std::string& model, const std::vector<int64_t>& sample_shape,
                                   int64_t classes) {
  const models::ModelSpec* spec = models::find_model(model);
  if (spec == nullptr) throw std::invalid_argument("unknown model " + model);
  if (!spec->plan) return {};
  const models::Layer plan = spec->plan(classes);
  models::FlopTally shape(sample_shape);
  std::vector<GemmLayer> out;
  collect(plan, "", shape, out);
  return out;
}

namespace {

// A tile whose sides are each 1 to 4096, as --tile takes them; else none (a name that only looks like one,
// "sgemm_0x64_tn", or digits beyond any tile).
std::optional<Tile> plausible(const std::string& m, const std::string& n, const std::string& k) {
  const auto side = [](const std::string& digits) -> int64_t {
    return digits.empty() || digits.size() > 4 ? 0 : std::stoll(digits);
  };
  const Tile t{side(m), side(n), side(k)};
  const auto within = [](int64_t v) { return v >= 1 && v <= 4096; };
  if (!within(t.m) || !within(t.n) || !within(t.k)) return std::nullopt;
  return t;
}

}  // namespace

std::optional<Tile> tile_from_kernel_name(const std::string& name) {
  const std::string k = std::to_string(kDefaultTile.k);
  std::smatch m;
  // cuDNN and cuBLAS xmma kernels: "tilesize128x256x32".
  static const std::regex tilesize(R"(tilesize(\d+)x(\d+)(?:x(\d+))?)");
  if (std::regex_search(name, m, tilesize)) {
    return plausible(m[1], m[2], m[3].matched ? m[3].str() : k);
  }
  // CUTLASS 3: "..._f16_128x128x64_1x1x1_..." (the tile, then the cluster shape).
  static const std::regex cutlass3(R"(_(\d+)x(\d+)x(\d+)_\d+x\d+x\d+_)");
  if (std::regex_search(name, m, cutlass3)) return plausible(m[1], m[2], m[3]);
  // cuBLAS and CUTLASS 2 GEMMs: the first MxN after "gemm" ("sgemm_128x64_tn", "s1688gemm_128x128_32x3",
  // "s1688gemm_fp16_256x128_ldg8").
  static const std::regex gemm(R"(gemm(?:_[a-z0-9]+)*?_(\d+)x(\d+)(?:_(\d+)x\d+)?(?:_|$))");
  if (name.find('<') == std::string::npos && std::regex_search(name, m, gemm)) {
    return plausible(m[1], m[2], m[3].matched ? m[3].str() : k);
  }
  return std::nullopt;
}

std::map<int64_t, double> modelled_time(const std::vector<GemmLayer>& layers, bool train, int64_t sms,
                                        const std::vector<int64_t>& batches,
                                        const std::map<std::string, Tile>& tiles_by_layer) {
  std::map<int64_t, double> out;
  for (int64_t b : batches) {
    double t = 0;
    for (const GemmLayer& l : layers) {
      const auto found = tiles_by_layer.find(l.name);
      const Tile tile = found == tiles_by_layer.end() ? kDefaultTile : found->second;
      const int64_t rows = b * l.rows;
      // Forward: M = batch rows, N = outputs, K = inputs x kernel area, per group.
      t += static_cast<double>(waves(l.groups * tiles(rows, l.n, tile), sms)) * wave_cost(tile, l.k);
      if (!train) continue;
      // Data gradient: M = batch x input pixels, N = inputs, K = outputs x kernel area.
      if (!l.first) {
        t += static_cast<double>(waves(l.groups * tiles(b * l.input_rows, l.in, tile), sms)) *
             wave_cost(tile, l.n * l.kernel_area);
      }
      // Weight gradient: M = outputs, N = inputs x kernel area, reduced over the batch rows in K steps.
      t += static_cast<double>(waves(l.groups * tiles(l.n, l.k, tile), sms)) *
           wave_cost(tile, ceil_div(rows, tile.k) * tile.k);
    }
    out[b] = t;
  }
  return out;
}

Prediction predict_jumps(const std::vector<GemmLayer>& layers, bool train, int64_t sms,
                         const std::vector<int64_t>& batches, const std::map<std::string, Tile>& tiles_by_layer,
                         const std::vector<Jump>& measured, double min_step) {
  Prediction p;
  p.sms = sms;
  p.tiles_from = tiles_by_layer.empty() ? "the default 128x128 tile" : "the profiled kernels' names";
  const std::map<int64_t, double> t = modelled_time(layers, train, sms, batches, tiles_by_layer);
  // Rises per sample, so that a ladder of uneven steps (1, 2, 4, ...) is held to the trend of its work:
  // doubling the batch doubles the work, which is no jump, however many new waves it takes.
  std::vector<double> slopes;
  for (std::size_t i = 1; i < batches.size(); ++i) {
    slopes.push_back((t.at(batches[i]) - t.at(batches[i - 1])) /
                     static_cast<double>(batches[i] - batches[i - 1]));
  }
  constexpr std::size_t kWindow = 8;
  for (std::size_t i = 0; i < slopes.size(); ++i) {
    // The local trend, as the measured jumps are found: the steeper of the median slopes on either side,
    // without this one, so that a bend (the knee where the GPU fills up) is no jump.
    std::vector<double> left, right;
    for (std::size_t j = i >= kWindow ? i - kWindow : 0; j < i; ++j) left.push_back(slopes[j]);
    for (std::size_t j = i + 1; j < std::min(slopes.size(), i + kWindow + 1); ++j) right.push_back(slopes[j]);
    double trend = 0;
    if (!left.empty()) trend = median(left);
    if (!right.empty()) trend = left.empty() ? median(right) : std::max(trend, median(right));
    const double before = t.at(batches[i]);
    const double excess = (slopes[i] - trend) * static_cast<double>(batches[i + 1] - batches[i]);
    if (before <= 0 || excess <= min_step * before) continue;
    PredictedJump jump{batches[i], batches[i + 1], 100.0 * excess / before, {}};
    // The layers whose forward waves stepped, largest first.
    std::vector<std::pair<double, std::string>> stepped;
    for (const GemmLayer& l : layers) {
      const auto found = tiles_by_layer.find(l.name);
      const Tile tile = found == tiles_by_layer.end() ? kDefaultTile : found->second;
      const int64_t w0 = waves(l.groups * tiles(batches[i] * l.rows, l.n, tile), sms);
      const int64_t w1 = waves(l.groups * tiles(batches[i + 1] * l.rows, l.n, tile), sms);
      if (w1 > w0) stepped.emplace_back(static_cast<double>(w1 - w0) * wave_cost(tile, l.k), l.name);
    }
    std::sort(stepped.rbegin(), stepped.rend());
    for (std::size_t j = 0; j < std::min<std::size_t>(3, stepped.size()); ++j) jump.layers.push_back(stepped[j].second);
    p.jumps.push_back(std::move(jump));
  }
  // Matched within one batch size, each measured jump at most once.
  std::vector<int64_t> measured_at;
  for (const Jump& j : measured) measured_at.push_back(j.to_batch);
  std::vector<bool> used(measured_at.size(), false);
  for (const PredictedJump& j : p.jumps) {
    bool hit = false;
    for (std::size_t k = 0; k < measured_at.size() && !hit; ++k) {
      if (!used[k] && std::llabs(measured_at[k] - j.to_batch) <= 1) used[k] = hit = true;
    }
    if (hit) {
      ++p.matched;
    } else {
      p.predicted_only.push_back(j.to_batch);
    }
  }
  for (std::size_t k = 0; k < measured_at.size(); ++k) {
    if (!used[k]) p.measured_only.push_back(measured_at[k]);
  }
  const double m = p.matched;
  p.precision = p.jumps.empty() ? 0.0 : m / static_cast<double>(p.jumps.size());
  p.recall = measured_at.empty() ? 0.0 : m / static_cast<double>(measured_at.size());
  if (p.jumps.empty() && measured_at.empty()) {
    p.precision = p.recall = p.agreement = 1.0;  // both say: no jumps
  } else {
    p.agreement = (p.precision + p.recall) > 0 ? 2 * p.precision * p.recall / (p.precision + p.recall) : 0.0;
  }
  return p;
}

}  // namespace batchscope
