#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "lib/analysis/analyzer.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/device/cpu_memory.h"
#include "lib/records/jsonl.h"
#include "lib/sweep/max_batch.h"
#include "lib/sweep/sweep_runner.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

// mnist_cnn's training at these sizes with chunk: auto, two timed steps each.
SweepConfig chunk_auto_sweep(std::vector<int64_t> batches) {
  ExperimentConfig e = testing_support::tiny_mnist_training("mnist_auto");
  e.batch_sizes = std::move(batches);
  e.warmup_steps = 0;
  e.timed_steps = 2;
  e.chunk_auto = true;
  return SweepConfig{"test", {e}};
}

// The sweep under a CPU limit of what LibTorch holds now and 40 MiB: mnist_cnn trains a batch of 8 whole
// there, and not one of 150.
SweepOutcome run_chunked_under_limit(const SweepConfig& config, const fs::path& out) {
  SweepOptions options;
  options.out_dir = out.string();
  std::ostringstream progress;
  const cpu_memory::ScopedLimit limit(cpu_memory::current_bytes() + (40 << 20));
  return run_sweep(resolve_for_machine(config), options, progress);
}

// Each pass's point of each batch size.
std::map<std::pair<int64_t, int64_t>, PointRecord> chunked_sweep_points(
    const std::vector<SweepRecord>& records) {
  std::map<std::pair<int64_t, int64_t>, PointRecord> points;
  for (const SweepRecord& r : records) {
    if (const auto* p = std::get_if<PointRecord>(&r))
      points[{p->key.batch_size, p->key.pass.value_or(1)}] = *p;
  }
  return points;
}

const PointRecord& point_at(const std::map<std::pair<int64_t, int64_t>, PointRecord>& points, int64_t batch,
                            int64_t pass) {
  return points.at({batch, pass});
}

}  // namespace

// chunk: auto: a size that runs out of memory whole runs in the largest even micro-batches that run it,
// found on the batch itself; a larger size searches from there; a resumed sweep takes an earlier
// session's choices, and analyze names the sizes.
TEST(SweepChunkAuto, ASizeThatDoesNotFitWholeRunsInTheLargestEvenMicroBatchesThatFit) {
  const testing_support::TempDir dir;
  const SweepOutcome outcome = run_chunked_under_limit(chunk_auto_sweep({8, 150, 300}), dir / "records");
  auto points = chunked_sweep_points(outcome.records);
  ASSERT_EQ(points.size(), 3u) << "every size measured, none out of memory";
  EXPECT_FALSE(point_at(points, 8, 1).chunk.has_value()) << "a batch that fits runs whole";

  ASSERT_TRUE(point_at(points, 150, 1).chunk.has_value());
  const PointChunk at150 = *point_at(points, 150, 1).chunk;
  EXPECT_GE(at150.largest_fitting, 8);
  EXPECT_LT(at150.largest_fitting, 150);
  EXPECT_EQ(at150.chunk, even_chunk(150, at150.largest_fitting));
  EXPECT_GE(at150.tries, 3) << "two tries and the confirmation at least";
  EXPECT_GT(at150.seconds, 0);
  EXPECT_FALSE(at150.bound_from_batch.has_value());

  ASSERT_TRUE(point_at(points, 300, 1).chunk.has_value());
  const PointChunk at300 = *point_at(points, 300, 1).chunk;
  EXPECT_EQ(at300.bound_from_batch, 150) << "searched from the largest that fitted beside 150";
  EXPECT_LE(at300.largest_fitting, at150.largest_fitting);
  EXPECT_EQ(at300.chunk, even_chunk(300, at300.largest_fitting));
  EXPECT_GE(at300.tries, 2);

  const Json line = to_json(SweepRecord{point_at(points, 150, 1)});
  EXPECT_EQ(line["chunk"], at150.chunk);
  EXPECT_EQ(line["chunk_largest_fitting"], at150.largest_fitting);
  EXPECT_EQ(line["chunk_tries"], at150.tries);
  double searching = -1;
  for (const auto& [part, seconds] : outcome.time_spent.parts) {
    if (part == "chunk_search") searching = seconds;
  }
  EXPECT_GE(searching, at150.seconds + at300.seconds) << "the session's time spent has the searches";

  // analyze: the sizes that did not fit whole, and the largest that did.
  const Analysis a = analyze_logs({outcome.jsonl_path}, {});
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  EXPECT_EQ(g.accumulated, (std::vector<int64_t>{150, 300}));
  EXPECT_EQ(g.largest_whole, 8);
  EXPECT_EQ(g.points[1].chunk, at150.chunk);
  std::ostringstream report;
  PlotOutcome plots;
  plots.skipped_reason = "none wanted";
  write_report(report, a, plots, "plots");
  const int64_t passes = (150 + at150.chunk - 1) / at150.chunk;
  EXPECT_NE(report.str().find("did not fit whole from batch 150 on (the largest whole: 8)"),
            std::string::npos)
      << report.str();
  EXPECT_NE(report.str().find("did not fit whole: " + std::to_string(passes) + " × at most " +
                              std::to_string(at150.chunk) + " (chunk: auto)"),
            std::string::npos);
  EXPECT_NE(report.str().find("chunk: auto (a batch that does not fit whole"), std::string::npos);
  // One size ran whole (and with too few steps): no jumps looked for, and the report counts only that one.
  EXPECT_NE(report.str().find("**Jumps:** not tested. Finding one needs at least three batch sizes with "
                              "enough timed steps, and 0 of 1 run whole have them"),
            std::string::npos)
      << report.str();
  EXPECT_EQ(report.str().find("no jumps"), std::string::npos) << "untested is not \"no jumps\"";
  EXPECT_EQ(report.str().find("Multiples of 16"), std::string::npos);
  EXPECT_NE(report.str().find("| not tested |"), std::string::npos);
  std::ostringstream terminal;
  write_terminal_summary(terminal, a);
  EXPECT_NE(terminal.str().find("jumps: not tested"), std::string::npos) << terminal.str();
  EXPECT_NE(terminal.str().find("did not fit whole, in micro-batches (chunk: auto): 150, 300"),
            std::string::npos)
      << terminal.str();

  // Killed before batch 300: the resumed session searches at 300 from 150's earlier choice.
  const std::vector<Json> records = read_jsonl(outcome.jsonl_path).records;
  std::ofstream cut(outcome.jsonl_path, std::ios::trunc);
  for (const Json& r : records) {
    if (r.value("batch_size", int64_t{0}) == 300 || r["type"] == "end") break;
    cut << r.dump() << "\n";
  }
  cut.close();
  const SweepOutcome resumed = run_chunked_under_limit(chunk_auto_sweep({8, 150, 300}), dir / "records");
  EXPECT_TRUE(resumed.resumed);
  points = chunked_sweep_points(resumed.records);
  ASSERT_TRUE(point_at(points, 150, 1).chunk.has_value());
  EXPECT_EQ(point_at(points, 150, 1).chunk->tries, at150.tries) << "the earlier session's point, kept";
  ASSERT_TRUE(point_at(points, 300, 1).chunk.has_value());
  EXPECT_EQ(point_at(points, 300, 1).chunk->bound_from_batch, 150);
  EXPECT_LE(point_at(points, 300, 1).chunk->largest_fitting, at150.largest_fitting);
}

// A repeated pass runs a size in the micro-batches its first pass chose, without searching again.
TEST(SweepChunkAuto, ARepeatedPassTakesTheFirstPassesMicroBatches) {
  const testing_support::TempDir dir;
  SweepConfig config = chunk_auto_sweep({150});
  config.experiments[0].repeats = 2;
  const SweepOutcome outcome = run_chunked_under_limit(config, dir / "records");
  auto points = chunked_sweep_points(outcome.records);
  ASSERT_TRUE(point_at(points, 150, 1).chunk.has_value());
  ASSERT_TRUE(point_at(points, 150, 2).chunk.has_value());
  EXPECT_GT(point_at(points, 150, 1).chunk->tries, 0);
  EXPECT_EQ(point_at(points, 150, 2).chunk->tries, 0);
  EXPECT_EQ(point_at(points, 150, 2).chunk->seconds, 0);
  EXPECT_EQ(point_at(points, 150, 2).chunk->chunk, point_at(points, 150, 1).chunk->chunk);
  EXPECT_EQ(point_at(points, 150, 2).chunk->largest_fitting, point_at(points, 150, 1).chunk->largest_fitting);
}

// Without chunk: auto a size that does not fit whole is out of memory, and the larger ones are skipped.
TEST(SweepChunkAuto, WithoutItASizeThatDoesNotFitIsOutOfMemory) {
  const testing_support::TempDir dir;
  SweepConfig config = chunk_auto_sweep({8, 150, 300});
  config.experiments[0].chunk_auto = false;
  const SweepOutcome outcome = run_chunked_under_limit(config, dir / "records");
  std::vector<std::string> types;
  for (const SweepRecord& r : outcome.records) {
    if (!std::holds_alternative<StepRecord>(r)) types.push_back(type_of(r));
  }
  EXPECT_EQ(types, (std::vector<std::string>{"run", "point", "oom", "skipped", "end"}));
}
