#include "lib/analysis/jump_causes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "lib/common/words.h"

namespace batchscope {
namespace {

// A kernel carries weight in its layer when it takes at least this share of the layer's time.
constexpr double kKernelShare = 0.05;
// The layers named for a jump: the largest changes until they make up this share of it.
constexpr double kExplainedShare = 0.9;
constexpr std::size_t kMostLayersNamed = 5;

using LayerKey = std::pair<std::string, std::string>;

double layer_ms(const LayerTime& l, bool device) { return device ? l.device_ms.value_or(0.0) : l.cpu_ms; }

std::string signed_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.3g ms", ms);
  return text;
}

// The kernels of one layer and pass that carry weight there, with their time.
std::map<std::string, double> weighty_kernels(const ProfileRecord& p, const LayerKey& key,
                                              double layer_total_ms) {
  std::map<std::string, double> names;
  for (const KernelTime& k : p.kernels) {
    if (k.layer != key.first || k.pass != key.second || k.name == "(other)") continue;
    if (layer_total_ms <= 0 || k.total_ms >= kKernelShare * layer_total_ms) names[k.name] += k.total_ms;
  }
  return names;
}

// The kernels of `side` that `other` does not have, the most time first: a switch is named by its
// heaviest kernels, not by the alphabetically first.
std::vector<std::string> only_in(const std::map<std::string, double>& side,
                                 const std::map<std::string, double>& other) {
  std::vector<std::pair<std::string, double>> found;
  for (const auto& [name, ms] : side)
    if (!other.count(name)) found.emplace_back(name, ms);
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> names;
  for (const auto& [name, ms] : found) names.push_back(name);
  return names;
}

std::map<LayerKey, double> times_of(const ProfileRecord& p, bool device) {
  std::map<LayerKey, double> out;
  for (const LayerTime& l : p.layers) out[{l.layer, l.pass}] += layer_ms(l, device);
  return out;
}

std::string describe(const JumpCause& c) {
  std::string text =
      std::to_string(c.from_batch) + "→" + std::to_string(c.to_batch) + ": " + signed_ms(c.step_delta_ms);
  if (!c.missing.empty()) return text + "; " + c.missing;
  for (const LayerChange& l : c.layers) text += "; " + describe_change(l);
  return text;
}

JumpCause cause_of(const Jump& jump, bool drop, const std::map<int64_t, ProfileRecord>& profiles,
                   const std::map<int64_t, double>& medians, bool device) {
  JumpCause c;
  c.from_batch = jump.from_batch;
  c.to_batch = jump.to_batch;
  c.drop = drop;
  const auto m0 = medians.find(jump.from_batch);
  const auto m1 = medians.find(jump.to_batch);
  c.step_delta_ms =
      (m0 != medians.end() && m1 != medians.end()) ? m1->second - m0->second : jump.to_ms - jump.from_ms;
  const auto p0 = profiles.find(jump.from_batch);
  const auto p1 = profiles.find(jump.to_batch);
  if (p0 == profiles.end() || p1 == profiles.end()) {
    const int64_t absent = p0 == profiles.end() ? jump.from_batch : jump.to_batch;
    c.missing = "batch size " + std::to_string(absent) + " was not profiled";
    c.summary = describe(c);
    return c;
  }
  const std::map<LayerKey, double> before = times_of(p0->second, device);
  const std::map<LayerKey, double> after = times_of(p1->second, device);
  std::set<LayerKey> keys;
  for (const auto& [k, ms] : before) keys.insert(k);
  for (const auto& [k, ms] : after) keys.insert(k);
  std::vector<LayerChange> changes;
  for (const LayerKey& k : keys) {
    LayerChange l;
    l.layer = k.first;
    l.pass = k.second;
    l.from_ms = before.count(k) ? before.at(k) : 0.0;
    l.to_ms = after.count(k) ? after.at(k) : 0.0;
    l.delta_ms = l.to_ms - l.from_ms;
    l.share = c.step_delta_ms != 0 ? l.delta_ms / c.step_delta_ms : 0.0;
    const std::map<std::string, double> k0 = weighty_kernels(p0->second, k, l.from_ms);
    const std::map<std::string, double> k1 = weighty_kernels(p1->second, k, l.to_ms);
    l.appeared = only_in(k1, k0);
    l.vanished = only_in(k0, k1);
    c.profiled_delta_ms += l.delta_ms;
    changes.push_back(std::move(l));
  }
  // The changes in the jump's direction, largest first, until they explain most of it.
  const double sign = c.step_delta_ms < 0 ? -1.0 : 1.0;
  std::stable_sort(changes.begin(), changes.end(), [&](const LayerChange& a, const LayerChange& b) {
    return sign * a.delta_ms > sign * b.delta_ms;
  });
  double explained = 0;
  double total = 0;
  for (const LayerChange& l : changes) total += std::max(0.0, sign * l.delta_ms);
  for (LayerChange& l : changes) {
    if (sign * l.delta_ms <= 0 || c.layers.size() >= kMostLayersNamed) break;
    if (total > 0 && explained >= kExplainedShare * total) break;
    explained += sign * l.delta_ms;
    c.layers.push_back(std::move(l));
  }
  c.summary = describe(c);
  return c;
}

}  // namespace

std::string describe_change(const LayerChange& l) {
  std::string text =
      l.layer + (l.pass == profile_pass::kStep ? "" : " " + l.pass) + " " + signed_ms(l.delta_ms);
  text += " (" + std::to_string(static_cast<int>(std::lround(100.0 * l.share))) + "%)";
  if (!l.switched()) return text + ", same kernels";
  const std::string from = l.vanished.empty() ? "none" : short_kernel_name(l.vanished.front());
  const std::string to = l.appeared.empty() ? "none" : short_kernel_name(l.appeared.front());
  return text + ", kernel switch: " + from + " → " + to;
}

std::string short_kernel_name(const std::string& name) {
  // A demangled signature, "RETURN TYPE ns::kernel<ARGS>(PARAMETERS)", read outside its template
  // arguments: up to the parameters (a "(" outside "<>", except "(anonymous namespace)"), then the
  // function's own name, the last word where the words before it are a return type.
  std::string flat;
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<') ++depth;
    if (depth == 0 && c == '(') {
      if (i >= 2 && name.compare(i - 2, 2, "::") == 0 && name.find(')', i) != std::string::npos) {
        const std::size_t close = name.find(')', i);
        std::string part = name.substr(i, close - i + 1);
        std::replace(part.begin(), part.end(), ' ', '\x01');  // one word with the name around it
        flat += part;
        i = close;
        continue;
      }
      break;
    }
    if (depth == 0) flat += c;
    if (c == '>' && depth > 0) --depth;
  }
  while (!flat.empty() && flat.back() == ' ') flat.pop_back();
  const std::size_t space = flat.rfind(' ');
  if (space != std::string::npos) {
    const std::string last = flat.substr(space + 1), first = flat.substr(0, flat.find(' '));
    const bool typed = first == "void" || last.find("::") != std::string::npos;
    if (typed && !last.empty()) flat = last;
  }
  if (flat.empty()) flat = name;
  std::replace(flat.begin(), flat.end(), '\x01', ' ');
  constexpr std::size_t kLongest = 72;
  if (flat.size() > kLongest) flat = flat.substr(0, kLongest - 1) + "…";
  return flat;
}

GroupProfile explain_jumps(const std::map<int64_t, ProfileRecord>& profiles, const std::vector<Jump>& jumps,
                           const std::vector<Jump>& drops, const std::map<int64_t, double>& medians) {
  GroupProfile g;
  if (profiles.empty()) return g;
  const bool device = std::all_of(profiles.begin(), profiles.end(),
                                  [](const auto& p) { return p.second.kernel_ms.has_value(); });
  g.basis = device ? "device" : "host";
  g.method = profiles.begin()->second.method;
  std::map<LayerKey, std::size_t> index;
  for (const auto& [batch, p] : profiles) {
    g.batch_sizes.push_back(batch);
    g.step_ms[batch] = p.step_ms;
    for (const LayerTime& l : p.layers) {
      const LayerKey key{l.layer, l.pass};
      auto [slot, fresh] = index.emplace(key, g.layers.size());
      if (fresh) g.layers.push_back({l.layer, l.pass, {}});
      g.layers[slot->second].ms[batch] += layer_ms(l, device);
    }
  }
  for (const Jump& j : jumps) g.causes.push_back(cause_of(j, false, profiles, medians, device));
  for (const Jump& j : drops) g.causes.push_back(cause_of(j, true, profiles, medians, device));
  return g;
}

namespace {

// Whether `other` rises across the jump's pair by at least half of the jump's own rise.
bool rises_alike(const Jump& j, const std::map<int64_t, double>& other) {
  const auto from = other.find(j.from_batch), to = other.find(j.to_batch);
  if (from == other.end() || to == other.end() || from->second <= 0 || j.from_ms <= 0) return false;
  const double own = j.to_ms / j.from_ms - 1, theirs = to->second / from->second - 1;
  return own > 0 && theirs >= own / 2;
}

// The jumps of `side` that the other side has too: found within one batch size, or seen rising alike.
std::vector<int64_t> shared_jumps(const TransferSide& side, const TransferSide& other,
                                  std::vector<int64_t>& below_threshold) {
  std::vector<int64_t> shared;
  for (const Jump& j : side.jumps) {
    const bool found = std::any_of(other.jumps.begin(), other.jumps.end(),
                                   [&](const Jump& o) { return std::llabs(o.to_batch - j.to_batch) <= 1; });
    if (found) {
      shared.push_back(j.to_batch);
    } else if (rises_alike(j, other.medians)) {
      shared.push_back(j.to_batch);
      below_threshold.push_back(j.to_batch);
    }
  }
  return shared;
}

}  // namespace

TransferVerdict transfer_verdict(const TransferSide& included, const TransferSide& excluded) {
  TransferVerdict v;
  v.included_group = included.id;
  v.excluded_group = excluded.id;
  v.included_label = included.label;
  v.excluded_label = excluded.label;
  for (const Jump& j : included.jumps) v.with_copy.push_back(j.to_batch);
  for (const Jump& j : excluded.jumps) v.on_device.push_back(j.to_batch);
  v.both = shared_jumps(included, excluded, v.below_threshold);
  std::vector<int64_t> device_below;
  const std::size_t device_shared = shared_jumps(excluded, included, device_below).size();
  const std::size_t copy_only = v.with_copy.size() - v.both.size();
  const std::size_t device_only = v.on_device.size() - device_shared;
  for (int64_t b : device_below) {
    if (std::find(v.below_threshold.begin(), v.below_threshold.end(), b) == v.below_threshold.end())
      v.below_threshold.push_back(b);
  }
  std::sort(v.below_threshold.begin(), v.below_threshold.end());
  if (v.with_copy.empty() && v.on_device.empty()) {
    v.verdict = "no jumps with or without the copy: nothing for the copy to explain";
  } else if (copy_only == 0 && device_only == 0) {
    v.verdict =
        "the jumps survive with the data already on the device: the copy over PCIe does not cause them";
  } else if (v.both.empty() && device_shared == 0 && v.with_copy.empty()) {
    v.verdict =
        "jumps only with the data already on the device: the timed copy hides them, it does not cause them";
  } else if (v.both.empty() && device_shared == 0 && v.on_device.empty()) {
    v.verdict = "the jumps appear only when the copy is timed: they come with the host-to-device transfer";
  } else {
    v.verdict = std::to_string(v.both.size()) + " of " + std::to_string(v.with_copy.size()) +
                " jumps with the copy also appear with the data on the device";
    if (copy_only > 0) v.verdict += "; the others come with the transfer";
    if (device_only > 0)
      v.verdict +=
          "; " + std::to_string(device_only) + " with the data on the device do not show with the copy";
  }
  if (!v.below_threshold.empty()) {
    v.verdict += " (before " + joined_numbers(v.below_threshold, ", ") +
                 " found on one side only: the other side's medians rise across the same sizes by at least "
                 "half as much, below its threshold)";
  }
  return v;
}

}  // namespace batchscope
