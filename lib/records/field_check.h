#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lib/records/jsonl.h"

// Internal to lib/records/: the checks of a field's value that the readers of every record type share.
namespace batchscope::field_check {

// A whole number that fits int64_t, from min to max.
bool is_whole(const Json& j, int64_t min = std::numeric_limits<int64_t>::min(),
              int64_t max = std::numeric_limits<int64_t>::max());
bool is_finite_number(const Json& j);
// The key with its article, for sentences: "a batch_size", "an energy_j".
std::string with_article(const std::string& key);

// Reading a field of a record from outside: the field must be there with the right type, else
// BadRecord names it ("has a median_ms that is not a number").
std::string read_text(const Json& j, const char* key);
double read_number(const Json& j, const char* key);
std::optional<double> read_optional_number(const Json& j, const char* key);  // absent or null: none
int64_t read_whole(const Json& j, const char* key);
std::vector<int64_t> read_sizes(const Json& j, const char* key);
const Json& read_object(const Json& j, const char* key);
const Json& read_array(const Json& j, const char* key);

}  // namespace batchscope::field_check
