#include "lib/records/maxbatch_records.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <utility>

#include "lib/common/errors.h"
#include "lib/common/limits.h"
#include "lib/config/config.h"
#include "lib/records/field_check.h"

namespace batchscope {

using field_check::read_number;
using field_check::read_text;
using field_check::read_whole;

std::string to_string(TryStage stage) {
  switch (stage) {
    case TryStage::Grow:
      return "grow";
    case TryStage::Bisect:
      return "bisect";
    case TryStage::Confirm:
      return "confirm";
  }
  TORCH_CHECK(false, "unknown try stage");
}

Json to_json(const MaxBatchTry& t) {
  Json j = {{"batch_size", t.batch_size}, {"stage", to_string(t.stage)},
            {"steps", t.steps},           {"fits", t.fits},
            {"seconds", t.seconds},       {"peak_memory_bytes", optional_json(t.peak_memory_bytes)}};
  if (!t.fits) j["error"] = t.error;
  return j;
}

MaxBatchTry try_from_json(const Json& j) {
  MaxBatchTry t;
  t.batch_size = read_whole(j, "batch_size");
  if (t.batch_size < 1 || t.batch_size > limits::kMaxBatchSize) {
    throw BadRecord("has a batch_size that is not a whole number from 1 to " +
                    std::to_string(limits::kMaxBatchSize));
  }
  const std::string stage = read_text(j, "stage");
  const TryStage stages[] = {TryStage::Grow, TryStage::Bisect, TryStage::Confirm};
  const auto* found =
      std::find_if(std::begin(stages), std::end(stages), [&](TryStage s) { return to_string(s) == stage; });
  if (found == std::end(stages)) {
    throw BadRecord("has a stage \"" + printable(stage) + "\" that is not grow, bisect or confirm");
  }
  t.stage = *found;
  const int64_t steps = read_whole(j, "steps");
  if (steps < 1 || steps > limits::kMaxSteps) {
    throw BadRecord("has a steps that is not a whole number from 1 to " + std::to_string(limits::kMaxSteps));
  }
  t.steps = static_cast<int>(steps);
  if (!j.contains("fits") || !j["fits"].is_boolean()) throw BadRecord("has no fits that is true or false");
  t.fits = j["fits"].get<bool>();
  t.seconds = read_number(j, "seconds");
  if (t.seconds < 0) throw BadRecord("has a seconds below 0");
  if (j.contains("peak_memory_bytes") && !j["peak_memory_bytes"].is_null()) {
    t.peak_memory_bytes = read_whole(j, "peak_memory_bytes");
  }
  if (!t.fits) t.error = read_text(j, "error");
  return t;
}

SearchLog read_search_log(const std::string& path) {
  SearchLog log;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return log;
  const JsonlContents contents = read_jsonl(path);
  if (contents.compressed) {
    throw UserError(located(path, 0, "is compressed (gzip), and a search appends its records to a plain file",
                            "decompress it, or choose another --out"));
  }
  log.truncated_tail = contents.truncated_tail;
  log.complete_bytes = contents.complete_bytes;
  // The search at the end: what follows the last result.
  std::size_t begin = 0;
  for (std::size_t i = 0; i < contents.records.size(); ++i) {
    if (contents.records[i]["type"] == record::kMaxBatch) begin = i + 1;
  }
  // A search's opening record, which says what the search is: its config and search options.
  const auto opening = [&](std::size_t i) {
    const Json& r = contents.records[i];
    if (!r.contains("config") || !r["config"].is_object() || !r.contains("search") ||
        !r["search"].is_object()) {
      throw UserError(located(path, contents.record_lines[i],
                              "has a maxbatch_search record without its config and search",
                              "repair or remove that line, or choose another --out"));
    }
    return r;
  };
  if (begin > 0 && begin == contents.records.size()) {
    // The file ends with a result: the search it closes opened after the result before it, if any.
    FinishedSearch finished;
    finished.result = contents.records[begin - 1];
    finished.result_line = contents.record_lines[begin - 1];
    for (std::size_t i = begin - 1; i-- > 0 && contents.records[i]["type"] != record::kMaxBatch;) {
      if (contents.records[i]["type"] == record::kMaxBatchSearch) finished.opening = opening(i);
    }
    log.finished = std::move(finished);
  }
  StoppedSearch stopped;
  for (std::size_t i = begin; i < contents.records.size(); ++i) {
    const Json& r = contents.records[i];
    const int line = contents.record_lines[i];
    const std::string type = r["type"].get<std::string>();
    if (type == record::kMaxBatchSearch) {
      // A resumed session opens with one more; the first says what the search is.
      if (!stopped.opening) {
        stopped.opening = opening(i);
        stopped.opening_line = line;
      }
    } else if (type == record::kMaxBatchTry) {
      try {
        stopped.tries.push_back(try_from_json(r));
      } catch (const BadRecord& bad) {
        throw UserError(located(path, line, std::string("is damaged: the record ") + bad.what(),
                                "repair or remove that line, or choose another --out"));
      }
      stopped.tries.back().earlier = true;
      stopped.try_lines.push_back(line);
    } else {
      throw UserError(located(path, line,
                              "holds a \"" + printable(type) + "\" record, which maxbatch does not write",
                              "choose another --out for the search"));
    }
  }
  if (stopped.opening || !stopped.tries.empty()) log.stopped = std::move(stopped);
  return log;
}

namespace {

// The names of the GPUs a record's context lists, in order.
Json gpu_names(const Json& record) {
  Json names = Json::array();
  if (record.contains("gpus") && record["gpus"].is_array()) {
    for (const Json& gpu : record["gpus"]) names.push_back(gpu.is_object() ? gpu.value("name", "") : "");
  }
  return names;
}

}  // namespace

std::string search_difference(const Json& earlier, const Json& now) {
  const auto part = [](const Json& record, const char* key) {
    return record.contains(key) ? record[key] : Json();
  };
  // The device and LibTorch version as an object of their own, so that one comparison names either.
  const auto where = [&](const Json& record) {
    return Json{{"device", part(record, "device")}, {"libtorch_version", part(record, "libtorch_version")}};
  };
  for (const auto& [before, after] :
       {std::pair{without_file_arguments(part(earlier, "config")),
                  without_file_arguments(part(now, "config"))},
        std::pair{part(earlier, "search"), part(now, "search")}, std::pair{where(earlier), where(now)}}) {
    const std::string difference = first_key_difference(before, after);
    if (!difference.empty()) return difference;
  }
  // How much fits on a GPU depends on which GPU and how its caching allocator is set.
  if (part(now, "device").is_string() && part(now, "device").get<std::string>().rfind("cuda", 0) == 0) {
    if (gpu_names(earlier) != gpu_names(now)) {
      return "the GPUs were " + gpu_names(earlier).dump() + " there and are " + gpu_names(now).dump() +
             " here";
    }
    const std::string allocator = first_key_difference(part(earlier, "cuda_allocator_environment"),
                                                       part(now, "cuda_allocator_environment"));
    if (!allocator.empty()) return allocator;
  }
  return "";
}

}  // namespace batchscope
