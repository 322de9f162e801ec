#include "lib/config/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "lib/common/errors.h"
#include "lib/common/words.h"

namespace batchscope::yaml_fields {
namespace {

// Names people reach for from other tools, too far from ours for the edit distance to catch.
const std::map<std::string, std::string> kAliases = {
    {"batch_size", "batch"},    {"batch_sizes", "batch"},
    {"batchsize", "batch"},     {"bs", "batch"},
    {"batches", "batch"},       {"input_shape", "input"},
    {"shape", "input"},         {"num_classes", "classes"},
    {"dtype", "precision"},     {"mode", "phase"},
    {"iterations", "steps"},    {"timed_steps", "steps"},
    {"warmup_steps", "warmup"}, {"learning_rate", "lr"},
    {"optim", "optimizer"},     {"experiment", "experiments"},
    {"default", "defaults"},    {"output", "out"},
    {"output_dir", "out"},      {"gpu", "device"}};

// Values as other tools name them.
const std::map<std::string, std::string> kValueAliases = {{"inference", "infer"},
                                                          {"eval", "infer"},
                                                          {"forward", "infer"},
                                                          {"training", "train"},
                                                          {"float32", "fp32"},
                                                          {"float", "fp32"},
                                                          {"single", "fp32"},
                                                          {"float16", "fp16"},
                                                          {"half", "fp16"},
                                                          {"bfloat16", "bf16"},
                                                          {"sequential", "ascending"},
                                                          {"random", "shuffled"},
                                                          {"true", "on"},
                                                          {"false", "off"},
                                                          {"yes", "on"},
                                                          {"no", "off"}};

}  // namespace

[[noreturn]] void fail(const Where& where, const std::string& problem, const std::string& fix) {
  throw UserError(located(where.source, where.line, problem, fix));
}

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

Where inside(const Where& parent, const YAML::Node& node, const std::string& label) {
  return {parent.source, parent.line == 0 ? 0 : line_of(node), label};
}

std::string shown(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_of(" \t") == std::string::npos;
  return plain ? text : "\"" + text + "\"";
}

std::string describe(const YAML::Node& node) {
  if (node.IsNull()) return "empty";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return shown(node.Scalar());
}

std::string join(const std::vector<std::string>& words, const std::string& last) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? last : ", ";
    out += words[i];
  }
  return out;
}

std::string alias_of(const std::string& word) {
  const auto alias = kAliases.find(word);
  return alias == kAliases.end() ? "" : alias->second;
}

std::string choose_from(const std::string& word, const std::vector<std::string>& accepted,
                        const std::string& what) {
  std::string best = alias_of(word);
  if (!std::count(accepted.begin(), accepted.end(), best)) best = nearest_word(word, accepted, 3);
  if (best.empty()) return "use one of the " + what + ": " + join(accepted);
  return "did you mean " + best + " (" + what + ": " + join(accepted) + ")";
}

std::string meant_value(const std::string& word, const std::vector<std::string>& accepted) {
  return meant_word(word, accepted, kValueAliases);
}

std::string value_fix(const std::string& word, const std::vector<std::string>& accepted,
                      const std::string& fix) {
  const std::string meant = meant_value(word, accepted);
  return meant.empty() ? fix : "did you mean " + meant + "? " + fix;
}

std::string get_string(const Entry& e, const std::string& fix) {
  if (!e.node.IsScalar())
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a word", fix);
  return e.node.Scalar();
}

int64_t get_int(const Entry& e, int64_t min, int64_t max, const std::string& fix) {
  int64_t value = 0;
  const std::string text = e.node.IsScalar() ? e.node.Scalar() : "";
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size()) {
    fail(e.where, e.where.label + " " + text + " is too large", fix);
  }
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a whole number", fix);
  }
  if (value < min || value > max) {
    fail(e.where, e.where.label + " " + text + (value < min ? " is too small" : " is too large"), fix);
  }
  return value;
}

double get_double(const Entry& e, double min, bool min_allowed, double max, const std::string& fix) {
  const std::string text = e.node.IsScalar() ? e.node.Scalar() : "";
  char* end = nullptr;
  const double value = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a number", fix);
  }
  if (value < min || (value == min && !min_allowed) || value >= max) {
    fail(e.where, e.where.label + " " + text + (value >= max ? " is too large" : " is too small"), fix);
  }
  return value;
}

bool get_bool(const Entry& e) {
  bool value = false;
  if (!e.node.IsScalar() || !YAML::convert<bool>::decode(e.node, value)) {
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be true or false",
         "write true or false");
  }
  return value;
}

void set_entry(Entries& into, const std::string& key, Entry entry) {
  into.erase(key);
  into.emplace(key, std::move(entry));
}

void collect(const YAML::Node& map, const std::string& source, const std::vector<std::string>& accepted,
             const std::string& context, Entries& into, const std::set<std::string>& skip) {
  std::map<std::string, int> seen;
  for (const auto& item : map) {
    const Where key_at{source, line_of(item.first), ""};
    if (!item.first.IsScalar())
      fail(key_at, "a key in " + context + " is not a plain word", "write key: value");
    const std::string key = item.first.Scalar();
    if (seen.count(key)) {
      fail(key_at,
           key + " appears twice in " + context + " (first at line " + std::to_string(seen[key]) + ")",
           "keep one of them");
    }
    seen[key] = key_at.line;
    if (skip.count(key)) continue;
    if (!std::count(accepted.begin(), accepted.end(), key)) {
      fail(key_at, "unknown key " + shown(key) + " in " + context,
           choose_from(key, accepted, "accepted keys"));
    }
    const int value_line = item.second.IsNull() ? key_at.line : line_of(item.second);
    set_entry(into, key, Entry{item.second, Where{source, value_line, key}});
  }
}

std::optional<int> second_document_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool content = false, marked = false;
  const auto blank = [](const std::string& rest) {
    const std::size_t first = rest.find_first_not_of(" \t\r");
    return first == std::string::npos || rest[first] == '#';
  };
  while (std::getline(in, line)) {
    ++number;
    const bool marker = (line.rfind("---", 0) == 0 || line.rfind("...", 0) == 0) &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    if (marker) {
      if (content && !blank(line.substr(3))) return number;
      marked = marked || content;
      continue;
    }
    if (blank(line)) continue;
    if (marked) return number;
    content = true;
  }
  return std::nullopt;
}

}  // namespace batchscope::yaml_fields
