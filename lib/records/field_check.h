#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "lib/records/jsonl.h"

// Internal to lib/records/: the checks of a field's value that the readers of every record type share.
namespace batchscope::field_check {

// A whole number that fits int64_t, from min to max.
bool is_whole(const Json& j, int64_t min = std::numeric_limits<int64_t>::min(),
              int64_t max = std::numeric_limits<int64_t>::max());
bool is_finite_number(const Json& j);
// The key with its article, for sentences: "a batch_size", "an energy_j".
std::string with_article(const std::string& key);

}  // namespace batchscope::field_check
