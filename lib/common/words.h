#pragma once

#include <string>

namespace batchscope {

// A count with its noun in the right number: "1 plot", "3 plots", "1 batch size", "2 batch sizes".
// `plural` defaults to the singular with an "s".
inline std::string counted(long long n, const std::string& singular, const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

}  // namespace batchscope
