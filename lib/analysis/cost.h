#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace batchscope {

// What a batch size costs at a price per device-hour: $ per million samples and $ per epoch.

// The prices of `analyze --prices FILE`: a top-level `prices:` map from device names to $ per hour.
struct PriceEntry {
  std::string key;
  double usd_per_hour = 0;
  int line = 0;
};

struct PriceList {
  std::string file;                       // "" without --prices
  std::vector<PriceEntry> entries;
  std::optional<double> fallback;         // --price, for devices the file does not name
};

// Reads a prices file; throws UserError naming the file, the line and the fix.
PriceList read_prices(const std::string& path);

// The price of one device and where it came from ("--price", "prices.yaml:3 (A100)"): an exact key
// (case-insensitive) first, then a key contained in the name. Throws UserError where two keys match as
// substrings only.
struct Price {
  double usd_per_hour = 0;
  std::string from;
};
std::optional<Price> price_for(const PriceList& prices, const std::vector<std::string>& device_names);

// Dollars per million samples at a median step time.
inline double usd_per_million_samples(double usd_per_hour, double median_ms, int64_t batch_size) {
  return usd_per_hour / 3600.0 * (median_ms / 1000.0) / static_cast<double>(batch_size) * 1e6;
}
// Dollars per epoch of `samples`: ceil(samples / batch) steps at the median step time.
inline double usd_per_epoch(double usd_per_hour, double median_ms, int64_t batch_size, int64_t samples) {
  const int64_t steps = (samples + batch_size - 1) / batch_size;
  return usd_per_hour / 3600.0 * (median_ms / 1000.0) * static_cast<double>(steps);
}

// What a batch size costs to reach an accuracy, in the model of McCandlish et al. ("An Empirical Model of
// Large-Batch Training", 2018): an accuracy takes S_min (1 + B_noise / B) steps at batch size B, each of
// B's median step time, so the time to it is proportional to median_ms (1 + B_noise / B), given the
// gradient noise scale B_noise (train --noise-scale measures it).
struct GivenNoiseScale {
  double b_noise = 0;
  std::string from;  // "--noise-scale" or "FILE:LINE (epoch N)"
};
struct PointTimeToAccuracy {
  int64_t batch_size = 0;
  double steps_factor = 0;   // 1 + B_noise / B: the steps against S_min
  double relative_time = 0;  // the time to the accuracy against the least of the group's
};
struct GroupTimeToAccuracy {
  GivenNoiseScale noise;
  std::vector<PointTimeToAccuracy> points;  // ascending batch size
  std::optional<PointTimeToAccuracy> best;  // the least time
};
// From (batch size, median step ms) pairs; no best where there are none.
GroupTimeToAccuracy time_to_accuracy(const std::vector<std::pair<int64_t, double>>& batch_median_ms,
                                     const GivenNoiseScale& noise);

// The training-set size of a dataset the sweep named ("mnist", "cifar10", ...), or the training images in
// the directory it named, where its files are here; none for synthetic data or files not found.
std::optional<int64_t> known_epoch_samples(const std::string& data);

}  // namespace batchscope
