#pragma once

#include <string>
#include <vector>

#include "lib/records/records.h"

namespace batchscope {

// steps.csv carries the per-batch records of steps.jsonl (step, point, oom, skipped; not the nested
// run records) in fixed columns, for spreadsheets: every field the JSON lines hold, numbers in the
// shortest form that reads back to the same double, and the run_id of the session that wrote the row.
// It is derived from steps.jsonl and can always be rebuilt from it.
const std::vector<std::string>& csv_columns();
std::string csv_header_line();
// The row of a per-batch record ("" for run and end records), run_id being its session's.
std::string csv_line(const SweepRecord& record, const std::string& run_id);

// Writes path atomically (temporary file, then rename) with a header and one line per per-batch
// record, each with the run_id of the run or resume record before it.
void rewrite_csv(const std::string& path, const std::vector<SweepRecord>& records);
// Appends the rows of these records to an existing CSV file. run_id is the session's the rows belong
// to; a run or resume record among them takes its place.
void append_csv(const std::string& path, const std::vector<SweepRecord>& records, std::string& run_id);

}  // namespace batchscope
