#pragma once

#include <sys/file.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lib/records/profile_records.h"
#include "lib/records/records.h"

namespace batchscope {

// OUT/.lock held for as long as the object lives, so that two sweeps never write into one directory at
// once: the search for the largest batch size (batch: 1:max) holds it, then the RunStore. The file is
// removed when the lock is let go, so that a finished sweep leaves only its records. Throws UserError
// where another process holds it. Where the filesystem cannot lock at all (some network filesystems), it
// warns and goes on unlocked. The directory is made where it is missing.
class OutputDirectoryLock {
 public:
  // flock(2), or a stand-in that fails in tests.
  using FlockCall = int (*)(int fd, int operation);
  // writer: what holds it, in the refusal's words ("sweep", "training run").
  explicit OutputDirectoryLock(const std::string& dir, FlockCall flock_call = ::flock,
                               const std::string& writer = "sweep");
  ~OutputDirectoryLock();
  OutputDirectoryLock(const OutputDirectoryLock&) = delete;
  OutputDirectoryLock& operator=(const OutputDirectoryLock&) = delete;

 private:
  int fd_ = -1;
  std::string path_;
};

// Memory limits (memory_limit_bytes by device) as a sentence's words: "cpu 48.0 MiB, cuda:0 1.00 GiB", or
// "none".
std::string memory_limits_text(const Json& limits);

// Refuses (UserError) resuming the sweep in dir under other memory limits than its run record's
// memory_limit_bytes (memory_limits as RunStore takes them): what fits, and so which sizes ran out of memory
// or in micro-batches, follows the limit. Refuses as well a session on another machine than the run
// record's, where the step times would differ: another LibTorch, CUDA runtime or cuDNN, and for the
// devices measured (cpu, cuda:N) another count of LibTorch's CPU threads or CPU model, or another GPU.
// environment: this session's (collect_environment(), where null). Reads the log's first record only, so
// that a sweep can check before it searches for its largest batch size; a directory without a readable
// run record passes (the RunStore refuses it in its own words).
void check_resumed_session(const std::string& dir, const Json& memory_limits,
                           const std::set<std::string>& devices, const Json& environment = Json());

// The output directory of a sweep: steps.jsonl, the record, and steps.csv, derived from it.
// Opening it decides between a fresh run and resuming an interrupted one; nothing is written
// until every check has passed, and a finished run is never overwritten without force.
class RunStore {
 public:
  // experiments: the resolved experiments of this sweep (to_json of each), compared on resume, as are
  // memory_limits (--memory-limit's bytes by device, as the run record's memory_limit_bytes; null for
  // none) and the machine (check_resumed_session; environment null: this session's). Refuses
  // (UserError) a directory that another sweep is writing to now.
  RunStore(const std::string& dir, const Json& experiments, bool force, const Json& memory_limits = Json(),
           const Json& environment = Json());

  bool resuming() const { return resuming_; }
  // Resuming: the step records of a batch size that a killed write cut off before its point record,
  // removed from the end of the log (that size runs again, and only its new steps count).
  std::size_t cut_steps() const { return cut_steps_; }
  // Whether an earlier session of this run already finished this batch size in this pass (point, oom or
  // skipped); records without a pass are pass 1.
  bool done(const std::string& experiment, int64_t batch_size, int64_t pass = 1) const;
  // The smallest batch size of this experiment that ran out of memory in an earlier session.
  std::optional<int64_t> out_of_memory_at(const std::string& experiment) const;
  // chunk: auto: the micro-batches each batch size of this experiment that did not fit whole ran in,
  // by batch size, as its points (this session's and earlier ones') recorded them.
  std::map<int64_t, PointChunk> chunks(const std::string& experiment) const;

  // Appends records (a batch size's steps and point, a run header, ...) to both files and syncs.
  void write(const std::vector<SweepRecord>& records);
  // Appends a batch size's profile to profile.jsonl beside steps.jsonl (written before the batch size's
  // records, so that a batch size cut short is profiled again and analyze keeps the last profile).
  void write_profile(const ProfileRecord& profile);
  // Where the Chrome trace of a batch size goes (out_dir/traces/, created on first use).
  std::string trace_path(const std::string& experiment, int64_t batch_size) const;
  // Every record of steps.jsonl, earlier sessions included.
  std::vector<SweepRecord> read_all() const;

  const std::string& jsonl_path() const { return jsonl_path_; }
  const std::string& csv_path() const { return csv_path_; }

 private:
  void note(const SweepRecord& record);

  std::string dir_, jsonl_path_, csv_path_;
  bool resuming_ = false;
  std::size_t cut_steps_ = 0;
  std::set<std::tuple<std::string, int64_t, int64_t>> done_;
  std::vector<std::pair<std::string, int64_t>> ooms_;
  std::map<std::string, std::map<int64_t, PointChunk>> chunks_;  // by experiment
  std::unique_ptr<JsonlWriter> writer_;
  std::unique_ptr<JsonlWriter> profile_writer_;  // opened by the first profile
  std::string run_id_;  // the session's, for the rows of steps.csv
  // Held while the store is open (and released if opening it fails part-way).
  std::unique_ptr<OutputDirectoryLock> lock_;
};

}  // namespace batchscope
