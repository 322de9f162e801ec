#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "models/gemm_layer.h"

namespace batchscope {

// Where the step time must step up, from GEMM tile and wave quantization: a GPU runs a GEMM as tiles of
// tm x tn outputs, one tile per SM at a time, so its time grows by whole waves of SM-count tiles. A batch
// size that needs one more wave than the size before in a large layer costs a step.

// A convolution or linear layer as the GEMMs it runs, per sample (models/gemm_layer.h).
using models::GemmLayer;

// The CTA tile of a GEMM kernel: its output block tm x tn, and its K step where known.
struct Tile {
  int64_t m = 128, n = 128, k = 32;
};

// The usual tile of cuBLAS and CUTLASS kernels for large GEMMs, where no kernel name gives one.
inline constexpr Tile kDefaultTile{128, 128, 32};

// The GEMM layers of a plan model of the zoo at this sample shape; empty for models without a plan
// (the sequence models). Throws std::invalid_argument for an unknown model.
std::vector<GemmLayer> gemm_layers(const std::string& model, const std::vector<int64_t>& sample_shape,
                                   int64_t classes);

// The tile a kernel's name carries (cuBLAS "ampere_sgemm_128x64_tn", CUTLASS "..._128x128_32x3_...",
// cuDNN/xmma "..._tilesize128x32x16_..."); nullopt where it carries none.
std::optional<Tile> tile_from_kernel_name(const std::string& name);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Tiles of an M x N GEMM, and the waves they take on `sms` multiprocessors.
inline int64_t tiles(int64_t m, int64_t n, const Tile& t) { return ceil_div(m, t.m) * ceil_div(n, t.n); }
inline int64_t waves(int64_t tile_count, int64_t sms) { return ceil_div(tile_count, sms); }

struct PredictedJump {
  int64_t from_batch = 0, to_batch = 0;
  double step_pct = 0;              // the model's step beyond its local trend, % of its time before
  std::vector<std::string> layers;  // whose waves stepped, largest share first
};

struct Prediction {
  int64_t sms = 0;
  std::string tiles_from;  // "kernel names" where profiled kernels gave the tiles, else "default 128x128"
  std::vector<PredictedJump> jumps;
  // Measured against predicted, matched within one batch size.
  int matched = 0;
  double precision = 0, recall = 0, agreement = 0;  // agreement: F1 of the two
  std::vector<int64_t> predicted_only, measured_only;  // the first batch size after each
};

// The model's relative step time at each batch size of `batches` (ascending): the waves of every GEMM
// times the work of one of its tiles; training adds the data gradient (all but the first layer) and the
// weight gradient (whose reduction over the batch grows in whole K steps).
std::map<int64_t, double> modelled_time(const std::vector<GemmLayer>& layers, bool train, int64_t sms,
                                        const std::vector<int64_t>& batches,
                                        const std::map<std::string, Tile>& tiles_by_layer);

// The batch sizes among `batches` where the modelled time steps up by more than min_step of its time
// beyond the local trend (the steeper of the median rises per sample of the 8 steps on each side, times
// this step's samples, as the measured jumps are found), then set against the measured jumps.
Prediction predict_jumps(const std::vector<GemmLayer>& layers, bool train, int64_t sms,
                         const std::vector<int64_t>& batches, const std::map<std::string, Tile>& tiles_by_layer,
                         const std::vector<Jump>& measured, double min_step = 0.02);

}  // namespace batchscope
