#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace batchscope {

// A count with its noun in the right number: "1 plot", "3 plots", "1 batch size", "2 batch sizes".
// `plural` defaults to the singular with an "s".
inline std::string counted(long long n, const std::string& singular, const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

// Items as a sentence lists them: "a", "a and b", "a, b and c".
inline std::string listed(const std::vector<std::string>& items) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i)
    text += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return text;
}

// Whole numbers joined by `separator`: joined_numbers(std::vector<int64_t>{3, 224, 224}, "x") is "3x224x224".
template <typename Integer>
std::string joined_numbers(const std::vector<Integer>& numbers, const std::string& separator) {
  std::string text;
  for (std::size_t i = 0; i < numbers.size(); ++i)
    text += (i == 0 ? "" : separator) + std::to_string(numbers[i]);
  return text;
}

// A quantity measured in samples, such as a noise scale: whole from 100 up ("1303"), three significant
// digits below ("28.9").
inline std::string samples_text(double samples) {
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(samples) >= 100 ? "%.0f" : "%.3g", samples);
  return text;
}

// An energy: "412 J" from 100 J up, three significant digits below ("3.27 J"), kJ from 10 kJ ("12.4 kJ").
inline std::string energy_text(double joules) {
  char text[32];
  if (std::fabs(joules) >= 10000) {
    std::snprintf(text, sizeof text, "%.3g kJ", joules / 1000);
  } else {
    std::snprintf(text, sizeof text, std::fabs(joules) >= 100 ? "%.0f J" : "%.3g J", joules);
  }
  return text;
}

// The text in lower case (ASCII): "CIFAR-10" is "cifar-10".
inline std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Levenshtein's distance: the fewest single-character insertions, deletions and substitutions that make
// a into b ("modle" to "model" is 2).
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate nearest to a mistyped word, the first of those equally near, if it is nearer than
// `below`; else empty.
inline std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates,
                                std::size_t below) {
  std::string best;
  for (const std::string& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < below) best = candidate, below = d;
  }
  return best;
}

// The word of `accepted` that `word` was meant for, in any case: the word itself, the one `aliases`
// gives for it (another tool's name, too far from ours for the edit distance to catch: "inference" is
// infer, "merge" analyze), or the nearest, one edit off at most for words of four letters or fewer (fp8 is
// two from fp32 and fp16) and two for longer ones. Empty where none is.
inline std::string meant_word(const std::string& word, const std::vector<std::string>& accepted,
                              const std::map<std::string, std::string>& aliases) {
  const auto known = [&](const std::string& w) {
    return std::count(accepted.begin(), accepted.end(), w) > 0;
  };
  const std::string lower = lowercase(word);
  if (known(lower)) return lower;
  const auto alias = aliases.find(lower);
  if (alias != aliases.end() && known(alias->second)) return alias->second;
  return nearest_word(lower, accepted, lower.size() <= 4 ? 2 : 3);
}

}  // namespace batchscope
