#include "lib/sweep/kept_search.h"

#include <filesystem>
#include <stdexcept>
#include <utility>

#include "lib/common/errors.h"

namespace batchscope {
namespace {

// A record with the run's context and the experiment, for a search on e.device.
Json search_context(const char* type, const ExperimentConfig& e, const std::string& command) {
  Json record = context_record(type, command, Json(to_json(e)));
  // The search picks its own sizes: the batch of the config would only mislead.
  record["config"].erase("batch");
  record["config"].erase("batch_to_max");
  record["device"] = e.device;
  return record;
}

// The answer of a search's maxbatch record; BadRecord where its fields are not what a search writes.
void read_answer(const Json& record, EarlierSearch& earlier) {
  if (!record.contains("result") || !record["result"].is_object()) throw BadRecord("has no result");
  const Json& result = record["result"];
  const Json answer = result.value("max_batch", Json());
  if (!answer.is_null() && !(answer.is_number_integer() && answer.get<int64_t>() >= 1)) {
    throw BadRecord("has a result.max_batch that is neither a whole number from 1 up nor null");
  }
  if (!answer.is_null()) earlier.answer = answer.get<int64_t>();
  const Json upper = result.value("hit_upper_bound", Json(false));
  if (!upper.is_boolean()) throw BadRecord("has a result.hit_upper_bound that is not true or false");
  earlier.hit_upper_bound = upper.get<bool>();
}

// The earlier search's CPU memory limit, where it began with one.
std::optional<int64_t> cpu_limit_of(const Json& opening) {
  const Json limit = opening["search"].value("cpu_memory_limit_bytes", Json());
  if (limit.is_number_integer() && limit.get<int64_t>() > 0) return limit.get<int64_t>();
  return std::nullopt;
}

}  // namespace

Json search_opening_record(const ExperimentConfig& e, const MaxBatchOptions& search,
                           const std::string& command, int resumed_tries) {
  Json record = search_context(record::kMaxBatchSearch, e, command);
  record["search"] = to_json(search);
  if (resumed_tries > 0) record["resumed_tries"] = resumed_tries;
  return record;
}

Json search_try_record(const ExperimentConfig& e, const MaxBatchTry& t) {
  Json record = {
      {"type", record::kMaxBatchTry}, {"experiment", e.name}, {"model", e.model}, {"device", e.device}};
  const Json fields = to_json(t);
  for (const auto& [key, value] : fields.items()) record[key] = value;
  return record;
}

Json search_result_record(const ExperimentConfig& e, const MaxBatchResult& result,
                          const std::string& command) {
  Json record = search_context(record::kMaxBatch, e, command);
  record["result"] = to_json(result);
  return record;
}

EarlierSearch find_earlier_search(const std::string& path, const ExperimentConfig& e,
                                  const MaxBatchOptions& search, const std::string& command,
                                  bool keep_cpu_limit) {
  SearchLog log = read_search_log(path);
  EarlierSearch earlier;
  earlier.options = search;
  earlier.truncated_tail = log.truncated_tail;
  earlier.complete_bytes = log.complete_bytes;
  std::optional<Json> opening;  // of the search the file ends with
  if (log.stopped) {
    opening = log.stopped->opening;
    earlier.stopped = std::move(*log.stopped);
  } else if (log.finished) {
    opening = log.finished->opening;
  }
  if (!opening) {
    earlier.state = log.stopped ? EarlierSearch::State::Unopened : EarlierSearch::State::None;
    return earlier;
  }
  if (keep_cpu_limit && torch::Device(e.device).is_cpu()) {
    if (const std::optional<int64_t> limit = cpu_limit_of(*opening)) earlier.options.cpu_memory_limit = limit;
  }
  const std::string difference =
      search_difference(*opening, search_opening_record(e, earlier.options, command, 0));
  if (!difference.empty()) {
    earlier.options = search;
    earlier.state = log.stopped ? EarlierSearch::State::Different : EarlierSearch::State::None;
    earlier.why = difference;
    earlier.line = earlier.stopped.opening_line;
    return earlier;
  }
  if (log.finished) {
    try {
      read_answer(log.finished->result, earlier);
    } catch (const BadRecord& bad) {
      throw UserError(located(path, log.finished->result_line,
                              std::string("is damaged: the record ") + bad.what(),
                              "repair or remove that line, or remove the file to search again"));
    }
    earlier.state = EarlierSearch::State::Finished;
    return earlier;
  }
  // Replaying the tries alone, with no try run, shows whether they are this search's.
  SearchSession dry_run;
  dry_run.earlier_tries = earlier.stopped.tries;
  dry_run.stop_requested = [] { return true; };
  try {
    find_max_batch([](int64_t, int) -> ProbeOutcome { throw std::logic_error("a replay runs no try"); },
                   earlier.options, {}, dry_run);
  } catch (const MaxBatchStopped&) {
  } catch (const EarlierTriesDiffer& differ) {
    earlier.options = search;
    earlier.state = EarlierSearch::State::OtherTries;
    earlier.why = differ.what();
    earlier.line = earlier.stopped.try_lines.at(differ.index);
    return earlier;
  }
  earlier.state = EarlierSearch::State::Stopped;
  return earlier;
}

void cut_truncated_tail(const std::string& path, const EarlierSearch& earlier) {
  if (earlier.truncated_tail) std::filesystem::resize_file(path, earlier.complete_bytes);
}

}  // namespace batchscope
