#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lib/csv_writer.h"
#include "lib/errors.h"
#include "lib/records.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;
using batchscope::testing_support::refuses_with;
using batchscope::testing_support::TempDir;

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

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(Records, StepRecordCarriesIdentityAndTime) {
  const Json j = step_record(experiment(), "cpu", 17, 3, {41.27, 2.3}, std::nullopt);
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
  const Json j = point_record(experiment(), "cpu", 4, {10, 20, 30, 40, 50}, 2e9, int64_t{1024});
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
  EXPECT_EQ(record_problem(step_record(experiment(), "cpu", 17, 3, {41.27, 2.3}, std::nullopt)), "");
  Json point = point_record(experiment(), "cpu", 4, {10, 20, 30, 40, 50}, 2e9, int64_t{1024});
  EXPECT_EQ(record_problem(point), "");
  PointEnergy energy;
  energy.method = "rapl";
  energy.scope = "package";
  energy.window_ms = 150;
  energy.steps = 5;
  energy.joules = 3;
  energy.idle_power_w = 40;  // more than the window drew: the above-idle fields are null
  add_energy_fields(point, 4, energy);
  EXPECT_EQ(record_problem(point), "");
  EXPECT_EQ(record_problem(context_record(record::kRun, "batchscope sweep", Json::object())), "");
  EXPECT_EQ(record_problem(Json{{"type", "layer_cost"}, {"anything", "goes"}}), "");
}

TEST(RecordProblem, NamesTheFieldThatIsWrong) {
  const Json point = point_record(experiment(), "cpu", 4, {10, 20, 30, 40, 50}, 2e9, std::nullopt);
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

  Json step = step_record(experiment(), "cpu", 2, 0, {5.0, std::nullopt}, std::nullopt);
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
                               step_record(experiment(), "cpu", 1, 0, {1.5, std::nullopt}, std::nullopt),
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
  std::ofstream(path) << "{\"type\":\"run\"}\nnot json\n[1,2]\n{\"type\":\"end\"}\n";
  const JsonlContents back = read_jsonl(path, BadLines::Collect);
  ASSERT_EQ(back.records.size(), 2u);
  EXPECT_EQ(back.record_lines, (std::vector<int>{1, 4}));
  EXPECT_EQ(back.bad_lines, (std::vector<int>{2, 3}));
  EXPECT_FALSE(back.truncated_tail);
}

TEST(Jsonl, MissingFileIsAUserErrorNamingIt) {
  const TempDir dir;
  EXPECT_TRUE(refuses_with([&] { read_jsonl(dir / "absent.jsonl"); }, {dir / "absent.jsonl", "cannot be read"}));
}

TEST(Csv, OneLinePerBatchRecordWithEscaping) {
  Json oom = batch_record(record::kOom, experiment(), "cpu", 8);
  oom["message"] = "out of memory, \"really\"";
  const std::string line = csv_line(oom);
  EXPECT_EQ(line.rfind("oom,tiny,mnist_cnn,train,fp32,cpu,8,", 0), 0u) << line;
  EXPECT_NE(line.find("\"out of memory, \"\"really\"\"\""), std::string::npos) << line;
  EXPECT_EQ(csv_line(Json{{"type", "run"}}), "");

  const TempDir dir;
  const std::string path = dir / "steps.csv";
  rewrite_csv(path,
              {Json{{"type", "run"}}, step_record(experiment(), "cpu", 2, 1, {3.25, 1.0}, std::nullopt)});
  append_csv(path, {oom});
  const std::string text = slurp(path);
  EXPECT_EQ(text.rfind(csv_header_line() + "\n", 0), 0u);
  EXPECT_NE(text.find("step,tiny,mnist_cnn,train,fp32,cpu,2,1,3.25,1,"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
}
