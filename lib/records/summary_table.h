#pragma once

#include <string>
#include <vector>

#include "lib/records/records.h"

namespace batchscope {

// The end-of-sweep table: per experiment, one row per batch size (median ms, p10/p90, samples/s,
// TFLOP/s), with out-of-memory and skipped sizes named. Built from the records, any session's.
// With repeated passes a batch size's row pools the steps of all passes, and their energy windows.
std::string format_summary_table(const std::vector<SweepRecord>& records);
// The same rows as JSON, one object per (experiment, batch size) in the table's order: the key fields,
// "status" (measured, out of memory, skipped) and, where measured, samples, median/p10/p90 ms,
// samples/s, TFLOP/s and, with energy, average power, J/sample and samples/J.
Json summary_json(const std::vector<SweepRecord>& records);

}  // namespace batchscope
