#include "lib/run_store.h"

#include <filesystem>

#include "lib/csv_writer.h"
#include "lib/errors.h"

namespace fs = std::filesystem;

namespace batchscope {

RunStore::RunStore(const std::string& dir, const Json& experiments, bool force)
    : jsonl_path_((fs::path(dir) / "steps.jsonl").string()),
      csv_path_((fs::path(dir) / "steps.csv").string()) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UserError(located(dir, 0, "the output directory cannot be created (" + ec.message() + ")",
                            "choose an --out directory you can write to"));
  }
  const bool has_log = fs::exists(jsonl_path_) && fs::file_size(jsonl_path_) > 0;
  std::vector<Json> kept;  // the records of an interrupted run, for rebuilding steps.csv
  if (has_log && force) {
    fs::resize_file(jsonl_path_, 0);
  } else if (has_log) {
    JsonlContents contents = read_jsonl(jsonl_path_);
    const auto& records = contents.records;
    if (records.empty() || records.front().value("type", "") != record::kRun) {
      throw UserError(located(jsonl_path_, 1, "does not start with a batchscope run record",
                              "choose another --out directory or pass --force to replace it"));
    }
    const Json& front = records.front();
    const bool same = front.contains("config") && front["config"].contains("experiments") &&
                      front["config"]["experiments"] == experiments;
    if (!same) {
      throw UserError(located(jsonl_path_, 1,
                              "holds a sweep of different experiments than this command asks for",
                              "run the same command to resume it, choose another --out directory, or pass "
                              "--force to replace it"));
    }
    for (const Json& r : records) {
      if (r.value("type", "") == record::kEnd) {
        throw UserError(
            located(jsonl_path_, 0, "already holds a complete sweep of these experiments",
                    "choose another --out directory or pass --force to run it again and replace it"));
      }
      note(r);
    }
    if (contents.truncated_tail)
      fs::resize_file(jsonl_path_, contents.complete_bytes);  // half a line, no record
    resuming_ = true;
    kept = std::move(contents.records);
  }
  writer_ = std::make_unique<JsonlWriter>(jsonl_path_);
  rewrite_csv(csv_path_, kept);
}

void RunStore::note(const Json& r) {
  const std::string type = r.value("type", "");
  if (type != record::kPoint && type != record::kOom && type != record::kSkipped) return;
  const std::pair<std::string, int64_t> key{r.value("experiment", ""), r.value("batch_size", int64_t{0})};
  done_.insert(key);
  if (type == record::kOom) ooms_.push_back(key);
}

bool RunStore::done(const std::string& experiment, int64_t batch_size) const {
  return done_.count({experiment, batch_size}) > 0;
}

std::optional<int64_t> RunStore::out_of_memory_at(const std::string& experiment) const {
  std::optional<int64_t> smallest;
  for (const auto& [name, batch] : ooms_) {
    if (name == experiment && (!smallest || batch < *smallest)) smallest = batch;
  }
  return smallest;
}

void RunStore::write(const std::vector<Json>& records) {
  for (const Json& r : records) {
    writer_->add(r);
    note(r);
  }
  writer_->flush();
  append_csv(csv_path_, records);
}

std::vector<Json> RunStore::read_all() const { return read_jsonl(jsonl_path_).records; }

}  // namespace batchscope
