#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/common/errors.h"
#include "lib/records/csv_writer.h"
#include "lib/records/maxbatch_records.h"
#include "lib/records/records.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;
using batchscope::testing_support::file_bytes;
using batchscope::testing_support::refuses_with;
using batchscope::testing_support::TempDir;
using batchscope::testing_support::write_gzip;

namespace {

ExperimentConfig experiment() {
  ExperimentConfig e;
  e.name = "tiny";
  e.model = "mnist_cnn";
  e.input_shape = {1, 28, 28};
  e.classes = 10;
  e.batch_sizes = {1, 2};
  return e;
}

BatchKey key(int64_t batch_size) { return batch_key(experiment(), "cpu", batch_size); }

Json step_json(int64_t batch_size, int64_t step, double time_ms, std::optional<double> loss) {
  return to_json(StepRecord{key(batch_size), step, time_ms, loss, std::nullopt});
}

}  // namespace

TEST(Records, StepRecordCarriesIdentityAndTime) {
  const Json j = step_json(17, 3, 41.27, 2.3);
  EXPECT_EQ(j["type"], "step");
  EXPECT_EQ(j["model"], "mnist_cnn");
  EXPECT_EQ(j["phase"], "train");
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["batch_size"], 17);
  EXPECT_EQ(j["step"], 3);
  EXPECT_DOUBLE_EQ(j["time_ms"].get<double>(), 41.27);
  EXPECT_DOUBLE_EQ(j["loss"].get<double>(), 2.3);
  EXPECT_TRUE(j["peak_memory_bytes"].is_null());
}

TEST(Records, PointRecordSummarisesTheSteps) {
  const Json j = to_json(point_record(key(4), {10, 20, 30, 40, 50}, 2e9, int64_t{1024}));
  EXPECT_EQ(j["type"], "point");
  EXPECT_EQ(j["samples"], 5);
  EXPECT_DOUBLE_EQ(j["median_ms"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(j["p10_ms"].get<double>(), 14);
  EXPECT_DOUBLE_EQ(j["p90_ms"].get<double>(), 46);
  EXPECT_DOUBLE_EQ(j["mean_ms"].get<double>(), 30);
  EXPECT_NEAR(j["samples_per_s"].get<double>(), 4 / 0.030, 1e-9);
  EXPECT_NEAR(j["tflops"].get<double>(), 2e9 / 0.030 / 1e12, 1e-12);
  EXPECT_EQ(j["peak_memory_bytes"], 1024);
}

// Every record the writers make passes the readers' checks, and each kind of damage is named.
TEST(RecordProblem, WrittenRecordsAreSound) {
  EXPECT_EQ(record_problem(step_json(17, 3, 41.27, 2.3)), "");
  PointRecord point = point_record(key(4), {10, 20, 30, 40, 50}, 2e9, int64_t{1024});
  EXPECT_EQ(record_problem(to_json(point)), "");
  PointEnergy energy;
  energy.method = "rapl";
  energy.scope = "package";
  energy.window_ms = 150;
  energy.steps = 5;
  energy.joules = 3;
  energy.idle_power_w = 40;  // more than the window drew: the above-idle fields are null
  derive_energy_figures(energy, 4);
  EXPECT_FALSE(energy.j_per_sample_above_idle.has_value());
  point.energy = energy;
  EXPECT_EQ(record_problem(to_json(point)), "");
  // chunk: auto's micro-batches at a size that did not fit whole read back as written.
  point.chunk = PointChunk{60, 64, 7, 2.2, int64_t{150}};
  const Json chunked = to_json(point);
  EXPECT_EQ(record_problem(chunked), "");
  EXPECT_EQ(chunked["chunk"], 60);
  EXPECT_EQ(chunked["chunk_bound_from_batch"], 150);
  const PointRecord back = std::get<PointRecord>(sweep_record_from_json(chunked));
  ASSERT_TRUE(back.chunk.has_value());
  EXPECT_EQ(back.chunk->chunk, 60);
  EXPECT_EQ(back.chunk->largest_fitting, 64);
  EXPECT_EQ(back.chunk->tries, 7);
  EXPECT_DOUBLE_EQ(back.chunk->seconds, 2.2);
  EXPECT_EQ(back.chunk->bound_from_batch, 150);
  Json damaged = chunked;
  damaged.erase("chunk_largest_fitting");
  EXPECT_EQ(record_problem(damaged), "has a chunk whose chunk_largest_fitting is not a whole number");
  damaged = chunked;
  damaged["chunk"] = 0;
  EXPECT_NE(record_problem(damaged).find("chunk that is not a whole number from 1"), std::string::npos);
  damaged = chunked;
  damaged["chunk_tries"] = "seven";
  EXPECT_EQ(record_problem(damaged), "has a chunk whose chunk_tries is not a whole number");
  damaged = chunked;
  damaged["chunk_bound_from_batch"] = -1;
  EXPECT_NE(record_problem(damaged).find("chunk_bound_from_batch"), std::string::npos);
  EXPECT_EQ(record_problem(context_record(record::kRun, "batchscope sweep", Json::object())), "");
  EXPECT_EQ(record_problem(Json{{"type", "layer_cost"}, {"anything", "goes"}}), "");
}

TEST(RecordProblem, NamesTheFieldThatIsWrong) {
  const Json point = to_json(point_record(key(4), {10, 20, 30, 40, 50}, 2e9, std::nullopt));
  const auto with = [&](const char* key, const Json& value) {
    Json r = point;
    r[key] = value;
    return record_problem(r);
  };
  EXPECT_NE(with("batch_size", "4").find("batch_size"), std::string::npos);
  EXPECT_NE(with("batch_size", 2.5).find("batch_size"), std::string::npos);
  EXPECT_NE(with("batch_size", 0).find("batch_size"), std::string::npos);
  EXPECT_NE(with("batch_size", int64_t{1} << 40).find("16777216"), std::string::npos);
  EXPECT_NE(with("batch_size", UINT64_MAX).find("batch_size"), std::string::npos);
  EXPECT_NE(with("median_ms", "fast").find("median_ms"), std::string::npos);
  EXPECT_NE(with("median_ms", -1).find("median_ms"), std::string::npos);
  EXPECT_NE(with("p10_ms", 45).find("out of order"), std::string::npos);
  EXPECT_NE(with("samples", 0).find("samples"), std::string::npos);
  EXPECT_NE(with("experiment", 3).find("experiment"), std::string::npos);
  EXPECT_NE(with("model", nullptr).find("model"), std::string::npos);
  EXPECT_NE(with("device", 0).find("device"), std::string::npos);
  EXPECT_NE(with("energy_j", "lots").find("energy_j"), std::string::npos);
  EXPECT_NE(with("start_power_w", Json::array()).find("start_power_w"), std::string::npos);
  EXPECT_EQ(with("energy_j", nullptr), "");

  Json step = step_json(2, 0, 5.0, std::nullopt);
  step["time_ms"] = 0;
  EXPECT_NE(record_problem(step).find("time_ms"), std::string::npos);
  step["time_ms"] = Json::array({1});
  EXPECT_NE(record_problem(step).find("time_ms"), std::string::npos);
  EXPECT_NE(record_problem(Json{{"type", 7}}).find("type"), std::string::npos);

  Json run = context_record(record::kRun, "batchscope sweep", Json{{"experiments", Json::array({to_json(experiment())})}});
  EXPECT_EQ(record_problem(run), "");
  Json bad = run;
  bad["gpus"] = Json::array({Json{{"index", "zero"}}});
  EXPECT_NE(record_problem(bad).find("gpus"), std::string::npos);
  bad = run;
  bad["cpu"]["torch_threads"] = "two";
  EXPECT_NE(record_problem(bad).find("cpu.torch_threads"), std::string::npos);
  bad = run;
  bad["cpu"]["onednn"] = {{"version", "3.7.2"}, {"enabled", "no"}};
  EXPECT_EQ(record_problem(bad), "has a cpu.onednn.enabled that is not true or false");
  bad["cpu"]["onednn"] = "3.7.2";
  EXPECT_EQ(record_problem(bad), "has a cpu.onednn that is not an object");
  bad["cpu"].erase("onednn");
  bad["cpu"]["torchscript_fuser"] = "off";
  EXPECT_EQ(record_problem(bad), "has a cpu.torchscript_fuser that is not true or false");
  bad = run;
  bad["config"]["experiments"][0]["batch"] = Json::array({1, "2"});
  EXPECT_NE(record_problem(bad).find("batch size"), std::string::npos);
  bad = run;
  bad["config"]["experiments"][0].erase("name");
  EXPECT_NE(record_problem(bad).find("without a name"), std::string::npos);
}

TEST(Jsonl, WriterAndReaderRoundTrip) {
  const TempDir dir;
  const std::string path = dir / "round_trip.jsonl";
  std::vector<Json> written = {Json{{"type", "run"}, {"nested", {{"a", 1}, {"b", {1, 2, 3}}}}},
                               step_json(1, 0, 1.5, std::nullopt),
                               Json{{"type", "end"}, {"text", "quote \" and\nnewline"}}};
  {
    JsonlWriter writer(path);
    for (const Json& j : written) writer.add(j);
    EXPECT_EQ(fs::file_size(path), 0u) << "records reach the file only on flush";
    writer.flush();
  }
  const JsonlContents back = read_jsonl(path);
  EXPECT_FALSE(back.truncated_tail);
  ASSERT_EQ(back.records.size(), written.size());
  for (std::size_t i = 0; i < written.size(); ++i) EXPECT_EQ(back.records[i], written[i]);
  EXPECT_EQ(back.complete_bytes, fs::file_size(path));
}

TEST(Jsonl, UnterminatedLastLineIsATruncatedTailNotAnError) {
  const TempDir dir;
  const std::string path = dir / "truncated.jsonl";
  std::ofstream(path) << "{\"type\":\"run\"}\n{\"type\":\"step\",\"ti";
  const JsonlContents back = read_jsonl(path);
  EXPECT_TRUE(back.truncated_tail);
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.complete_bytes, std::string("{\"type\":\"run\"}\n").size());
}

TEST(Jsonl, BrokenLineInTheMiddleNamesFileAndLine) {
  const TempDir dir;
  const std::string path = dir / "broken.jsonl";
  std::ofstream(path) << "{\"type\":\"run\"}\nnot json\n{\"type\":\"end\"}\n";
  try {
    read_jsonl(path);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2:"), std::string::npos) << e.what();
  }
}

TEST(Jsonl, CollectsBrokenLinesWhenAskedAndKeepsTheRest) {
  const TempDir dir;
  const std::string path = dir / "broken_lenient.jsonl";
  // A type that is not text is no record either: every reader asks for it as text.
  std::ofstream(path) << "{\"type\":\"run\"}\nnot json\n[1,2]\n{\"type\":5}\n{\"type\":\"end\"}\n";
  const JsonlContents back = read_jsonl(path, BadLines::Collect);
  ASSERT_EQ(back.records.size(), 2u);
  EXPECT_EQ(back.record_lines, (std::vector<int>{1, 5}));
  EXPECT_EQ(back.bad_lines, (std::vector<int>{2, 3, 4}));
  EXPECT_FALSE(back.truncated_tail);
}

TEST(Jsonl, ARecordWhoseTypeIsNotTextNamesFileAndLine) {
  const TempDir dir;
  const std::string path = dir / "typed.jsonl";
  std::ofstream(path) << "{\"type\":\"run\"}\n{\"type\":[\"point\"]}\n";
  EXPECT_TRUE(refuses_with([&] { read_jsonl(path); }, {path + ":2:", "\"type\" in text"}));
}

TEST(Jsonl, AGzipFileReadsAsTheLogItHolds) {
  const TempDir dir;
  std::string text = "{\"type\":\"run\"}\nnot json\n";
  for (int i = 0; i < 2000; ++i) text += step_json(1, i, 1.5 + i, std::nullopt).dump() + "\n";
  text += "{\"type\":\"end\"}\n{\"type\":\"st";
  std::ofstream(dir / "plain.jsonl") << text;
  write_gzip(dir / "packed.jsonl.gz", text);
  const JsonlContents plain = read_jsonl(dir / "plain.jsonl", BadLines::Collect);
  const JsonlContents packed = read_jsonl(dir / "packed.jsonl.gz", BadLines::Collect);
  EXPECT_FALSE(plain.compressed);
  EXPECT_TRUE(packed.compressed);
  ASSERT_EQ(packed.records.size(), 2002u);
  EXPECT_EQ(packed.records, plain.records);
  EXPECT_EQ(packed.record_lines, plain.record_lines);
  EXPECT_EQ(packed.bad_lines, std::vector<int>{2});
  EXPECT_TRUE(packed.truncated_tail);
  EXPECT_EQ(packed.complete_bytes, plain.complete_bytes);
  EXPECT_LT(fs::file_size(dir / "packed.jsonl.gz"), fs::file_size(dir / "plain.jsonl") / 4);
  // A compressed file cut short is refused whole, naming it: there are no lines to keep before the cut.
  const std::string bytes = file_bytes(dir / "packed.jsonl.gz");
  std::ofstream(dir / "cut.jsonl.gz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_TRUE(refuses_with([&] { read_jsonl(dir / "cut.jsonl.gz", BadLines::Collect); },
                           {dir / "cut.jsonl.gz", "is a gzip file that cannot be read whole"}));
}

TEST(Jsonl, MissingFileIsAUserErrorNamingIt) {
  const TempDir dir;
  EXPECT_TRUE(refuses_with([&] { read_jsonl(dir / "absent.jsonl"); }, {dir / "absent.jsonl", "cannot be read"}));
}

TEST(Csv, OneLinePerBatchRecordWithEscaping) {
  const SweepRecord oom = OomRecord{key(8), "out of memory, \"really\""};
  const std::string line = csv_line(oom, "run-1");
  EXPECT_EQ(line.rfind("oom,run-1,tiny,mnist_cnn,train,fp32,cpu,excluded,8,", 0), 0u) << line;
  EXPECT_NE(line.find("\"out of memory, \"\"really\"\"\""), std::string::npos) << line;
  EXPECT_EQ(csv_line(end_record(), "run-1"), "");

  const TempDir dir;
  const std::string path = dir / "steps.csv";
  RunRecord run;
  run.run_id = "first";
  rewrite_csv(path, {run, StepRecord{key(2), 1, 3.25, 1.0, std::nullopt}});
  std::string session = "second";
  append_csv(path, {oom}, session);
  const std::string text = file_bytes(path);
  EXPECT_EQ(text.rfind(csv_header_line() + "\n", 0), 0u);
  EXPECT_NE(text.find("step,first,tiny,mnist_cnn,train,fp32,cpu,excluded,2,,1,3.25,,1.0,"), std::string::npos) << text;
  EXPECT_NE(text.find("oom,second,"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
}

// The records as the writers wrote them before they became structs (tests/data/records/, made with the
// same values as below): the structs write the same lines, byte for byte, and read them back unchanged.
TEST(GoldenRecords, TheStructsWriteTheLinesTheOldWritersWrote) {
  ExperimentConfig e = experiment();
  e.name = "tiny, \"quoted\"";
  ExperimentConfig infer = experiment();
  infer.name = "tiny_infer";
  infer.phase = Phase::Infer;
  infer.precision = Precision::BF16;
  const auto energy = [](const char* method, const char* scope, double resolution, double window, int64_t steps,
                         double joules, std::optional<double> idle) {
    PointEnergy en;
    en.method = method;
    en.scope = scope;
    en.resolution_ms = resolution;
    en.window_ms = window;
    en.steps = steps;
    en.joules = joules;
    en.idle_power_w = idle;
    return en;
  };
  std::vector<SweepRecord> records = {
      StepRecord{batch_key(e, "cpu", 3), 0, 0.1 + 0.2, 2.302585092994046, int64_t{123456789}},
      StepRecord{batch_key(e, "cpu", 3), 1, 1.0 / 3.0, 2.25, int64_t{123456789}},
      StepRecord{batch_key(infer, "cuda:0", 3), 0, 7.000000000000001, std::nullopt, std::nullopt},
      point_record(batch_key(e, "cpu", 3), {0.1 + 0.2, 1.0 / 3.0, 0.7, 12.5}, 1.2345678901234567e9, int64_t{123456789}),
      point_record(batch_key(infer, "cuda:0", 3), {7.000000000000001}, 3e9, std::nullopt)};
  PointRecord p = point_record(batch_key(e, "cpu", 4), {2.0 / 3.0, 1.1, 1.7}, 2e9, std::nullopt);
  p.energy = energy("rapl_energy_counter", "package-0", 1.0009765625, 123.45678901234567, 7, 9.87654321, 12.3);
  p.energy->start.power_w = 40.5;
  p.energy->start.sm_clock_mhz = 1980;
  p.energy->start.temperature_c = 51;
  p.energy->end.power_w = 41.25;
  p.energy->end.utilization_pct = 97;
  p.energy->end.memory_clock_mhz = 2619;
  derive_energy_figures(*p.energy, 4);
  records.push_back(p);
  p = point_record(batch_key(e, "cpu", 2), {0.5, 0.6}, 1e9, std::nullopt);
  p.energy = energy("nvml_energy_counter", "gpu board", 20, 100, 3, 1.0, 50.0);
  derive_energy_figures(*p.energy, 2);
  records.push_back(p);
  p = point_record(batch_key(infer, "cuda:0", 1), {0.25}, 1e6, int64_t{42});
  p.energy = energy("nvml_power_samples", "gpu board", 100, 250.5, 11, 0.0, std::nullopt);
  derive_energy_figures(*p.energy, 1);
  records.push_back(p);
  records.push_back(OomRecord{batch_key(e, "cuda:0", 4096), "CUDA out of memory. Tried to allocate 2.00 GiB"});
  records.push_back(SkippedRecord{batch_key(e, "cuda:0", 8192), "batch size 4096 ran out of memory"});
  records.push_back(EndRecord{"2026-11-23T10:00:00Z", true});
  // Host times, and an end record that says where the time went.
  StepRecord timed{batch_key(infer, "cuda:0", 3), 1, 7.25, std::nullopt, std::nullopt, 0.125};
  records.push_back(timed);
  p = point_record(batch_key(infer, "cuda:0", 3), {7.25}, 3e9, std::nullopt);
  p.host_median_ms = 0.125;
  records.push_back(p);
  records.push_back(EndRecord{"2026-11-24T10:00:00Z", true,
                              SweepTimeSpent{12.5, {{"timed_steps", 10.0}, {"warm_up", 2.0}, {"other", 0.5}}}});

  const TempDir dir;
  {
    JsonlWriter writer(dir / "steps.jsonl");
    for (const SweepRecord& r : records) writer.add(to_json(r));
  }
  const std::string golden =
      file_bytes(std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/data/records/golden_records.jsonl");
  ASSERT_FALSE(golden.empty());
  EXPECT_EQ(file_bytes(dir / "steps.jsonl"), golden);

  // Read back: the same struct writes the same line.
  const JsonlContents back = read_jsonl(std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/data/records/golden_records.jsonl");
  ASSERT_EQ(back.records.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(to_json(sweep_record_from_json(back.records[i])).dump(), back.records[i].dump()) << "line " << i + 1;
  }
}

// A log written before a field existed (no transfer, a point with only some statistics) is still read.
TEST(GoldenRecords, OlderLogsAreRead) {
  const JsonlContents old = read_jsonl(std::string(BATCHSCOPE_SOURCE_DIR) + "/tests/data/analysis/golden_steps.jsonl");
  int points = 0;
  for (const Json& line : old.records) {
    if (!is_sweep_record_type(line["type"].get<std::string>())) continue;
    const SweepRecord r = sweep_record_from_json(line);
    if (const auto* point = std::get_if<PointRecord>(&r)) {
      ++points;
      EXPECT_TRUE(point->key.transfer.empty());
      EXPECT_TRUE(point->median_ms.has_value());
      EXPECT_FALSE(point->p10_ms.has_value());
      ASSERT_TRUE(point->energy.has_value());
      EXPECT_EQ(point->energy->start.utilization_pct, std::nullopt);
      EXPECT_TRUE(point->energy->end.utilization_pct.has_value());
    }
  }
  EXPECT_EQ(points, 24);
}

// A record with a field of the wrong type is refused with record_problem's words.
TEST(GoldenRecords, FromJsonRefusesWhatRecordProblemRefuses) {
  Json step = step_json(2, 0, 5.0, std::nullopt);
  step["loss"] = "low";
  try {
    sweep_record_from_json(step);
    FAIL() << "a text loss was read";
  } catch (const BadRecord& bad) {
    EXPECT_EQ(std::string(bad.what()), record_problem(step));
  }
  EXPECT_THROW(sweep_record_from_json(Json{{"type", "epoch"}}), BadRecord);
}

// steps.csv has a column for every field of every per-batch record.
TEST(Csv, EveryFieldOfEveryRecordHasItsColumn) {
  PointRecord p = point_record(key(4), {1, 2, 3}, 1e9, int64_t{7});
  p.energy = PointEnergy{};
  p.energy->idle_power_w = 1;
  p.chunk = PointChunk{2, 3, 4, 0.5, int64_t{2}};
  const std::vector<SweepRecord> records = {StepRecord{key(4), 0, 1, 2, 3}, p, OomRecord{key(8), "m"},
                                            SkippedRecord{key(16), "r"}};
  const auto& columns = csv_columns();
  for (const SweepRecord& r : records) {
    const Json fields = to_json(r);
    for (const auto& [field, value] : fields.items()) {
      EXPECT_NE(std::find(columns.begin(), columns.end(), field), columns.end()) << field << " has no column";
    }
  }
}

namespace {

Json search_opening(const std::string& precision, const std::string& device, const std::string& gpu) {
  return {{"type", record::kMaxBatchSearch},
          {"libtorch_version", "1.13.1"},
          {"gpus", Json::array({Json{{"name", gpu}, {"memory_bytes", 1}}})},
          {"config", {{"name", "vgg16_train"}, {"model", "vgg16"}, {"precision", precision}}},
          {"device", device},
          {"search", {{"start", 1}, {"confirm_steps", 3}}}};
}

Json try_line(int64_t batch_size, bool fits) {
  MaxBatchTry t;
  t.batch_size = batch_size;
  t.stage = TryStage::Grow;
  t.steps = 1;
  t.fits = fits;
  t.seconds = 0.25;
  if (fits) t.peak_memory_bytes = batch_size * 1000;
  if (!fits) t.error = "out of memory";
  Json record = {{"type", record::kMaxBatchTry}, {"experiment", "vgg16_train"}};
  const Json fields = to_json(t);
  for (const auto& [key, value] : fields.items()) record[key] = value;
  return record;
}

}  // namespace

TEST(MaxBatchRecords, ATryReadsBackAsWrittenAndADamagedOneIsNamed) {
  const MaxBatchTry back = try_from_json(try_line(48, false));
  EXPECT_EQ(back.batch_size, 48);
  EXPECT_EQ(back.stage, TryStage::Grow);
  EXPECT_EQ(back.steps, 1);
  EXPECT_FALSE(back.fits);
  EXPECT_DOUBLE_EQ(back.seconds, 0.25);
  EXPECT_EQ(back.error, "out of memory");
  EXPECT_EQ(try_from_json(try_line(32, true)).peak_memory_bytes, 32000);
  const auto problem = [](const char* key, const Json& value) {
    Json j = try_line(8, true);
    j[key] = value;
    try {
      try_from_json(j);
    } catch (const BadRecord& bad) {
      return std::string(bad.what());
    }
    return std::string();
  };
  EXPECT_NE(problem("batch_size", 0).find("batch_size"), std::string::npos);
  EXPECT_NE(problem("stage", "up").find("\"up\" that is not grow, bisect or confirm"), std::string::npos);
  EXPECT_NE(problem("steps", "three").find("steps"), std::string::npos);
  EXPECT_NE(problem("fits", 1).find("fits"), std::string::npos);
  EXPECT_NE(problem("seconds", -1).find("seconds"), std::string::npos);
  EXPECT_EQ(problem("seconds", 2.5), "");
}

TEST(MaxBatchRecords, TheSearchLogGivesTheStoppedSearchAtItsEnd) {
  TempDir dir;
  const std::string path = dir / "maxbatch.jsonl";
  EXPECT_FALSE(read_search_log(path).stopped.has_value()) << "no file, no stopped search";
  const Json opening = search_opening("fp32", "cuda:0", "H1");
  const Json result = {{"type", record::kMaxBatch}, {"result", {{"max_batch", 2}}}};
  std::string text;
  for (const Json& r : {opening, try_line(1, true), try_line(2, true), result}) text += r.dump() + "\n";
  { std::ofstream(path) << text; }
  EXPECT_FALSE(read_search_log(path).stopped.has_value()) << "a file that ends with a result";
  const SearchLog ended = read_search_log(path);
  ASSERT_TRUE(ended.finished.has_value());
  EXPECT_EQ(ended.finished->result_line, 4);
  EXPECT_EQ(ended.finished->opening, opening);
  // The finished search's opening is checked as a stopped one's is: it says what the search was.
  Json bare = opening;
  bare.erase("search");
  { std::ofstream(path) << bare.dump() << "\n" << result.dump() << "\n"; }
  EXPECT_TRUE(refuses_with([&] { read_search_log(path); },
                           {path + ":1: has a maxbatch_search record without its config and search"}));
  { std::ofstream(path) << text; }

  Json resumed = opening;
  resumed["resumed_tries"] = 1;
  for (const Json& r : {opening, try_line(1, true), resumed, try_line(2, true), try_line(4, false)}) {
    text += r.dump() + "\n";
  }
  { std::ofstream(path) << text << R"({"type":"maxbatch_try","batch_si)"; }
  const SearchLog log = read_search_log(path);
  ASSERT_TRUE(log.stopped.has_value());
  ASSERT_TRUE(log.stopped->opening.has_value());
  EXPECT_FALSE(log.stopped->opening->contains("resumed_tries"))
      << "the first opening says what the search is";
  EXPECT_EQ(log.stopped->opening_line, 5);
  ASSERT_EQ(log.stopped->tries.size(), 3u);
  EXPECT_EQ(log.stopped->try_lines, (std::vector<int>{6, 8, 9}));
  EXPECT_EQ(log.stopped->tries[2].batch_size, 4);
  EXPECT_FALSE(log.stopped->tries[2].fits);
  EXPECT_TRUE(log.stopped->tries[0].earlier);
  EXPECT_TRUE(log.truncated_tail);
  EXPECT_EQ(log.complete_bytes, text.size());

  // Tries alone (an older batchscope's) are a stopped search without its opening.
  { std::ofstream(path) << try_line(1, true).dump() << "\n"; }
  ASSERT_TRUE(read_search_log(path).stopped.has_value());
  EXPECT_FALSE(read_search_log(path).stopped->opening.has_value());

  // A damaged try and a record of another command are named with their line.
  Json damaged = try_line(2, true);
  damaged["stage"] = "sideways";
  { std::ofstream(path) << opening.dump() << "\n" << damaged.dump() << "\n"; }
  EXPECT_TRUE(
      refuses_with([&] { read_search_log(path); }, {path + ":2: is damaged: the record has a stage"}));
  { std::ofstream(path) << opening.dump() << "\n" << Json{{"type", "step"}}.dump() << "\n"; }
  EXPECT_TRUE(refuses_with([&] { read_search_log(path); },
                           {path + ":2: holds a \"step\" record, which maxbatch does not write"}));
  write_gzip(path, opening.dump() + "\n");
  EXPECT_TRUE(refuses_with([&] { read_search_log(path); }, {"is compressed"}));
}

TEST(MaxBatchRecords, AStoppedSearchDiffersInWhatDecidesItsCourse) {
  const Json earlier = search_opening("fp32", "cuda:0", "H1");
  Json now = earlier;
  now["run_id"] = "another session";
  now["start_time"] = "later";
  EXPECT_EQ(search_difference(earlier, now), "");
  EXPECT_EQ(search_difference(earlier, search_opening("bf16", "cuda:0", "H1")),
            "precision was fp32 there and is bf16 here");
  Json fewer_steps = earlier;
  fewer_steps["search"]["confirm_steps"] = 2;
  EXPECT_EQ(search_difference(earlier, fewer_steps), "confirm_steps was 3 there and is 2 here");
  Json no_start = earlier;
  no_start["search"].erase("start");
  EXPECT_EQ(search_difference(earlier, no_start), "start was 1 there and is absent here");
  EXPECT_NE(search_difference(earlier, search_opening("fp32", "cuda:0", "H2")).find("GPUs"),
            std::string::npos);
  Json allocator = earlier;
  allocator["cuda_allocator_environment"] = {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
  EXPECT_EQ(search_difference(earlier, allocator),
            "PYTORCH_CUDA_ALLOC_CONF was absent there and is expandable_segments:True here");
  // On the CPU the GPUs and their allocator do not decide what fits.
  EXPECT_EQ(search_difference(search_opening("fp32", "cpu", "H1"), search_opening("fp32", "cpu", "H2")), "");
  EXPECT_NE(search_difference(earlier, search_opening("fp32", "cpu", "H1")).find("device was cuda:0"),
            std::string::npos);
}
