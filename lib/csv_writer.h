#pragma once

#include <string>
#include <vector>

#include "lib/records.h"

namespace batchscope {

// steps.csv carries the per-batch records of steps.jsonl (not the nested run records) in fixed
// columns, for spreadsheets. It is derived from steps.jsonl and can always be rebuilt from it.
const std::vector<std::string>& csv_columns();
std::string csv_header_line();
std::string csv_line(const Json& record);  // empty for records without batch_size (run, end)

// Writes path atomically (temporary file, then rename) with a header and one line per record.
void rewrite_csv(const std::string& path, const std::vector<Json>& records);
// Appends the lines of these records to an existing CSV file.
void append_csv(const std::string& path, const std::vector<Json>& records);

}  // namespace batchscope
