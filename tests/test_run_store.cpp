#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/config/config.h"
#include "lib/records/run_store.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class RunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("batchscope_store_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static Json run_record(const Json& experiments) {
    return Json{{"type", "run"}, {"config", {{"experiments", experiments}}}};
  }
  static Json point(const std::string& name, int64_t batch) {
    return Json{{"type", "point"}, {"experiment", name}, {"model", "mnist_cnn"}, {"batch_size", batch}, {"samples", 3},
                {"median_ms", 1.0},   {"p10_ms", 0.9},      {"p90_ms", 1.1},        {"min_ms", 0.8},
                {"max_ms", 1.2}};
  }

  // Records as the store takes them, from their lines.
  static std::vector<SweepRecord> typed(std::initializer_list<Json> lines) {
    std::vector<SweepRecord> out;
    for (const Json& line : lines) out.push_back(sweep_record_from_json(line));
    return out;
  }

  std::string dir_;
  const Json experiments_ = Json::array({{{"name", "a"}, {"batch", {1, 2, 3}}}});
};

TEST_F(RunStoreTest, FreshDirectoryIsCreated) {
  RunStore store(dir_, experiments_, false);
  EXPECT_FALSE(store.resuming());
  EXPECT_FALSE(store.done("a", 1));
  EXPECT_TRUE(fs::exists(store.jsonl_path()));
  EXPECT_TRUE(fs::exists(store.csv_path()));
}

TEST_F(RunStoreTest, OneSweepAtATimeAndTheLockFileGoesWithTheLastOne) {
  {
    RunStore first(dir_, experiments_, false);
    EXPECT_TRUE(fs::exists(dir_ + "/.lock"));
    EXPECT_TRUE(testing_support::refuses_with([&] { RunStore second(dir_, experiments_, false); },
                                              {dir_, "is being written by another batchscope sweep right now"}));
    EXPECT_TRUE(fs::exists(dir_ + "/.lock")) << "a refused sweep removed the lock of the one that holds it";
  }
  EXPECT_FALSE(fs::exists(dir_ + "/.lock"));
  {
    // A lock file left by a killed sweep is taken over, and removed at the end.
    std::ofstream(dir_ + "/.lock") << "";
    RunStore again(dir_, experiments_, false);
    EXPECT_TRUE(fs::exists(dir_ + "/.lock"));
  }
  EXPECT_FALSE(fs::exists(dir_ + "/.lock"));
}

// Where the filesystem cannot lock at all, the sweep goes on (with a warning); only a lock held by
// another process refuses it.
TEST_F(RunStoreTest, AFilesystemThatCannotLockIsNotTakenForAnotherSweep) {
  const auto cannot_lock = [](int, int) {
    errno = ENOLCK;
    return -1;
  };
  const auto held_elsewhere = [](int, int) {
    errno = EWOULDBLOCK;
    return -1;
  };
  {
    const OutputDirectoryLock unlocked(dir_, cannot_lock);
    EXPECT_TRUE(fs::exists(dir_ + "/.lock"));
  }
  EXPECT_FALSE(fs::exists(dir_ + "/.lock")) << "the unlocked file is still removed at the end";
  EXPECT_TRUE(
      testing_support::refuses_with([&] { const OutputDirectoryLock busy(dir_, held_elsewhere); },
                                    {dir_, "is being written by another batchscope sweep right now"}));
}

TEST_F(RunStoreTest, InterruptedRunResumesWithItsFinishedBatchSizes) {
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_)}));
    store.write(typed({point("a", 1)}));
    store.write(typed({Json{{"type", "oom"}, {"experiment", "a"}, {"model", "mnist_cnn"}, {"batch_size", 3}}}));
  }
  // A killed writer leaves half a line behind.
  std::ofstream(dir_ + "/steps.jsonl", std::ios::app) << "{\"type\":\"step\",\"experi";
  const auto size_before = fs::file_size(dir_ + "/steps.jsonl");

  RunStore store(dir_, experiments_, false);
  EXPECT_TRUE(store.resuming());
  EXPECT_TRUE(store.done("a", 1));
  EXPECT_FALSE(store.done("a", 2));
  EXPECT_TRUE(store.done("a", 3));
  EXPECT_EQ(store.out_of_memory_at("a"), 3);
  EXPECT_FALSE(store.out_of_memory_at("b").has_value());
  EXPECT_LT(fs::file_size(dir_ + "/steps.jsonl"), size_before) << "the half line is cut";
  store.write(typed({point("a", 2)}));
  const auto all = store.read_all();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(batch_key_of(all[3])->batch_size, 2);
}

// A batch size's records go out in one write; a kill in the middle of it leaves some of its steps and no
// point. Those steps are cut off with the half line after them, so that the size's rerun alone counts.
TEST_F(RunStoreTest, StepsCutOffBeforeTheirPointAreRemovedAndTheirSizeRunsAgain) {
  const Json step = {{"type", "step"},  {"experiment", "a"}, {"model", "mnist_cnn"},
                     {"batch_size", 2}, {"step", 0},         {"time_ms", 9.0}};
  std::uintmax_t whole_bytes = 0;
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_)}));
    Json first = step;
    first["batch_size"] = 1;
    store.write(typed({first, first, point("a", 1)}));
    whole_bytes = fs::file_size(dir_ + "/steps.jsonl");
    EXPECT_EQ(store.cut_steps(), 0u);
  }
  std::ofstream(dir_ + "/steps.jsonl", std::ios::app) << step.dump() << "\n"
                                                      << step.dump() << "\n{\"type\":\"st";

  RunStore store(dir_, experiments_, false);
  EXPECT_TRUE(store.resuming());
  EXPECT_EQ(store.cut_steps(), 2u);
  EXPECT_TRUE(store.done("a", 1));
  EXPECT_FALSE(store.done("a", 2));
  EXPECT_EQ(fs::file_size(dir_ + "/steps.jsonl"), whole_bytes)
      << "the cut-off steps and the half line are gone";
  std::ifstream csv(dir_ + "/steps.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(",2,"), std::string::npos) << "steps.csv has no row of batch 2: " << text;
  store.write(typed({step, point("a", 2)}));
  const auto all = store.read_all();
  ASSERT_EQ(all.size(), 6u);  // run, the two steps and point of 1, the new step and point of 2
  EXPECT_EQ(batch_key_of(all[4])->batch_size, 2);
}

TEST_F(RunStoreTest, ACompressedLogIsRefusedUntouchedForASweepAppendsToAPlainOne) {
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_), point("a", 1)}));
  }
  testing_support::write_gzip(dir_ + "/steps.jsonl", testing_support::file_bytes(dir_ + "/steps.jsonl"));
  const auto size = fs::file_size(dir_ + "/steps.jsonl");
  EXPECT_TRUE(testing_support::refuses_with([&] { RunStore again(dir_, experiments_, false); },
                                            {dir_ + "/steps.jsonl", "is compressed (gzip)", "gunzip"}));
  EXPECT_EQ(fs::file_size(dir_ + "/steps.jsonl"), size);
}

// A sweep's log compressed to keep or send (gzip steps.jsonl) is this directory's sweep: a new log beside
// it is refused, the compressed one left as it was; --force replaces it.
TEST_F(RunStoreTest, ACompressedLogBesideIsRefusedUntouchedAndForceReplacesIt) {
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_), point("a", 1), Json{{"type", "end"}}}));
  }
  testing_support::write_gzip(dir_ + "/steps.jsonl.gz", testing_support::file_bytes(dir_ + "/steps.jsonl"));
  fs::remove(dir_ + "/steps.jsonl");
  const auto size = fs::file_size(dir_ + "/steps.jsonl.gz");
  EXPECT_TRUE(testing_support::refuses_with([&] { RunStore again(dir_, experiments_, false); },
                                            {dir_ + "/steps.jsonl.gz", "compressed", "gunzip", "--force"}));
  EXPECT_EQ(fs::file_size(dir_ + "/steps.jsonl.gz"), size);
  EXPECT_FALSE(fs::exists(dir_ + "/steps.jsonl"));
  RunStore forced(dir_, experiments_, true);
  EXPECT_FALSE(forced.resuming());
  EXPECT_FALSE(fs::exists(dir_ + "/steps.jsonl.gz"));
}

TEST_F(RunStoreTest, CompleteRunIsNotOverwrittenWithoutForce) {
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_), point("a", 1), Json{{"type", "end"}}}));
  }
  const auto size = fs::file_size(dir_ + "/steps.jsonl");
  try {
    RunStore again(dir_, experiments_, false);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::file_size(dir_ + "/steps.jsonl"), size);

  RunStore forced(dir_, experiments_, true);
  EXPECT_FALSE(forced.resuming());
  EXPECT_EQ(fs::file_size(dir_ + "/steps.jsonl"), 0u);
}

TEST_F(RunStoreTest, DifferentExperimentsAreRefused) {
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_), point("a", 1)}));
  }
  const Json other = Json::array({{{"name", "a"}, {"batch", {1, 2, 4}}}});
  EXPECT_TRUE(testing_support::refuses_with([&] { RunStore(dir_, other, false); }, {"steps.jsonl:1", "different experiments"}));
  EXPECT_GT(fs::file_size(dir_ + "/steps.jsonl"), 0u);
}

// Which sizes fit, run out of memory or run in micro-batches follows --memory-limit: a sweep begun under
// one limit resumes under the same bytes only, and the log is left as it was when it is refused.
TEST_F(RunStoreTest, ASweepResumesUnderItsOwnMemoryLimitOnly) {
  const Json limits{{"cpu", 48 * 1024 * 1024}};
  {
    RunStore store(dir_, experiments_, false, limits);
    Json header = run_record(experiments_);
    header["memory_limit_bytes"] = limits;
    store.write(typed({header, point("a", 1)}));
  }
  const auto size = fs::file_size(dir_ + "/steps.jsonl");
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { RunStore(dir_, experiments_, false); },
      {"steps.jsonl:1", "memory limits cpu 48.0 MiB", "this command gives none", "--memory-limit"}));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] {
        RunStore(dir_, experiments_, false, Json{{"cpu", 64 * 1024 * 1024}});
      },
      {"cpu 48.0 MiB", "this command gives cpu 64.0 MiB"}));
  EXPECT_EQ(fs::file_size(dir_ + "/steps.jsonl"), size);
  {
    RunStore store(dir_, experiments_, false, limits);
    EXPECT_TRUE(store.resuming());
    EXPECT_TRUE(store.done("a", 1));
  }
  // A sweep begun without a limit refuses one, and resumes with none (null or no device named).
  fs::remove_all(dir_);
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_), point("a", 1)}));
  }
  EXPECT_TRUE(testing_support::refuses_with([&] { RunStore(dir_, experiments_, false, limits); },
                                            {"memory limits none", "this command gives cpu 48.0 MiB"}));
  RunStore store(dir_, experiments_, false, Json::object());
  EXPECT_TRUE(store.resuming());
}

// The same check from the log's first record alone, as a sweep makes it before it searches for its largest
// batch size: a directory without a log, or whose first line is no run record, is left to the store.
TEST_F(RunStoreTest, TheMemoryLimitsAreCheckedFromTheFirstRecordAlone) {
  const Json limits{{"cpu", 48 * 1024 * 1024}};
  EXPECT_NO_THROW(check_resumed_session(dir_, limits, {}));
  {
    RunStore store(dir_, experiments_, false, limits);
    Json header = run_record(experiments_);
    header["memory_limit_bytes"] = limits;
    store.write(typed({header, point("a", 1)}));
  }
  EXPECT_NO_THROW(check_resumed_session(dir_, limits, {}));
  EXPECT_TRUE(testing_support::refuses_with([&] { check_resumed_session(dir_, Json(), {}); },
                                            {"steps.jsonl:1", "cpu 48.0 MiB", "this command gives none"}));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] {
        check_resumed_session(dir_, Json{{"cpu", 64 * 1024 * 1024}}, {});
      },
      {"this command gives cpu 64.0 MiB"}));
  { std::ofstream(dir_ + "/steps.jsonl") << "not a record\n"; }
  EXPECT_NO_THROW(check_resumed_session(dir_, Json(), {}));
}

// A session on another machine than the run record's would add its sizes to the first session's as one
// sweep: another LibTorch, another thread count where the CPU is measured, another GPU where a GPU is.
TEST_F(RunStoreTest, AResumeOnAnotherMachineIsRefusedAndTheLogKept) {
  const Json experiments = Json::array({{{"name", "a"}, {"batch", {1, 2, 3}}, {"device", "cpu"}},
                                        {{"name", "g"}, {"batch", {1, 2, 3}}, {"device", "cuda:0"}}});
  const Json first = {{"libtorch_version", "1.13.0"},
                      {"cpu", {{"torch_threads", 2}, {"model", "CPU A"}}},
                      {"gpus", Json::array({{{"index", 0}, {"name", "NVIDIA H100"}}})}};
  {
    RunStore store(dir_, experiments, false, Json(), first);
    Json header = run_record(experiments);
    header.update(first);
    store.write(typed({header, point("a", 1)}));
  }
  const std::string before = text_of(dir_ + "/steps.jsonl");
  const auto with = [&](const char* key, const Json& value) {
    Json now = first;
    now[nlohmann::json::json_pointer(key)] = value;
    return now;
  };
  const std::set<std::string> both{"cpu", "cuda:0"}, gpu{"cuda:0"};
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { RunStore(dir_, experiments, false, Json(), with("/cpu/torch_threads", 1)); },
      {"steps.jsonl:1", "was begun with 2 LibTorch CPU threads, and this session has 1",
       "give --threads 2"}));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { check_resumed_session(dir_, Json(), both, with("/libtorch_version", "2.6.0")); },
      {"was begun with LibTorch 1.13.0, and this session has 2.6.0"}));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { check_resumed_session(dir_, Json(), gpu, with("/gpus/0/name", "NVIDIA A100")); },
      {"was begun on an NVIDIA H100 at cuda:0, and this session's cuda:0 is an NVIDIA A100"}));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { check_resumed_session(dir_, Json(), both, with("/cpu/model", "CPU B")); },
      {"was begun on the CPU CPU A, and this session runs on CPU B"}));
  // A GPU-only sweep's step times do not follow the host's thread count or CPU; a field one side lacks
  // (a log from before it was recorded) is not compared.
  EXPECT_NO_THROW(check_resumed_session(dir_, Json(), gpu, with("/cpu/torch_threads", 1)));
  EXPECT_NO_THROW(check_resumed_session(dir_, Json(), both, Json{{"cpu", {{"model", "CPU A"}}}}));
  // Nor is a field whose parent is not an object (a damaged record, or one this program never wrote).
  EXPECT_NO_THROW(check_resumed_session(dir_, Json(), both, Json{{"cpu", "odd"}, {"gpus", 3}}));
  EXPECT_EQ(text_of(dir_ + "/steps.jsonl"), before);
  RunStore store(dir_, experiments, false, Json(), first);
  EXPECT_TRUE(store.resuming());
}

TEST_F(RunStoreTest, AHalfLineIsCutAndNothingElse) {
  fs::create_directories(dir_);
  const std::string path = dir_ + "/f.jsonl";
  { std::ofstream(path) << "{\"a\":1}\n{\"b\":"; }
  EXPECT_EQ(cut_half_line(path), 5u);
  EXPECT_EQ(text_of(path), "{\"a\":1}\n");
  EXPECT_EQ(cut_half_line(path), 0u);  // whole lines only
  { std::ofstream(path) << "no line's end"; }
  EXPECT_EQ(whole_lines_bytes(path), std::uintmax_t{0});
  EXPECT_EQ(cut_half_line(path), 13u);
  EXPECT_EQ(fs::file_size(path), 0u);
  // A gzip file's last byte is no line's end: left as it is.
  { std::ofstream(path, std::ios::binary) << std::string("\x1f\x8b\x08\x00tail", 8); }
  EXPECT_FALSE(whole_lines_bytes(path).has_value());
  EXPECT_EQ(cut_half_line(path), 0u);
  EXPECT_EQ(fs::file_size(path), 8u);
  EXPECT_EQ(cut_half_line(dir_ + "/absent.jsonl"), 0u);
}

// A first session stopped while writing its run record left half a line and nothing else: nothing was
// measured, so the sweep starts afresh rather than being refused on every retry. Half a line of anything
// else is left to the refusal.
TEST_F(RunStoreTest, HalfARunRecordAloneStartsTheSweepAfresh) {
  fs::create_directories(dir_);
  { std::ofstream(dir_ + "/steps.jsonl") << R"({"type":"run","run_id":"x","start_ti)"; }
  {
    RunStore store(dir_, experiments_, false);
    EXPECT_FALSE(store.resuming());
    EXPECT_EQ(fs::file_size(store.jsonl_path()), 0u);
  }
  { std::ofstream(dir_ + "/steps.jsonl") << "notes of mine"; }
  EXPECT_TRUE(testing_support::refuses_with([&] { RunStore(dir_, experiments_, false); },
                                            {"does not start with a batchscope run record"}));
  EXPECT_EQ(text_of(dir_ + "/steps.jsonl"), "notes of mine");
}

// A profile cut off mid-write: on resume its half line goes, so that the size's new profile is a line of
// its own.
TEST_F(RunStoreTest, AResumeCutsAProfilesHalfLine) {
  {
    RunStore store(dir_, experiments_, false);
    store.write(typed({run_record(experiments_), point("a", 1)}));
  }
  { std::ofstream(dir_ + "/profile.jsonl") << "{\"type\":\"profile\",\"batch_size\":1}\n{\"type\":\"prof"; }
  RunStore store(dir_, experiments_, false);
  EXPECT_TRUE(store.resuming());
  EXPECT_EQ(text_of(dir_ + "/profile.jsonl"), "{\"type\":\"profile\",\"batch_size\":1}\n");
}

// A run record that names no experiments (no "config", or one without "experiments") is another sweep
// than any command's, refused in a sentence, the log left as it was.
TEST_F(RunStoreTest, ARunRecordWithoutExperimentsIsRefusedAsAnotherSweep) {
  for (const Json& config : {Json(), Json::object(), Json::array({1}), Json("x")}) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Json record{{"type", "run"}};
    if (!config.is_null()) record["config"] = config;
    std::ofstream(dir_ + "/steps.jsonl") << record.dump() << "\n" << point("a", 1).dump() << "\n";
    const auto size = fs::file_size(dir_ + "/steps.jsonl");
    EXPECT_TRUE(testing_support::refuses_with(
        [&] { RunStore(dir_, experiments_, false); },
        {"steps.jsonl:1", "different experiments", "its run record names no experiments"}))
        << record.dump();
    EXPECT_EQ(fs::file_size(dir_ + "/steps.jsonl"), size);
  }
}

TEST_F(RunStoreTest, ARunRecordOfTheEarlierOptimizerLayoutResumesAndAnotherLrDoesNot) {
  ExperimentConfig e;
  e.name = "a";
  e.batch_sizes = {1, 2, 3};
  const Json now = Json::array({Json(to_json(e))});
  Json before = now;  // plain SGD, written with every optimizer setting as earlier versions did
  before[0]["optimizer"]["momentum"] = 0.9;
  before[0]["optimizer"]["betas"] = {0.9, 0.999};
  before[0]["optimizer"]["eps"] = 1e-8;
  {
    RunStore store(dir_, before, false);
    store.write(typed({run_record(before), point("a", 1)}));
  }
  {
    RunStore store(dir_, now, false);
    EXPECT_TRUE(store.resuming());
    EXPECT_TRUE(store.done("a", 1));
  }
  Json other_lr = now;
  other_lr[0]["optimizer"]["lr"] = 0.1;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { RunStore(dir_, other_lr, false); },
      {"different experiments", "(experiment \"a\": optimizer.lr is 0.01 in the log and 0.1 here)"}));
  // A setting the log's sweep did not have (a GPU sweep begun before the multi-tensor optimizer step) is
  // named as none there, so that the user knows which option gives the old one back.
  Json foreach = now;
  foreach
    [0]["optimizer"]["foreach"] = true;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { RunStore(dir_, foreach, false); },
      {"(experiment \"a\": optimizer.foreach is none in the log and true here)"}));
}

TEST_F(RunStoreTest, ALogOfAFileWithoutWhatItsForwardIsGivenResumesAndAnotherFileDoesNot) {
  ExperimentConfig e;
  e.name = "a";
  e.model = "net.pt";
  e.batch_sizes = {1, 2};
  e.model_file = models::ModelFile{"net.pt",   1000,
                                   0xabcdef01, models::FileInput::Tokens,
                                   0,          {{"attention_mask", "ones"}, {"token_type_ids", "zeros"}}};
  const Json now = Json::array({Json(to_json(e))});
  ASSERT_EQ(now[0]["model_file"]["arguments"].size(), 2u);
  EXPECT_EQ(now[0]["model_file"]["arguments"][1]["name"], "token_type_ids");
  EXPECT_EQ(now[0]["model_file"]["arguments"][1]["given"], "zeros");
  Json before = now;  // as a batchscope that did not say what the forward is given wrote it
  before[0]["model_file"].erase("arguments");
  {
    RunStore store(dir_, before, false);
    store.write(typed({run_record(before), point("a", 1)}));
  }
  {
    RunStore store(dir_, now, false);
    EXPECT_TRUE(store.resuming());
    EXPECT_TRUE(store.done("a", 1));
  }
  Json changed = now;
  changed[0]["model_file"]["crc32"] = "abcdef02";
  EXPECT_TRUE(
      testing_support::refuses_with([&] { RunStore(dir_, changed, false); },
                                    {"model_file.crc32 is \"abcdef01\" in the log and \"abcdef02\" here"}));
  EXPECT_EQ(without_file_arguments(Json{{"experiments", now}}), (Json{{"experiments", before}}));
  EXPECT_EQ(Json(to_json(experiment_from_json(now[0]))), now[0]);
}

TEST_F(RunStoreTest, UnwritableDirectoryIsAUserError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/a_file") << "x";
  EXPECT_TRUE(testing_support::refuses_with([&] { RunStore(dir_ + "/a_file/out", experiments_, false); }, {"a_file/out", "cannot be created"}));
}

// A resumed log decides what is done: a record with the right keys and wrong values is refused with its
// line, and the log is left as it was.
TEST_F(RunStoreTest, DamagedRecordsAreRefusedOnResumeWithTheirLine) {
  const std::vector<std::pair<std::string, Json>> cases = {
      {"a batch size that is text",
       [&] {
         Json p = point("a", 1);
         p["batch_size"] = "2";
         return p;
       }()},
      {"a fractional batch size",
       [&] {
         Json p = point("a", 1);
         p["batch_size"] = 2.5;
         return p;
       }()},
      {"a size outside the plan", point("a", 7)},
      {"an unknown experiment", point("b", 1)},
      {"an oom record outside the plan",
       Json{{"type", "oom"}, {"experiment", "a"}, {"model", "mnist_cnn"}, {"batch_size", 99}}},
      {"a negative median",
       [&] {
         Json p = point("a", 1);
         p["median_ms"] = -4;
         return p;
       }()},
      {"a point without its statistics",
       [&] {
         Json p = point("a", 1);
         p.erase("p90_ms");
         return p;
       }()},
      {"a model that is not text",
       [&] {
         Json p = point("a", 1);
         p["model"] = 3;
         return p;
       }()},
      {"a type that is a number", Json{{"type", 5}}},  // no record at all, refused by the reader
      {"a step time that is text", Json{{"type", "step"},
                                        {"experiment", "a"},
                                        {"model", "mnist_cnn"},
                                        {"batch_size", 1},
                                        {"time_ms", "x"}}},
  };
  for (const auto& [what, bad] : cases) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/steps.jsonl")
        << run_record(experiments_).dump() << "\n" << point("a", 3).dump() << "\n" << bad.dump() << "\n";
    const std::string before = testing_support::file_bytes(dir_ + "/steps.jsonl");
    try {
      RunStore again(dir_, experiments_, false);
      ADD_FAILURE() << what << " was resumed";
    } catch (const UserError& e) {
      const std::string message = e.what();
      EXPECT_TRUE(message.find("steps.jsonl:3: is damaged") != std::string::npos ||
                  message.find("steps.jsonl:3: is not a batchscope record") != std::string::npos)
          << what << ": " << message;
    }
    EXPECT_EQ(testing_support::file_bytes(dir_ + "/steps.jsonl"), before) << what << ": the log was changed";
  }
}

TEST_F(RunStoreTest, ALogThatIsNotARegularFileIsRefused) {
  fs::create_directories(dir_ + "/steps.jsonl");
  EXPECT_TRUE(testing_support::refuses_with([&] { RunStore(dir_, experiments_, false); }, {"steps.jsonl", "is not a regular file"}));
}

}  // namespace
