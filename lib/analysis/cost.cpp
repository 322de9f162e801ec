#include "lib/analysis/cost.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "data/datasets.h"
#include "lib/common/errors.h"
#include "lib/config/yaml_fields.h"

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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UserError(located(path, 0, "is a directory", "give --prices the path of a YAML file"));
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (const std::optional<int> second = yaml_fields::second_document_line(text)) {
      throw UserError(located(path, *second,
                              "begins a second YAML document (after ---), which would be ignored",
                              "put every price under the first document's prices:"));
    }
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

namespace {

// Whether `key` is the whole of `name` or a whole word of it: "H100" matches "NVIDIA H100 80GB HBM3" and
// "A100" matches "NVIDIA A100-SXM4-80GB", but "L4" does not match "NVIDIA L40S" nor "A100" "NVIDIA RTX
// A1000".
bool names(const std::string& name, const std::string& key) {
  const std::string n = lower(name), k = lower(key);
  if (k.empty()) return false;
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t at = n.find(k); at != std::string::npos; at = n.find(k, at + 1)) {
    const bool starts = at == 0 || !word(n[at - 1]) || !word(k.front());
    const bool ends = at + k.size() == n.size() || !word(n[at + k.size()]) || !word(k.back());
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

std::optional<Price> price_for(const PriceList& prices, const std::vector<std::string>& device_names) {
  // Each key that matches, with the device name it matched: exact matches first, then whole words.
  std::vector<std::pair<const PriceEntry*, std::string>> exact, contained;
  for (const PriceEntry& e : prices.entries) {
    for (const std::string& name : device_names) {
      if (name.empty()) continue;
      if (lower(name) == lower(e.key)) {
        exact.emplace_back(&e, name);
        break;
      }
      if (names(name, e.key)) {
        contained.emplace_back(&e, name);
        break;
      }
    }
  }
  const auto from = [&](const PriceEntry& e) {
    return Price{e.usd_per_hour, prices.file + ":" + std::to_string(e.line) + " (" + e.key + ")"};
  };
  const std::vector<std::pair<const PriceEntry*, std::string>>& found = exact.empty() ? contained : exact;
  if (found.size() > 1) {
    const auto& [a, a_name] = found[0];
    const auto& [b, b_name] = found[1];
    throw UserError(located(prices.file, b->line,
                            "\"" + a->key + "\" (line " + std::to_string(a->line) + ") matches the device " +
                                a_name + " and \"" + b->key + "\" matches " +
                                (b_name == a_name ? "it too" : b_name) + ", one device",
                            "keep one key for the device, its full name as it appears in the report"));
  }
  if (found.size() == 1) return from(*found.front().first);
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
