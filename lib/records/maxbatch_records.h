#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/records/records.h"

namespace batchscope {

// The records of a batch-size search (`batchscope maxbatch --out FILE`, appended): a maxbatch_search
// record opens each search (the run record's context, the experiment, the device and the search's
// options; a session that resumes a stopped search writes one more, with resumed_tries), then a
// maxbatch_try per try as it ends, and the maxbatch result closes the search. A search stopped before its
// result is resumed from its tries by the same command.

enum class TryStage { Grow, Bisect, Confirm };
std::string to_string(TryStage stage);

struct MaxBatchTry {
  int64_t batch_size = 0;
  TryStage stage = TryStage::Grow;
  int steps = 0;
  bool fits = false;
  double seconds = 0;  // of the whole try: making the batch, the steps, releasing memory after a failure
  std::optional<int64_t> peak_memory_bytes;
  std::string error;
  bool earlier = false;  // read back from an earlier session of the same search, not run again
};

// The try's own fields (the command adds the experiment's name, model and device in front).
Json to_json(const MaxBatchTry& t);
// Read back with every field's type checked; BadRecord (in words that follow "the record") otherwise.
MaxBatchTry try_from_json(const Json& j);

// The search at the end of a --out file, where it has no result yet.
struct StoppedSearch {
  std::optional<Json> opening;  // its maxbatch_search record; none where only tries were written
  int opening_line = 0;         // 1-based
  std::vector<MaxBatchTry> tries;
  std::vector<int> try_lines;  // the 1-based line of each try
};

// The search whose result ends a --out file.
struct FinishedSearch {
  std::optional<Json> opening;  // its (first) maxbatch_search record; none where an older batchscope wrote it
  Json result;                  // its maxbatch record
  int result_line = 0;          // 1-based
};

struct SearchLog {
  std::optional<StoppedSearch> stopped;  // none where the file is empty or ends with a search's result
  std::optional<FinishedSearch> finished;  // where the file ends with a search's result
  // A write cut short leaves half a line after the last whole one; appending must start after them.
  bool truncated_tail = false;
  std::uintmax_t complete_bytes = 0;
};

// Reads a --out file of maxbatch (which need not exist). Throws UserError naming the file, the line and
// the fix for a line that is not a record, a try whose fields are wrong, a record that maxbatch does not
// write, or a gzip file (appending needs plain text).
SearchLog read_search_log(const std::string& path);

// How the search opened by `now` differs from the stopped one opened by `earlier` (both maxbatch_search
// records) in what decides the search's course: the experiment, the device, the search's options, the
// LibTorch version, and on a GPU its name and the caching allocator's settings. "" where they agree, else
// words such as "precision was fp32 there and is bf16 here".
std::string search_difference(const Json& earlier, const Json& now);

}  // namespace batchscope
