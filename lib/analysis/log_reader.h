#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/records/microbatch_records.h"
#include "lib/records/profile_records.h"
#include "lib/records/records.h"

namespace batchscope {

// A log as analyze uses it: its sweep records and the records of a micro-batch study, read and
// checked, with their line numbers; and what was wrong with the rest (in summary.warnings).
struct LoadedLog {
  LogSummary summary;
  std::vector<SweepRecord> records;
  std::vector<int> lines;
  std::vector<MicroBatchResultRecord> microbatch_results;
  std::vector<LayerPlanRecord> layer_plans;
  int layer_costs = 0;  // layer_cost and layer_cost_skipped records, checked and counted
  // From profile.jsonl beside the log (sweep --profile), in file order: a batch size profiled again
  // after an interrupted session appears twice, and the later one counts.
  std::vector<ProfileRecord> profiles;
};

// The file a log argument names: a directory stands for the first of its steps.jsonl, steps.jsonl.gz,
// microbatch.jsonl and microbatch.jsonl.gz that it holds (its steps.jsonl where it holds none).
std::string log_file_for(const std::string& argument);

// Reads one log leniently: unreadable lines, an unfinished last line and unknown record types become
// warnings and the rest is kept. A missing or unreadable file gives nullopt with a warning.
std::optional<LoadedLog> load_log(const std::string& argument, std::vector<std::string>& warnings);

}  // namespace batchscope
