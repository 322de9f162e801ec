#include "lib/records/run_store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <utility>

#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/config/config.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/environment.h"
#include "lib/records/csv_writer.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace {

// Experiments as this version writes them, so that a run record of an earlier layout (every optimizer
// setting kept, whichever the optimizer used) still compares equal to the same command today. What a
// TorchScript file's forward is given after its input is left out: it follows from the file's code,
// which model_file.crc32 compares, and an earlier batchscope did not write it.
Json as_written_now(const Json& experiments) {
  if (!experiments.is_array()) return experiments;
  Json out = Json::array();
  for (const Json& e : experiments) {
    try {
      out.push_back(Json(to_json(experiment_from_json(e))));
    } catch (const std::exception&) {
      out.push_back(e);
    }
    out.back() = without_file_arguments(out.back());
  }
  return out;
}

bool same_experiments(const Json& written, const Json& asked) {
  return written == asked || as_written_now(written) == as_written_now(asked);
}

std::string shown_value(const Json* value) { return value == nullptr ? "none" : value->dump(); }

// The first key path at which two values differ ("optimizer.lr"), with each side's value; "" where they
// are equal.
std::string first_difference(const Json& written, const Json& asked, const std::string& path) {
  if (written == asked) return "";
  if (!written.is_object() || !asked.is_object()) {
    return (path.empty() ? "the experiments" : path) + " is " + written.dump() + " in the log and " +
           asked.dump() + " here";
  }
  std::vector<std::string> keys;
  for (auto it = written.begin(); it != written.end(); ++it) keys.push_back(it.key());
  for (auto it = asked.begin(); it != asked.end(); ++it) {
    if (!written.contains(it.key())) keys.push_back(it.key());
  }
  for (const std::string& key : keys) {
    const std::string at = path.empty() ? key : path + "." + key;
    const Json* w = written.contains(key) ? &written[key] : nullptr;
    const Json* a = asked.contains(key) ? &asked[key] : nullptr;
    if (w != nullptr && a != nullptr) {
      if (std::string d = first_difference(*w, *a, at); !d.empty()) return d;
    } else {
      return at + " is " + shown_value(w) + " in the log and " + shown_value(a) + " here";
    }
  }
  return "";
}

// What differs first between the log's experiments and the command's, as the sweep writes them now:
// "experiment a: optimizer.foreach is none in the log and true here".
std::string experiments_difference(const Json& written, const Json& asked) {
  const Json w = as_written_now(written), a = as_written_now(asked);
  if (!w.is_array() || !a.is_array() || w.size() != a.size()) {
    return std::to_string(w.is_array() ? w.size() : 0) + " experiment(s) in the log and " +
           std::to_string(a.is_array() ? a.size() : 0) + " here";
  }
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string d = first_difference(w[i], a[i], "");
    if (d.empty()) continue;
    const std::string name =
        a[i].is_object() && a[i].contains("name") ? a[i]["name"].dump() : std::to_string(i + 1);
    return "experiment " + name + ": " + d;
  }
  return "";
}

// A record of the log being resumed that would decide what is already done is refused unless its values
// are valid: a batch size is measured or out of memory only when its records say so, in range, for a
// size of the plan. Returns the problem, or "" when the record is fine.
std::string damage(const Json& r, const Json& experiments) {
  const std::string problem = record_problem(r);
  if (!problem.empty()) return problem;
  const std::string type = r["type"].get<std::string>();
  if (type != record::kStep && type != record::kPoint && type != record::kOom && type != record::kSkipped)
    return "";
  if (type == record::kPoint) {
    // A point marks its batch size as measured: it must carry the statistics of its steps.
    for (const char* key : {"median_ms", "p10_ms", "p90_ms", "min_ms", "max_ms", "samples"}) {
      if (!r.contains(key)) return std::string("has no ") + key;
    }
  }
  const std::string name = r["experiment"].get<std::string>();
  const Json* plan = nullptr;
  for (const Json& e : experiments) {
    if (e.is_object() && e.contains("name") && e["name"] == name) plan = &e;
  }
  if (plan == nullptr) return "names experiment \"" + name + "\", which the run record does not plan";
  const int64_t batch = r["batch_size"].get<int64_t>();
  const bool planned = plan->contains("batch") && (*plan)["batch"].is_array() &&
                       std::find((*plan)["batch"].begin(), (*plan)["batch"].end(), Json(batch)) != (*plan)["batch"].end();
  if (!planned)
    return "is for batch size " + std::to_string(batch) + ", which experiment " + name + " does not plan";
  return "";
}

// What fits, and so which sizes ran out of memory or in micro-batches, follows the limit: sizes measured
// under one limit and sizes under another would make one sweep of two machines.
void refuse_other_memory_limits(const std::string& jsonl_path, const Json& front, const Json& memory_limits) {
  const auto or_none = [](const Json& limits) {
    return limits.is_object() && limits.empty() ? Json() : limits;
  };
  const Json written_limits = or_none(front.value("memory_limit_bytes", Json()));
  if (written_limits == or_none(memory_limits)) return;
  throw UserError(located(jsonl_path, 1,
                          "holds a sweep run under memory limits " + memory_limits_text(written_limits) +
                              " (--memory-limit), and this command gives " +
                              memory_limits_text(memory_limits),
                          "give the log's --memory-limit (or none, where it had none) to resume it, "
                          "choose another --out directory, or pass --force to replace it"));
}

std::string json_text(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// The machine a sweep's step times depend on beyond its experiments: LibTorch's build and libraries,
// and for the devices it measures the CPU's threads and model or the GPU. A session that resumes on
// another would add its sizes to those of the first as one sweep, under the first one's run record.
void refuse_other_machine(const std::string& jsonl_path, const Json& front,
                          const std::set<std::string>& devices, const Json& now) {
  const auto refuse = [&](const std::string& what, const std::string& fix) {
    throw UserError(located(jsonl_path, 1, what,
                            fix + ", choose another --out directory, or pass --force to replace it"));
  };
  // The two sessions' values at a JSON pointer ("/cpu/torch_threads") where both have one and they differ.
  const auto differs = [&](const char* pointer) -> std::optional<std::pair<Json, Json>> {
    const Json::json_pointer at(pointer);
    if (!front.contains(at) || !now.contains(at) || front[at].is_null() || now[at].is_null() ||
        front[at] == now[at])
      return std::nullopt;
    return std::make_pair(front[at], now[at]);
  };
  for (const auto& [key, name] : {std::pair<const char*, const char*>{"/libtorch_version", "LibTorch"},
                                  {"/cuda_runtime_version", "the CUDA runtime"},
                                  {"/cudnn_version", "cuDNN"}}) {
    if (const auto d = differs(key)) {
      refuse("was begun with " + std::string(name) + " " + json_text(d->first) + ", and this session has " +
                 json_text(d->second),
             "resume it with the program and libraries it was begun with");
    }
  }
  if (devices.count("cpu") > 0) {
    if (const auto d = differs("/cpu/torch_threads")) {
      refuse("was begun with " + json_text(d->first) + " LibTorch CPU threads, and this session has " +
                 json_text(d->second),
             "give --threads " + json_text(d->first) + " to resume it");
    }
    if (const auto d = differs("/cpu/model")) {
      refuse("was begun on the CPU " + json_text(d->first) + ", and this session runs on " +
                 json_text(d->second),
             "resume it on the machine it was begun on");
    }
  }
  const auto gpu_name = [](const Json& record, int64_t index) -> std::optional<std::string> {
    if (!record.is_object() || !record.contains("gpus") || !record["gpus"].is_array()) return std::nullopt;
    for (const Json& gpu : record["gpus"]) {
      if (gpu.is_object() && gpu.value("index", int64_t{-1}) == index && gpu.contains("name"))
        return json_text(gpu["name"]);
    }
    return std::nullopt;
  };
  for (const std::string& device : devices) {
    if (device.rfind("cuda:", 0) != 0) continue;
    const int64_t index = std::strtoll(device.c_str() + 5, nullptr, 10);
    const std::optional<std::string> then = gpu_name(front, index), present = gpu_name(now, index);
    if (then && present && *then != *present) {
      refuse("was begun on an " + *then + " at " + device + ", and this session's " + device + " is an " +
                 *present,
             "resume it on the kind of GPU it was begun on");
    }
  }
}

// A file with a second line: more than steps.csv's header.
bool csv_has_rows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  return in && std::getline(in, line) && std::getline(in, line) && !line.empty();
}

// Whether the file begins as a sweep writes its run record.
bool starts_a_run_record(const std::string& path) {
  const std::string begins = record_prefix(record::kRun);
  std::ifstream in(path, std::ios::binary);
  std::string head(begins.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in.gcount() == static_cast<std::streamsize>(head.size()) && head == begins;
}

// The devices of a sweep's experiments (to_json of each).
std::set<std::string> devices_of(const Json& experiments) {
  std::set<std::string> devices;
  if (!experiments.is_array()) return devices;
  for (const Json& e : experiments) {
    if (e.is_object() && e.contains("device") && e["device"].is_string())
      devices.insert(e["device"].get<std::string>());
  }
  return devices;
}

// Holds dir/.lock for as long as the store is open, so that two sweeps never write into one directory
// at once (a shard resubmitted while its first task still runs). The lock goes with the process; the
// store removes the file while still holding it, so a sweep that locked a file just removed (opened
// before the removal, locked after) sees that the path no longer names it and locks the new one.
int lock_directory(const std::string& path, const std::string& dir, OutputDirectoryLock::FlockCall flock_call,
                   const std::string& writer) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw UserError(located(path, 0, std::string("cannot be opened (") + std::strerror(errno) + ")",
                              "choose an --out directory you can write to"));
    }
    if (flock_call(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      if (error != EWOULDBLOCK) {
        // Not held by anyone: this filesystem does not lock (ENOLCK, EOPNOTSUPP, EINVAL, ...).
        spdlog::warn(
            "{} cannot be locked on its filesystem ({}), so nothing stops two {}s writing into {} at "
            "once: make sure only one runs there at a time",
            path, std::strerror(error), writer, dir);
        return fd;
      }
      ::close(fd);
      throw UserError(located(dir, 0, "is being written by another batchscope " + writer + " right now",
                              "wait for it to end (or stop it) before running this one there"));
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      return fd;
    }
    ::close(fd);  // removed (and perhaps made again) by the sweep that held it: try the path once more
  }
  throw UserError(located(path, 0,
                          "keeps being removed and made again while this " + writer + " tries to lock it",
                          "make sure that only batchscope " + writer + "s write to this --out directory"));
}

}  // namespace

OutputDirectoryLock::OutputDirectoryLock(const std::string& dir, FlockCall flock_call,
                                         const std::string& writer)
    : path_((fs::path(dir) / ".lock").string()) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  fd_ = lock_directory(path_, dir, flock_call, writer);
}

OutputDirectoryLock::~OutputDirectoryLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still held: see lock_directory
  ::close(fd_);
}

std::string memory_limits_text(const Json& limits) {
  if (!limits.is_object() || limits.empty()) return "none";
  std::string text;
  for (const auto& [device, bytes] : limits.items()) {
    if (!text.empty()) text += ", ";
    text +=
        device + " " + (bytes.is_number_integer() ? format_memory_size(bytes.get<int64_t>()) : bytes.dump());
  }
  return text;
}

void check_resumed_session(const std::string& dir, const Json& memory_limits,
                           const std::set<std::string>& devices, const Json& environment) {
  const std::string path = (fs::path(dir) / "steps.jsonl").string();
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return;
  const Json front = Json::parse(first, nullptr, /*allow_exceptions=*/false);
  if (!front.is_object() || front.value("type", "") != record::kRun) return;
  refuse_other_memory_limits(path, front, memory_limits);
  refuse_other_machine(path, front, devices,
                       environment.is_null() ? Json(collect_environment()) : environment);
}

RunStore::RunStore(const std::string& dir, const Json& experiments, bool force, const Json& memory_limits,
                   const Json& environment)
    : dir_(dir),
      jsonl_path_((fs::path(dir) / "steps.jsonl").string()),
      csv_path_((fs::path(dir) / "steps.csv").string()) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UserError(located(dir, 0, "the output directory cannot be created (" + ec.message() + ")",
                            "choose an --out directory you can write to"));
  }
  if (fs::exists(jsonl_path_, ec) && !fs::is_regular_file(jsonl_path_, ec)) {
    throw UserError(located(jsonl_path_, 0, "is not a regular file, so no sweep can be written or resumed there",
                            "move it away, or choose another --out directory"));
  }
  lock_ = std::make_unique<OutputDirectoryLock>(dir);
  // A sweep's log compressed to keep or send (gzip steps.jsonl): a new log beside it would make two
  // sweeps of one directory, of which analyze reads the plain one.
  const fs::path compressed = fs::path(dir) / "steps.jsonl.gz";
  if (fs::exists(compressed, ec)) {
    if (!force) {
      throw UserError(
          located(compressed.string(), 0,
                  "holds this directory's sweep, compressed, and a sweep resumes by appending to a "
                  "plain steps.jsonl",
                  "decompress it (gunzip " + compressed.string() +
                      ") and run again to resume, choose another --out directory, or pass --force "
                      "to replace it"));
    }
    fs::remove(compressed, ec);
  }
  bool has_log = fs::exists(jsonl_path_, ec) && fs::file_size(jsonl_path_, ec) > 0;
  // Half a line and nothing else: a first session stopped while writing its run record, before any
  // batch size. Nothing was measured, so the sweep starts as new (a shard's status counts it not begun).
  if (has_log && !force && whole_lines_bytes(jsonl_path_) == std::uintmax_t{0} &&
      starts_a_run_record(jsonl_path_)) {
    fs::resize_file(jsonl_path_, 0);
    spdlog::warn(
        "{}: held only half of a run record (a first session stopped while writing it): the sweep "
        "starts from its first batch size",
        jsonl_path_);
    has_log = false;
  }
  // steps.csv is made again from the log; rows with no log they came from are someone else's, or the
  // only copy left of a sweep whose log was removed.
  if (!has_log && !force && csv_has_rows(csv_path_)) {
    throw UserError(
        located(csv_path_, 0,
                "holds rows, and the directory has no sweep log (steps.jsonl) they came from, so a "
                "new sweep would write over them",
                "move it away, choose another --out directory, or pass --force to replace it"));
  }
  // A profile is appended to, and read with the log beside it: one with no log is not this sweep's.
  for (const char* profile : {"profile.jsonl", "profile.jsonl.gz"}) {
    const fs::path path = fs::path(dir) / profile;
    if (!has_log && !force && fs::exists(path, ec) && fs::file_size(path, ec) > 0) {
      throw UserError(
          located(path.string(), 0,
                  "is in the directory with no sweep log (steps.jsonl) beside it, and a new sweep "
                  "would add its profiles to it",
                  "move it away, choose another --out directory, or pass --force to replace it"));
    }
  }
  std::vector<SweepRecord> kept;  // the records of an interrupted run, for rebuilding steps.csv
  if (has_log && force) {
    fs::resize_file(jsonl_path_, 0);
    fs::remove(fs::path(dir) / "profile.jsonl", ec);
    fs::remove(fs::path(dir) / "profile.jsonl.gz", ec);
    fs::remove_all(fs::path(dir) / "traces", ec);
  } else if (has_log) {
    JsonlContents contents = read_jsonl(jsonl_path_);
    if (contents.compressed) {
      throw UserError(
          located(jsonl_path_, 0, "is compressed (gzip), and a sweep resumes by appending to a plain log",
                  "decompress it in place (mv steps.jsonl steps.jsonl.gz && gunzip steps.jsonl.gz), "
                  "then run again to resume"));
    }
    const auto& records = contents.records;
    if (records.empty() || records.front()["type"] != record::kRun) {
      throw UserError(located(jsonl_path_, 1, "does not start with a batchscope run record",
                              "choose another --out directory or pass --force to replace it"));
    }
    const Json& front = records.front();
    const Json* written = front.contains("config") && front["config"].contains("experiments")
                              ? &front["config"]["experiments"]
                              : nullptr;
    if (written == nullptr || !same_experiments(*written, experiments)) {
      const std::string difference = written == nullptr ? "its run record names no experiments"
                                                        : experiments_difference(*written, experiments);
      throw UserError(located(jsonl_path_, 1,
                              "holds a sweep of different experiments than this command asks for" +
                                  (difference.empty() ? std::string() : " (" + difference + ")"),
                              "run the same command to resume it, choose another --out directory, or pass "
                              "--force to replace it"));
    }
    refuse_other_memory_limits(jsonl_path_, front, memory_limits);
    refuse_other_machine(jsonl_path_, front, devices_of(experiments),
                         environment.is_null() ? Json(collect_environment()) : environment);
    for (std::size_t i = 0; i < records.size(); ++i) {
      const std::string problem = damage(records[i], experiments);
      if (!problem.empty()) {
        throw UserError(located(jsonl_path_, contents.record_lines[i], "is damaged: the record " + problem,
                                "repair or remove that line to resume, or pass --force to start again"));
      }
    }
    // A batch size's records go out in one write, its steps and then its point (or what happened
    // instead). Step records at the end with nothing after them are a batch size cut off mid-write: it
    // runs again, and its first attempt's steps must not count beside the new ones.
    std::size_t whole = records.size();
    while (whole > 0 && records[whole - 1].value("type", "") == record::kStep) --whole;
    for (std::size_t i = 0; i < whole; ++i) {
      const Json& r = records[i];
      if (r.value("type", "") == record::kEnd) {
        throw UserError(
            located(jsonl_path_, 0, "already holds a complete sweep of these experiments",
                    "choose another --out directory or pass --force to run it again and replace it"));
      }
      // Records of other types than a sweep's were never written by one; they are kept as they are.
      if (!is_sweep_record_type(r["type"].get<std::string>())) continue;
      SweepRecord record = sweep_record_from_json(r);
      // A batch size's outcome twice: a log joined from two, which a resume would go on as one.
      const BatchKey* batch = batch_key_of(record);
      if (batch != nullptr && !std::holds_alternative<StepRecord>(record) &&
          done(batch->experiment, batch->batch_size, batch->pass.value_or(1))) {
        throw UserError(located(jsonl_path_, contents.record_lines[i],
                                "holds a second outcome of batch size " + std::to_string(batch->batch_size) +
                                    " of experiment " + batch->experiment +
                                    ": a log joined from two sweeps, or a line copied",
                                "remove the repeated lines to resume, or pass --force to start again"));
      }
      kept.push_back(std::move(record));
      note(kept.back());
    }
    if (whole < records.size()) {
      cut_steps_ = records.size() - whole;
      fs::resize_file(jsonl_path_, contents.record_offsets[whole]);  // and any half line after them
    } else if (contents.truncated_tail) {
      fs::resize_file(jsonl_path_, contents.complete_bytes);  // half a line, no record
    }
    // A profile cut off mid-write: the batch size it was of runs again, and its new profile must not be
    // appended to the half line.
    cut_half_line((fs::path(dir) / "profile.jsonl").string());
    resuming_ = true;
  }
  writer_ = std::make_unique<JsonlWriter>(jsonl_path_);
  rewrite_csv(csv_path_, kept);
}

void RunStore::note(const SweepRecord& r) {
  if (std::holds_alternative<StepRecord>(r)) return;
  const BatchKey* batch = batch_key_of(r);
  if (batch == nullptr) return;
  done_.insert({batch->experiment, batch->batch_size, batch->pass.value_or(1)});
  if (std::holds_alternative<OomRecord>(r)) ooms_.push_back({batch->experiment, batch->batch_size});
  if (const auto* point = std::get_if<PointRecord>(&r); point != nullptr && point->chunk)
    chunks_[batch->experiment].emplace(batch->batch_size, *point->chunk);
}

bool RunStore::done(const std::string& experiment, int64_t batch_size, int64_t pass) const {
  return done_.count({experiment, batch_size, pass}) > 0;
}

std::optional<int64_t> RunStore::out_of_memory_at(const std::string& experiment) const {
  std::optional<int64_t> smallest;
  for (const auto& [name, batch] : ooms_) {
    if (name == experiment && (!smallest || batch < *smallest)) smallest = batch;
  }
  return smallest;
}

std::map<int64_t, PointChunk> RunStore::chunks(const std::string& experiment) const {
  const auto found = chunks_.find(experiment);
  return found == chunks_.end() ? std::map<int64_t, PointChunk>{} : found->second;
}

void RunStore::write(const std::vector<SweepRecord>& records) {
  for (const SweepRecord& r : records) {
    writer_->add(to_json(r));
    note(r);
  }
  writer_->flush();
  append_csv(csv_path_, records, run_id_);
}

void RunStore::write_profile(const ProfileRecord& profile) {
  if (!profile_writer_) profile_writer_ = std::make_unique<JsonlWriter>((fs::path(dir_) / "profile.jsonl").string());
  profile_writer_->add(to_json(profile));
  profile_writer_->flush();
}

std::string RunStore::trace_path(const std::string& experiment, int64_t batch_size) const {
  const fs::path traces = fs::path(dir_) / "traces";
  std::error_code ec;
  fs::create_directories(traces, ec);
  if (ec) {
    throw UserError(located(traces.string(), 0, "cannot be created (" + ec.message() + ")",
                            "choose an --out directory you can write to, or leave out --trace"));
  }
  return (traces / (experiment + "-batch" + std::to_string(batch_size) + ".json")).string();
}

std::vector<SweepRecord> RunStore::read_all() const {
  std::vector<SweepRecord> out;
  for (const Json& r : read_jsonl(jsonl_path_).records) {
    if (is_sweep_record_type(r["type"].get<std::string>())) out.push_back(sweep_record_from_json(r));
  }
  return out;
}

}  // namespace batchscope
