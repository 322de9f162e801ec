#include "lib/analysis/analyzer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "lib/analysis/energy.h"
#include "lib/analysis/robust_fit.h"
#include "lib/common/errors.h"
#include "lib/common/statistics.h"
#include "lib/common/words.h"
#include "lib/records/shard_layout.h"
#include "models/model_file.h"

namespace batchscope {
namespace {

PointStats stats_of(const RawPoint& raw, int min_samples) {
  PointStats p;
  p.batch_size = raw.batch_size;
  // The statistics of the step times where the log has them (the point record's, recomputed), else
  // the point's summary alone (step records removed); then the standard error is unknown.
  const std::optional<PointRecord> summary =
      raw.times_ms.empty() ? raw.point : point_record(BatchKey{}, raw.times_ms, 0, std::nullopt);
  if (summary) {
    p.samples = static_cast<int>(summary->samples.value_or(0));
    p.median_ms = summary->median_ms.value_or(0);
    p.p10_ms = summary->p10_ms.value_or(p.median_ms);
    p.p90_ms = summary->p90_ms.value_or(p.median_ms);
    p.mean_ms = summary->mean_ms.value_or(p.median_ms);
    p.min_ms = summary->min_ms.value_or(p.median_ms);
    p.max_ms = summary->max_ms.value_or(p.median_ms);
    p.cv = summary->cv;
  }
  if (!raw.times_ms.empty()) p.median_se_ms = median_standard_error(raw.times_ms);
  if (raw.pass_times.size() > 1) {
    std::vector<double> medians;
    for (const auto& [pass, times] : raw.pass_times) {
      p.pass_medians[pass] = median(times);
      medians.push_back(p.pass_medians[pass]);
    }
    p.between_pass_se_ms = standard_error_of_mean(medians);
  }
  p.samples_per_s = p.median_ms > 0 ? static_cast<double>(p.batch_size) / (p.median_ms / 1e3) : 0.0;
  if (raw.point) {
    if (raw.point->flops_per_step && p.median_ms > 0)
      p.tflops = *raw.point->flops_per_step / (p.median_ms / 1e3) / 1e12;
    p.peak_memory_bytes = raw.point->peak_memory_bytes;
    p.host_median_ms = raw.point->host_median_ms;
    // Several passes: the median of all their steps' host times, as the step times' median is.
    if (raw.pass_points.size() > 1 && !raw.host_ms.empty() && raw.host_ms.size() == raw.times_ms.size())
      p.host_median_ms = median(raw.host_ms);
    p.skipped_steps = raw.point->skipped_steps;
    if (raw.point->energy) {
      p.energy = PointEnergyStats{*raw.point->energy};
      for (const PointRecord& pass : raw.pass_points) {
        if (!pass.energy || !pass.energy->window_ms) continue;
        p.energy->shortest_window_ms =
            std::min(p.energy->shortest_window_ms.value_or(*pass.energy->window_ms), *pass.energy->window_ms);
      }
    }
    if (raw.point->chunk) {
      p.chunk = raw.point->chunk->chunk;
      p.chunk_largest_fitting = raw.point->chunk->largest_fitting;
    }
  }
  p.too_few_samples = p.samples < min_samples || p.median_ms <= 0;
  return p;
}

std::string slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "group" : out;
}

// A run record's optimizer as words: "momentum lr 0.01 momentum 0.9 foreach" (foreach only where its step
// was multi-tensor; weight decay only where set).
std::string optimizer_words(const Json& o) {
  std::string out = o.contains("type") && o["type"].is_string() ? o["type"].get<std::string>() : "optimizer";
  for (const char* key : {"lr", "momentum", "weight_decay", "betas", "eps"}) {
    if (!o.contains(key)) continue;
    const Json& v = o[key];
    if (std::string(key) == "weight_decay" && v.is_number() && v.get<double>() == 0) continue;
    out += std::string(" ") + key + " " + v.dump();
  }
  // A log may hold anything there; only a true makes the word.
  if (o.contains("foreach") && o["foreach"].is_boolean() && o["foreach"].get<bool>()) out += " foreach";
  return out;
}

std::string show(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_array()) {
    std::string out;
    for (const Json& x : v) out += (out.empty() ? "" : "x") + show(x);
    return out;
  }
  return v.dump();
}

// The identity fields that tell a group apart from the others in the same set.
std::vector<std::string> differing_keys(const std::vector<const Json*>& identities, const Json& skip) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const Json* id : identities) {
    for (auto it = id->begin(); it != id->end(); ++it) {
      if (skip.contains(it.key()) || !seen.insert(it.key()).second) continue;
      for (const Json* other : identities) {
        const Json value = other->contains(it.key()) ? (*other)[it.key()] : Json();
        if (value != it.value()) {
          keys.push_back(it.key());
          break;
        }
      }
    }
  }
  return keys;
}

std::string describe_keys(const Json& identity, const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& key : keys) {
    // An unscaled group has no scaler: "loss_scale off" says it.
    if (key == "loss_scaler" && !identity.contains("loss_scale")) continue;
    if (!out.empty()) out += ", ";
    const Json value = identity.contains(key) ? identity[key] : Json();
    if (key == "device") {
      out += show(value);
    } else if (key == "optimizer" && value.is_object()) {
      out += "optimizer " + optimizer_words(value);
    } else if (key == "loss_scaler") {
      // Only where the settings were not GradScaler's.
      const std::string words = loss_scaler_words(value);
      out += "loss scaler " + (words.empty() ? std::string("GradScaler's defaults") : words);
    } else if (value.is_object()) {
      out += key + " " + value.dump();
    } else if (key == "loss_scale" && value.is_null()) {
      out += "loss_scale off";  // written only where the loss was scaled
    } else {
      out += key + " " + (value.is_null() ? "none" : show(value));
    }
  }
  return out;
}

void label_groups(const std::vector<RawGroup>& raw, std::vector<GroupAnalysis>& groups) {
  std::map<std::string, std::vector<size_t>> by_base;
  for (size_t i = 0; i < raw.size(); ++i) by_base[describe_identity(raw[i].identity)].push_back(i);
  const Json base_keys = {{"model", 1},  {"phase", 1}, {"precision", 1},
                          {"device", 1}, {"cpu", 1},   {"threads", 1}};
  std::set<std::string> ids;
  for (const auto& [base, members] : by_base) {
    std::vector<const Json*> identities;
    for (size_t i : members) identities.push_back(&raw[i].identity);
    const std::vector<std::string> keys = differing_keys(identities, base_keys);
    for (size_t i : members) {
      const std::string extra = describe_keys(raw[i].identity, keys);
      groups[i].label = base + (extra.empty() ? "" : " · " + extra);
    }
  }
  for (size_t i = 0; i < raw.size(); ++i) {
    const Json& id = raw[i].identity;
    std::string device = id.value("device", "");
    std::string candidate = slug(id.value("model", "") + "_" + id.value("phase", "") + "_" +
                                 id.value("precision", "") + "_" + device);
    const std::string base = candidate;
    for (int n = 2; !ids.insert(candidate).second; ++n) candidate = base + "_" + std::to_string(n);
    groups[i].id = candidate;
  }
}

// In how many passes each jump and drop shows: a pass has it where its own medians change across the
// pair by at least half the pooled change, in the same direction. The same for each run of fast sizes.
void count_passes(GroupAnalysis& g) {
  std::map<int64_t, const PointStats*> by_batch;
  for (const PointStats& p : g.points) by_batch[p.batch_size] = &p;
  for (std::vector<Jump>* list : {&g.jumps.jumps, &g.jumps.drops}) {
    for (Jump& j : *list) {
      const PointStats* a = by_batch.count(j.from_batch) ? by_batch[j.from_batch] : nullptr;
      const PointStats* b = by_batch.count(j.to_batch) ? by_batch[j.to_batch] : nullptr;
      if (a == nullptr || b == nullptr || a->pass_medians.size() < 2) continue;
      const double pooled = j.to_ms - j.from_ms;
      for (const auto& [pass, before] : a->pass_medians) {
        const auto after = b->pass_medians.find(pass);
        if (after == b->pass_medians.end()) continue;
        ++j.passes;
        const double change = after->second - before;
        if (pooled != 0 && change / pooled >= 0.5) ++j.passes_with;
      }
      if (j.passes > 0 && 2 * j.passes_with < j.passes) j.confidence = "doubtful";
    }
  }
  // A run of fast sizes shows in a pass where that pass's medians make it faster than both sizes
  // outside by at least half the pooled gain.
  for (FastSizes& f : g.jumps.fast_sizes) {
    std::vector<const PointStats*> inside;
    for (const PointStats& p : g.points) {
      if (p.batch_size >= f.first_batch && p.batch_size <= f.last_batch) inside.push_back(&p);
    }
    const PointStats* before = by_batch.count(f.before_batch) ? by_batch[f.before_batch] : nullptr;
    const PointStats* after = by_batch.count(f.after_batch) ? by_batch[f.after_batch] : nullptr;
    if (before == nullptr || after == nullptr || before->pass_medians.size() < 2) continue;
    const double pooled = std::min(f.before_ms, f.after_ms) - f.slowest_ms;
    for (const auto& [pass, before_ms] : before->pass_medians) {
      const auto after_ms = after->pass_medians.find(pass);
      if (after_ms == after->pass_medians.end()) continue;
      double slowest = -std::numeric_limits<double>::infinity();
      bool complete = true;
      for (const PointStats* p : inside) {
        const auto ms = p->pass_medians.find(pass);
        if (ms == p->pass_medians.end()) {
          complete = false;
          break;
        }
        slowest = std::max(slowest, ms->second);
      }
      if (!complete) continue;
      ++f.passes;
      if (pooled > 0 && (std::min(before_ms, after_ms->second) - slowest) / pooled >= 0.5) ++f.passes_with;
    }
    f.doubtful = f.passes > 0 && 2 * f.passes_with < f.passes;
  }
}

// The tile of each layer from the names of its forward kernels at the largest profiled batch size.
std::map<std::string, Tile> profiled_tiles(const std::map<int64_t, ProfileRecord>& profiles) {
  std::map<std::string, Tile> out;
  if (profiles.empty()) return out;
  for (const KernelTime& k : profiles.rbegin()->second.kernels) {
    if (k.kind != "kernel" || k.pass != profile_pass::kForward || out.count(k.layer)) continue;
    if (const auto tile = tile_from_kernel_name(k.name)) out[k.layer] = *tile;
  }
  return out;
}

// The group's convolution and linear layers as GEMMs; empty, with the reason in `why`, where they cannot
// be laid out.
std::vector<GemmLayer> group_gemm_layers(const RawGroup& raw, std::string& why) {
  const Json& id = raw.identity;
  if (!id.contains("input") || !id.contains("classes")) {
    why = "too little is known of the workload (input, classes)";
    return {};
  }
  if (models::is_model_file_name(id.value("model", ""))) {
    // A TorchScript file's, as its profiled sweep found them on one sample.
    for (const auto& [batch, profile] : raw.profiles) {
      if (!profile.gemm_layers.empty()) return profile.gemm_layers;
    }
    why = raw.profiles.empty()
              ? "a TorchScript file's layers are known from a profiled sweep (sweep --profile) only"
              : "its profiles hold no convolution or linear layer of the file (those of an earlier "
                "batchscope have none)";
    return {};
  }
  std::vector<GemmLayer> layers;
  try {
    layers = gemm_layers(id.value("model", ""), id["input"].get<std::vector<int64_t>>(), id["classes"].get<int64_t>());
  } catch (const std::exception& error) {
    why = std::string("the model's layers could not be laid out: ") + error.what();
    return {};
  }
  if (layers.empty())
    why = "the prediction covers the convolutional and linear models of the zoo, not sequence models";
  return layers;
}

// Predicted jumps beside the measured ones, where the model has a plan and the SM count is known.
void predict(GroupAnalysis& g, const RawGroup& raw, const std::vector<GemmLayer>& layers,
             const std::string& why, const std::vector<int64_t>& measured, const AnalyzeOptions& options) {
  const std::optional<int64_t> sms = options.sms ? options.sms : raw.sm_count;
  if (!sms) {
    g.no_prediction =
        "no SM count: the run record names no GPU; analyze --sms N predicts for a GPU with N SMs";
    return;
  }
  if (measured.size() < 3) {
    g.no_prediction = "fewer than 3 batch sizes that ran whole have enough timed steps";
    return;
  }
  if (layers.empty()) {
    g.no_prediction = why;
    return;
  }
  const Json& id = raw.identity;
  std::map<std::string, Tile> tile_of = profiled_tiles(raw.profiles);
  if (options.tile) {
    for (const GemmLayer& l : layers) tile_of.emplace(l.name, *options.tile);
  }
  g.prediction = predict_jumps(layers, id.value("phase", "") == "train", *sms, measured, tile_of, g.jumps.jumps);
  if (options.tile && profiled_tiles(raw.profiles).empty()) g.prediction->tiles_from = "--tile";
}

GroupAnalysis analyze_group(const RawGroup& raw, const AnalyzeOptions& options) {
  GroupAnalysis g;
  g.identity = raw.identity;
  g.workload = raw.workload;
  g.logs = raw.logs;
  g.run_ids = raw.run_ids;
  for (const auto& [batch, point] : raw.points) g.points.push_back(stats_of(point, options.min_samples));
  for (const PointStats& p : g.points) {
    if (p.skipped_steps.value_or(0) > 0) g.overflowed.push_back(p.batch_size);
  }
  // Only a GPU runs a step apart from the thread that issues it; on the CPU that thread is the work. A
  // loss-scaled step waits for the GPU in its middle (the overflow check), so its host time holds that
  // wait and tells nothing of the issuing.
  if (g.identity.contains("cuda") && !g.identity.contains("loss_scale")) {
    for (PointStats& p : g.points) {
      p.launch_bound = p.host_median_ms && p.median_ms > 0 && *p.host_median_ms >= kLaunchBoundShare * p.median_ms;
      if (p.launch_bound) g.launch_bound.push_back(p.batch_size);
    }
  }

  std::vector<double> xs, ys;
  std::vector<LevelPoint> levels;
  std::vector<int64_t> measured;
  for (const PointStats& p : g.points) {
    if (p.too_few_samples) {
      g.flagged.push_back(p.batch_size);
      continue;
    }
    if (!g.fastest || p.samples_per_s > g.fastest->samples_per_s)
      g.fastest = BatchChoice{p.batch_size, p.median_ms, p.samples_per_s};
    // A size that ran in chunk: auto's micro-batches is a throughput a user gets, but its step time
    // follows its count of micro-batches, not the batch's shapes: the trend, the jumps, the periodicity
    // and the predictions read the whole batches only.
    if (p.chunk) continue;
    xs.push_back(static_cast<double>(p.batch_size));
    ys.push_back(p.median_ms);
    // The larger of the noise within the size's steps and the drift between passes.
    levels.push_back({p.batch_size, p.median_ms, std::max(p.median_se_ms, p.between_pass_se_ms.value_or(0.0))});
    measured.push_back(p.batch_size);
  }
  if (g.fastest) {
    for (const PointStats& p : g.points) {
      if (!p.too_few_samples && p.samples_per_s >= kSaturationShare * g.fastest->samples_per_s) {
        g.saturation = BatchChoice{p.batch_size, p.median_ms, p.samples_per_s};
        break;
      }
    }
  }
  if (xs.size() >= 2) {
    const LineFit fit = theil_sen(xs, ys);
    g.trend = Trend{fit.intercept, fit.slope, static_cast<int>(xs.size())};
  }
  g.jumps = detect_jumps(levels, options.detector);
  count_passes(g);
  g.periodicity = analyze_periodicity(g.jumps.jumps, measured);
  g.periodicity.after_multiples = rises_after_multiples(levels);
  for (const Jump& jump : g.jumps.jumps) {
    for (const PointStats& p : g.points) {
      if (p.batch_size == jump.from_batch)
        g.before_jumps.push_back({p.batch_size, p.median_ms, p.samples_per_s});
    }
  }
  if (!g.points.empty()) g.largest_fitting = g.points.back().batch_size;
  for (const PointStats& p : g.points) {
    if (p.chunk) {
      g.accumulated.push_back(p.batch_size);
    } else if (g.accumulated.empty()) {
      g.largest_whole = p.batch_size;
    }
  }
  if (g.accumulated.empty()) g.largest_whole.reset();
  if (!raw.oom.empty()) g.first_oom = *raw.oom.begin();
  const std::vector<std::pair<int64_t, int64_t>> peaks = whole_batch_peaks(g.points);
  g.memory = fit_memory(peaks, raw.memory_capacity, g.identity.contains("cuda"));
  if (g.memory) memory_at_changes(*g.memory, peaks, g.jumps.jumps, g.jumps.drops);
  g.skipped.assign(raw.skipped.begin(), raw.skipped.end());
  analyze_energy(g);
  std::string no_layers;
  const std::vector<GemmLayer> layers = group_gemm_layers(raw, no_layers);
  predict(g, raw, layers, no_layers, measured, options);
  if (!raw.profiles.empty()) {
    std::map<int64_t, double> medians;
    for (const PointStats& p : g.points) medians[p.batch_size] = p.median_ms;
    g.profile = explain_jumps(raw.profiles, g.jumps.jumps, g.jumps.drops, medians);
    const int64_t near = g.fastest ? g.fastest->batch_size : g.profile->batch_sizes.back();
    g.layer_rates = layer_rates(layers, *g.profile, raw.profiles, near);
  }
  return g;
}

std::vector<Comparison> compare(const std::vector<RawGroup>& raw, const std::vector<GroupAnalysis>& groups) {
  std::vector<Comparison> out;
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> by_workload;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (groups[i].points.empty()) continue;
    const std::string key = raw[i].workload.dump();
    if (!by_workload.count(key)) order.push_back(key);
    by_workload[key].push_back(i);
  }
  std::set<std::string> ids;
  for (const std::string& key : order) {
    const std::vector<size_t>& members = by_workload[key];
    if (members.size() < 2) continue;
    std::vector<const Json*> identities;
    for (size_t i : members) identities.push_back(&raw[i].identity);
    const std::vector<std::string> keys = differing_keys(identities, raw[members[0]].workload);
    auto short_label = [&](size_t i) {
      const std::string text = describe_keys(raw[i].identity, keys);
      return text.empty() ? groups[i].label : text;
    };

    const GroupAnalysis& base = groups[members[0]];
    Comparison c;
    const Json& w = raw[members[0]].workload;
    c.workload = w.value("model", "") + " " + w.value("phase", "");
    if (w.contains("input")) c.workload += " " + show(w["input"]);
    c.baseline_id = base.id;
    c.baseline_label = short_label(members[0]);
    std::string id = slug(c.workload);
    for (int n = 2; !ids.insert(id).second; ++n) id = slug(c.workload) + "_" + std::to_string(n);
    c.id = id;
    std::map<int64_t, double> base_ms;
    for (const PointStats& p : base.points) {
      if (!p.too_few_samples) base_ms[p.batch_size] = p.median_ms;
    }
    for (size_t m = 1; m < members.size(); ++m) {
      const GroupAnalysis& g = groups[members[m]];
      SpeedupCurve curve;
      curve.group_id = g.id;
      curve.label = short_label(members[m]);
      std::vector<double> values;
      for (const PointStats& p : g.points) {
        const auto b = base_ms.find(p.batch_size);
        if (p.too_few_samples || b == base_ms.end()) continue;
        const double s = b->second / p.median_ms;
        curve.speedup.emplace_back(p.batch_size, s);
        values.push_back(s);
        if (values.size() == 1 || s < curve.min_speedup) curve.min_speedup = s, curve.min_at = p.batch_size;
        if (values.size() == 1 || s > curve.max_speedup) curve.max_speedup = s, curve.max_at = p.batch_size;
      }
      if (values.empty()) continue;
      curve.median_speedup = median(values);
      curve.energy = energy_ratio(base, g);
      c.curves.push_back(std::move(curve));
    }
    if (!c.curves.empty()) out.push_back(std::move(c));
  }
  return out;
}

// Each pair of groups that ran the same experiment on the same machine, one with the host-to-device
// copy timed and one without: do the jumps survive with the data on the device?
std::vector<TransferVerdict> transfer_verdicts(const std::vector<RawGroup>& raw, const std::vector<GroupAnalysis>& groups) {
  std::vector<TransferVerdict> out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i].identity.contains("transfer") || raw[i].identity["transfer"] != "included") continue;
    Json wanted = raw[i].identity;
    wanted["transfer"] = "excluded";
    for (std::size_t j = 0; j < raw.size(); ++j) {
      if (raw[j].identity != wanted || groups[j].points.empty() || groups[i].points.empty()) continue;
      const auto side = [](const GroupAnalysis& g) {
        TransferSide s{g.id, g.label, g.jumps.jumps, {}};
        for (const PointStats& p : g.points) {
          if (!p.too_few_samples) s.medians[p.batch_size] = p.median_ms;
        }
        return s;
      };
      out.push_back(transfer_verdict(side(groups[i]), side(groups[j])));
    }
  }
  return out;
}

// $ per million samples (and per epoch) at the price of each group's device.
void price_groups(const std::vector<RawGroup>& raw, Analysis& a, const AnalyzeOptions& options) {
  if (options.prices.entries.empty() && !options.prices.fallback) return;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    GroupAnalysis& g = a.groups[i];
    if (g.points.empty()) continue;
    const Json& id = raw[i].identity;
    const std::optional<Price> price = price_for(options.prices, {id.value("device", ""), id.value("cpu", "")});
    if (!price) {
      a.unpriced.push_back(g.label);
      continue;
    }
    GroupCost cost;
    cost.usd_per_hour = price->usd_per_hour;
    cost.price_from = price->from;
    cost.epoch_samples = options.epoch_samples ? options.epoch_samples : known_epoch_samples(id.value("data", ""));
    for (const PointStats& p : g.points) {
      if (p.too_few_samples) continue;
      PointCost c{p.batch_size, usd_per_million_samples(cost.usd_per_hour, p.median_ms, p.batch_size), std::nullopt};
      if (cost.epoch_samples) c.usd_per_epoch = usd_per_epoch(cost.usd_per_hour, p.median_ms, p.batch_size, *cost.epoch_samples);
      if (!cost.cheapest || c.usd_per_million_samples < cost.cheapest->usd_per_million_samples) cost.cheapest = c;
      cost.points.push_back(c);
    }
    g.cost = std::move(cost);
  }
}

// Each training group's time to an accuracy per batch size, from the noise scale given; a warning where
// no group trains.
void predict_times_to_accuracy(const std::vector<RawGroup>& raw, Analysis& a, const AnalyzeOptions& options) {
  if (!options.noise_scale) return;
  bool any = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    GroupAnalysis& g = a.groups[i];
    if (raw[i].identity.value("phase", "") != "train") continue;
    std::vector<std::pair<int64_t, double>> medians;
    for (const PointStats& p : g.points) {
      if (!p.too_few_samples) medians.emplace_back(p.batch_size, p.median_ms);
    }
    if (medians.empty()) continue;
    g.time_to_accuracy = time_to_accuracy(medians, *options.noise_scale);
    any = true;
  }
  if (!any) {
    a.warnings.push_back(
        "--noise-scale predicts the time training takes to an accuracy, and no group of these "
        "logs trains (phase train)");
  }
}

// The layer rates against each layer timed alone (peak --model); a warning where the peak files time the
// model's layers alone at other batch sizes only, naming the command that times them at this one.
void read_layers_against_alone(GroupAnalysis& g, const Json& id, const PeakTable& peaks,
                               std::vector<std::string>& warnings) {
  LayerQuery q;
  q.device = id.value("device", "");
  q.cpu = cpu_key(id.value("cpu", ""), id.value("threads", 0));
  q.model = id.value("model", "");
  if (!id.contains("input") || !id["input"].is_array() || !id.contains("classes")) return;
  q.input = id["input"].get<std::vector<int64_t>>();
  q.classes = id["classes"].get<int64_t>();
  q.phase = id.value("phase", "");
  q.precision = id.value("precision", "");
  q.tf32 = id.contains("tf32") && id["tf32"].is_string() ? id["tf32"].get<std::string>() : "";
  q.cuda = id.contains("cuda");
  q.channels_last =
      id.contains("channels_last") && id["channels_last"].is_boolean() && id["channels_last"].get<bool>();
  q.cudnn_benchmark = q.cuda && id.contains("cudnn_benchmark") && id["cudnn_benchmark"].is_boolean() &&
                      id["cudnn_benchmark"].get<bool>();
  LayerRates& r = *g.layer_rates;
  read_layers_alone(r, peaks, q);
  if (r.alone) return;
  const std::vector<int64_t> batches = layer_alone_batches(peaks, q);
  if (batches.empty()) return;
  const std::string input = joined_numbers(q.input, ","), at = joined_numbers(batches, ", ");
  std::string precisions = layer_precision(q, "conv");
  if (layer_precision(q, "linear") != precisions) precisions += "," + layer_precision(q, "linear");
  const bool at_batch = std::find(batches.begin(), batches.end(), r.batch_size) != batches.end();
  const std::string missing = at_batch ? "at batch " + std::to_string(r.batch_size) + ", but not in " +
                                             precisions + ", " + q.phase +
                                             (q.channels_last ? ", channels-last" : ", contiguous")
                                       : "at batch " + at + " only, not at " + std::to_string(r.batch_size) +
                                             ", where its layer rates are";
  warnings.push_back(g.label + ": the peak files time " + q.model + "'s layers alone " + missing +
                     "; run batchscope peak --model " + q.model + " --input " + input + " --classes " +
                     std::to_string(q.classes) + " --batch " + std::to_string(r.batch_size) +
                     " --precision " + precisions + " --out FILE on that device to read them against it");
}

// Each group's highest TFLOP/s against the measured peaks of its device (analyze --peak).
void read_against_peaks(const std::vector<RawGroup>& raw, Analysis& a, const AnalyzeOptions& options) {
  if (options.peaks.entries.empty()) return;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    GroupAnalysis& g = a.groups[i];
    const Json& id = raw[i].identity;
    const std::string device = id.value("device", "");
    const std::string tf32 =
        id.contains("tf32") && id["tf32"].is_string() ? id["tf32"].get<std::string>() : "";
    const std::vector<std::string> precisions =
        peak_precisions_for(id.value("precision", ""), tf32, id.contains("cuda"));
    const std::string cpu = cpu_key(id.value("cpu", ""), id.value("threads", 0)),
                      phase = id.value("phase", "");
    g.peak = peak_for_group(options.peaks, g.points, device, cpu, precisions, phase);
    if (g.layer_rates) {
      const std::string conv = convolution_precision(id.value("precision", ""), tf32, id.contains("cuda"));
      g.layer_rates->roof = convolution_roof(options.peaks, device, cpu, conv, phase);
      read_layers_against_alone(g, id, options.peaks, a.warnings);
    }
    if (g.peak && g.peak->shares.empty()) {
      g.peak.reset();
      std::string wanted;
      for (const std::string& p : precisions) wanted += (wanted.empty() ? "" : " or ") + p;
      const std::string files = listed(options.peaks.files);
      a.warnings.push_back(g.label + ": " + files + (options.peaks.files.size() > 1 ? " have" : " has") +
                           " no " + wanted + " peak of " +
                           (device == "cpu" ? "this CPU (" + cpu + ")" : device) +
                           "; run batchscope peak --out " + options.peaks.files.front() +
                           " on that device to read its rate against one");
    }
  }
}

}  // namespace

Analysis analyze_groups(const std::vector<RawGroup>& raw, const AnalyzeOptions& options) {
  Analysis a;
  for (const RawGroup& g : raw) a.groups.push_back(analyze_group(g, options));
  label_groups(raw, a.groups);
  a.comparisons = compare(raw, a.groups);
  a.transfer_verdicts = transfer_verdicts(raw, a.groups);
  price_groups(raw, a, options);
  predict_times_to_accuracy(raw, a, options);
  read_against_peaks(raw, a, options);
  for (const GroupAnalysis& g : a.groups) {
    if (!g.flagged.empty()) {
      a.warnings.push_back(g.label + ": " + std::to_string(g.flagged.size()) +
                           " batch size(s) have fewer than " + std::to_string(options.min_samples) +
                           " timed steps and are shown but left out of the trend, jumps and best sizes");
    }
    for (std::string& w : energy_warnings(g)) a.warnings.push_back(std::move(w));
    if (!g.overflowed.empty()) {
      const std::string sizes = joined_numbers(g.overflowed, ", ");
      a.warnings.push_back(
          g.label + ": at " + std::to_string(g.overflowed.size()) +
          " batch size(s) loss scaling skipped the optimizer's step of some timed steps (a "
          "gradient overflowed while the scale was still falling), so their medians read low: " +
          sizes + "; more warm-up steps let the scale settle first");
    }
  }
  return a;
}

namespace {

// The logs the arguments name: a directory of shards (sweep --shard, submit) stands for the logs of its
// shards, which must all belong to one plan; shards that are not complete are named in a warning.
std::vector<std::string> expand_shards(const std::vector<std::string>& arguments, std::vector<std::string>& warnings) {
  std::vector<std::string> expanded;
  for (const std::string& argument : arguments) {
    std::error_code ec;
    const bool shard_root = std::filesystem::is_directory(argument, ec) &&
                            !std::filesystem::exists(std::filesystem::path(argument) / "steps.jsonl", ec) &&
                            !std::filesystem::exists(std::filesystem::path(argument) / "steps.jsonl.gz", ec);
    const std::optional<ShardedRun> run = shard_root ? find_shards(argument) : std::nullopt;
    if (!run) {
      expanded.push_back(argument);
      continue;
    }
    std::vector<int> complete(static_cast<std::size_t>(run->plan.count), 0);
    for (const ShardDir& shard : run->shards) {
      if (shard.has_log) expanded.push_back(shard.log);
      if (shard.complete) complete[static_cast<std::size_t>(shard.index)] = 1;
    }
    std::string unfinished;
    int left = 0;
    for (std::size_t i = 0; i < complete.size(); ++i) {
      if (complete[i]) continue;
      unfinished += (unfinished.empty() ? "" : ", ") + std::to_string(i);
      ++left;
    }
    if (left == run->plan.count && std::none_of(run->shards.begin(), run->shards.end(), [](const ShardDir& d) { return d.has_log; })) {
      throw UserError(located(argument, 0, "holds no shard that has written a log yet",
                              "wait for the shards to start (batchscope status " + argument + ")"));
    }
    if (left > 0) {
      warnings.push_back(located(argument, 0,
                                 std::string(left == 1 ? "shard " : "shards ") + unfinished + " of " +
                                     std::to_string(run->plan.count) + (left == 1 ? " is" : " are") +
                                     " not complete, so the report lacks what they have still to measure",
                                 "batchscope status " + argument + " says what is left; analyze again once they are done"));
    }
  }
  return expanded;
}

}  // namespace

std::vector<LoadedLog> load_logs(const std::vector<std::string>& given, std::vector<std::string>& warnings) {
  const std::vector<std::string> arguments = expand_shards(given, warnings);
  std::vector<LoadedLog> logs;
  std::set<std::string> seen;
  for (const std::string& argument : arguments) {
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(log_file_for(argument), ec).string();
    if (!seen.insert(ec ? argument : canonical).second) {
      warnings.push_back(
          located(argument, 0, "was given more than once and is read once", "pass each log once"));
      continue;
    }
    auto log = load_log(argument, warnings);
    if (!log) continue;
    if (log->summary.records == 0) {
      // Not a sweep log at all: say why, and analyse the others.
      warnings.insert(warnings.end(), log->summary.warnings.begin(), log->summary.warnings.end());
      continue;
    }
    logs.push_back(std::move(*log));
  }
  if (logs.empty()) {
    throw UserError(warnings.empty()
                        ? located("analyze", 0, "no log was given", "pass a steps.jsonl or its directory")
                        : warnings.front());
  }
  return logs;
}

namespace {

// The micro-batch studies among the logs, with their configuration.
std::vector<MicroBatchLog> microbatch_studies(const std::vector<LoadedLog>& logs) {
  std::vector<MicroBatchLog> studies;
  for (const LoadedLog& log : logs) {
    MicroBatchLog study;
    study.log = log.summary.path;
    for (const SweepRecord& r : log.records) {
      const auto* run = std::get_if<RunRecord>(&r);
      if (run != nullptr && run->type == record::kRun) study.config = run->config;
    }
    study.results = log.microbatch_results;
    study.plans = log.layer_plans;
    if (!study.results.empty()) studies.push_back(std::move(study));
  }
  return studies;
}

}  // namespace

Analysis analyze_logs(const std::vector<std::string>& arguments, const AnalyzeOptions& options) {
  std::vector<std::string> warnings;
  const std::vector<LoadedLog> logs = load_logs(arguments, warnings);
  for (const LoadedLog& log : logs) {
    for (const std::string& w : log.summary.warnings) warnings.push_back(w);
  }
  const std::vector<RawGroup> raw = group_records(logs, options.grouping, warnings);

  std::vector<MicroBatchLog> studies = microbatch_studies(logs);

  const bool measured =
      std::any_of(raw.begin(), raw.end(), [](const RawGroup& g) { return !g.points.empty(); });
  if (!measured && !studies.empty()) {
    Analysis a;
    for (const LoadedLog& log : logs) a.logs.push_back(log.summary);
    a.microbatch = std::move(studies);
    a.warnings = std::move(warnings);
    return a;
  }
  if (!measured) {
    for (const RawGroup& g : raw) {
      if (!g.oom.empty()) {
        throw UserError(located(g.logs.front(), 0,
                                "holds only out-of-memory records: even batch size " +
                                    std::to_string(*g.oom.begin()) + " of " + describe_identity(g.identity) +
                                    " did not fit, so there are no step times to analyze",
                                "sweep smaller batch sizes, a smaller input or a lower precision"));
      }
    }
    throw UserError(located(logs.front().summary.path, 0, "holds no measured batch size (no step records)",
                            "analyze a sweep that finished at least one batch size"));
  }

  Analysis a = analyze_groups(raw, options);
  for (const LoadedLog& log : logs) a.logs.push_back(log.summary);
  a.microbatch = std::move(studies);
  warnings.insert(warnings.end(), a.warnings.begin(), a.warnings.end());
  a.warnings = std::move(warnings);
  return a;
}

}  // namespace batchscope
