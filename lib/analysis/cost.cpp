#include "lib/analysis/cost.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "data/datasets.h"
#include "lib/common/errors.h"

namespace batchscope {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

}  // namespace

PriceList read_prices(const std::string& path) {
  const char* const fix = "write prices: with one line per device, e.g. \"NVIDIA H100 80GB HBM3\": 2.49 ($ per hour)";
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw UserError(located(path, 0, "cannot be read", "give --prices a YAML file that exists"));
  } catch (const YAML::Exception& error) {
    throw UserError(located(path, error.mark.line + 1, "is not YAML (" + error.msg + ")", fix));
  }
  if (!root.IsMap() || !root["prices"]) throw UserError(located(path, 1, "has no top-level prices: map", fix));
  const YAML::Node map = root["prices"];
  if (!map.IsMap() || map.size() == 0) {
    throw UserError(located(path, line_of(map), "prices: is not a map of device names to $ per hour", fix));
  }
  PriceList list;
  list.file = path;
  for (const auto& item : map) {
    const std::string key = item.first.as<std::string>();
    const int line = line_of(item.first);
    double usd = 0;
    try {
      usd = item.second.as<double>();
    } catch (const YAML::Exception&) {
      throw UserError(located(path, line, "the price of \"" + key + "\" is not a number",
                              "give $ per device-hour as a number, e.g. 2.49"));
    }
    if (!std::isfinite(usd) || usd <= 0) {
      throw UserError(located(path, line, "the price of \"" + key + "\" is not above 0",
                              "give $ per device-hour as a positive number, e.g. 2.49"));
    }
    list.entries.push_back({key, usd, line});
  }
  return list;
}

std::optional<Price> price_for(const PriceList& prices, const std::vector<std::string>& device_names) {
  const PriceEntry* exact = nullptr;
  std::vector<const PriceEntry*> contained;
  for (const PriceEntry& e : prices.entries) {
    for (const std::string& name : device_names) {
      if (name.empty()) continue;
      if (lower(name) == lower(e.key)) exact = &e;
      else if (lower(name).find(lower(e.key)) != std::string::npos &&
               std::find(contained.begin(), contained.end(), &e) == contained.end())
        contained.push_back(&e);
    }
  }
  const auto from = [&](const PriceEntry& e) {
    return Price{e.usd_per_hour, prices.file + ":" + std::to_string(e.line) + " (" + e.key + ")"};
  };
  if (exact != nullptr) return from(*exact);
  if (contained.size() > 1) {
    throw UserError(located(prices.file, contained[1]->line,
                            "\"" + contained[0]->key + "\" (line " + std::to_string(contained[0]->line) + ") and \"" +
                                contained[1]->key + "\" both match the device " + device_names.front(),
                            "give the device's full name as it appears in the report, so that one key matches it"));
  }
  if (contained.size() == 1) return from(*contained.front());
  if (prices.fallback) return Price{*prices.fallback, "--price"};
  return std::nullopt;
}

std::optional<int64_t> known_epoch_samples(const std::string& data) {
  if (data::is_dataset_name(data)) return data::dataset_kind(data).train_images;
  return data::training_images_in(data);  // a directory's own files, where they are here
}

GroupTimeToAccuracy time_to_accuracy(const std::vector<std::pair<int64_t, double>>& batch_median_ms,
                                     const GivenNoiseScale& noise) {
  GroupTimeToAccuracy out;
  out.noise = noise;
  double least = 0;
  for (const auto& [batch, median_ms] : batch_median_ms) {
    const double factor = 1 + noise.b_noise / static_cast<double>(batch);
    out.points.push_back({batch, factor, median_ms * factor});
    if (out.points.size() == 1 || median_ms * factor < least) least = median_ms * factor;
  }
  for (PointTimeToAccuracy& p : out.points) {
    p.relative_time /= least;
    if (!out.best || p.relative_time < out.best->relative_time) out.best = p;
  }
  return out;
}

}  // namespace batchscope
