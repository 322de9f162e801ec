#pragma once

#include <optional>
#include <string>

#include "lib/config/config.h"
#include "lib/records/maxbatch_records.h"
#include "lib/records/records.h"
#include "lib/sweep/max_batch.h"

namespace batchscope {

// A batch-size search kept in a JSON-lines file, so that a stopped one goes on from its tries: the file
// of `batchscope maxbatch --out`, and OUT/maxbatch/EXPERIMENT.jsonl of a sweep whose batch runs up to
// the largest size that fits (1:max). lib/records/maxbatch_records.h describes the records.

// The record that opens a search (and each session that resumes one, with resumed_tries): the run's
// context, the experiment, the device and what decides the search's course.
Json search_opening_record(const ExperimentConfig& e, const MaxBatchOptions& search,
                           const std::string& command, int resumed_tries);
// A try's record: the experiment's name, model and device, then the try's fields.
Json search_try_record(const ExperimentConfig& e, const MaxBatchTry& t);
// The record that closes a search.
Json search_result_record(const ExperimentConfig& e, const MaxBatchResult& result,
                          const std::string& command);

// What a search about to start finds at the end of its file.
struct EarlierSearch {
  enum class State {
    None,        // no file, an empty one, or one that ends with another search's result
    Finished,    // the file ends with the result of this very search (answer, hit_upper_bound)
    Stopped,     // the file ends with this search, stopped: it goes on from stopped.tries
    Unopened,    // the file ends with tries that no maxbatch_search record opens (an older batchscope's)
    Different,   // the file ends with a stopped search of another experiment or other options (why, line)
    OtherTries,  // the file ends with tries this search would not make (why, line)
  };
  State state = State::None;
  // The options to search with: on the CPU where the caller keeps the earlier limit, the one the
  // earlier search began with (the default follows the memory available, which changes).
  MaxBatchOptions options;
  StoppedSearch stopped;          // Stopped, Unopened, Different, OtherTries
  std::optional<int64_t> answer;  // Finished: the largest size that fit (none: not even the start)
  bool hit_upper_bound = false;   // Finished
  std::string why;                // Different, OtherTries: in words that fit in brackets
  int line = 0;                   // Different, OtherTries: the line to name (1-based)
  bool truncated_tail = false;    // a write cut short: cut_truncated_tail before appending
  std::uintmax_t complete_bytes = 0;
};

// Reads `path` (which need not exist) and tells what it ends with, next to the search that `e` and
// `search` would open now. With keep_cpu_limit, a search on the CPU takes the memory limit that the
// earlier one began with before the two are compared. The stopped search's tries are replayed without
// running any, to see whether this search makes them. Throws UserError for a damaged file (see
// read_search_log), naming the line.
EarlierSearch find_earlier_search(const std::string& path, const ExperimentConfig& e,
                                  const MaxBatchOptions& search, const std::string& command,
                                  bool keep_cpu_limit);

// Cuts the half-written last line that a write cut short left, before the file is appended to.
void cut_truncated_tail(const std::string& path, const EarlierSearch& earlier);

}  // namespace batchscope
