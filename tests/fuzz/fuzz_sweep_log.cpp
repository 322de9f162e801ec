// steps.jsonl, read the two ways the program reads it:
// - resume: `batchscope sweep` finding an interrupted log in --out either continues it or refuses it
//   with a UserError naming the file and line; the batch sizes it counts as done are ones the plan has.
// - analyze: `batchscope analyze` keeps what it can use (skipping the rest with warnings) and writes its
//   report, or says with a UserError that nothing can be analysed. The same bytes are also the sweep's
//   profile.jsonl beside it (its profile records joined with the log's points), and its lines with a
//   peak record (all of it where there are none) a peak file for `analyze --peak`, read or refused with a
//   UserError. And the same bytes as a micro-batch study's microbatch.jsonl, which analyze reports in a
//   section of its own.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "lib/analysis/analyzer.h"
#include "lib/analysis/peak_share.h"
#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/common/errors.h"
#include "lib/config/config.h"
#include "lib/records/run_store.h"
#include "tests/fuzz/fuzz_support.h"

using namespace batchscope;

namespace {

// The plan a resuming sweep would bring: the experiments of the log's own run record where they are
// ones the program could have written (each reads back as an experiment), else a fixed one, so the
// fuzzer reaches the record checks past the comparison of plans.
Json plan_for(const std::string& text) {
  const std::string first = text.substr(0, text.find('\n'));
  const Json record = Json::parse(first, nullptr, /*allow_exceptions=*/false);
  if (record.is_object() && record.contains("config") && record["config"].is_object() &&
      record["config"].contains("experiments") && record["config"]["experiments"].is_array()) {
    Json experiments = Json::array();
    try {
      for (const Json& e : record["config"]["experiments"]) experiments.push_back(Json(to_json(experiment_from_json(e))));
      return experiments;
    } catch (const std::exception&) {
      // not a plan this program writes; fall through
    }
  }
  return Json::array({Json(to_json(parse_sweep_config("experiments:\n  - {model: mnist_cnn, batch: 1:4}\n",
                                                 "plan.yaml").experiments.front()))});
}

void resume(const std::string& dir, const std::string& text) {
  const Json plan = plan_for(text);
  try {
    const RunStore store(dir, plan, /*force=*/false);
    for (const Json& e : plan) {
      const std::string name = e["name"].get<std::string>();
      for (int64_t b = 1; b <= 4096; ++b) {
        const bool planned = std::find(e["batch"].begin(), e["batch"].end(), Json(b)) != e["batch"].end();
        if (store.done(name, b) && !planned) std::abort();  // a size outside the plan counted as done
      }
    }
  } catch (const UserError&) {
    // refused with a located sentence, the log left as it was
  }
}

void analyze(const std::string& dir, const std::string& text) {
  AnalyzeOptions options;
  std::string peak_lines;
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    const std::string line = text.substr(begin, end - begin + 1);
    if (line.find("\"peak\"") != std::string::npos) peak_lines += line;
    begin = end + 1;
  }
  const std::string& peaks = peak_lines.empty() ? text : peak_lines;
  const std::string peak_file =
      fuzz::write_input("run/peak.jsonl", reinterpret_cast<const uint8_t*>(peaks.data()), peaks.size());
  try {
    options.peaks = read_peak_table(peak_file);
  } catch (const UserError&) {
    // not a peak file: analysed without one
  }
  try {
    const Analysis analysis = analyze_logs({dir}, options);
    (void)analysis_to_json(analysis, options).dump();
    std::ostringstream report, terminal;
    write_report(report, analysis, PlotOutcome{}, "plots");
    write_terminal_summary(terminal, analysis);
  } catch (const UserError&) {
    // nothing to analyse, said in a sentence
  }
}

void analyze_study(const std::string& dir) {
  try {
    const Analysis analysis = analyze_logs({dir}, AnalyzeOptions{});
    (void)analysis_to_json(analysis, AnalyzeOptions{}).dump();
    std::ostringstream report;
    write_report(report, analysis, PlotOutcome{}, "plots");
  } catch (const UserError&) {
    // nothing to analyse, said in a sentence
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::filesystem::path dir = fuzz::scratch_dir() / "run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  fuzz::write_input("run/steps.jsonl", data, size);
  fuzz::write_input("run/profile.jsonl", data, size);
  analyze(dir.string(), text);
  resume(dir.string(), text);
  const std::filesystem::path study = fuzz::scratch_dir() / "study";
  std::filesystem::remove_all(study);
  std::filesystem::create_directories(study);
  fuzz::write_input("study/microbatch.jsonl", data, size);
  analyze_study(study.string());
  return 0;
}
