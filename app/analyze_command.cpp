#include <algorithm>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/analysis/analyzer.h"
#include "lib/analysis/log_reader.h"
#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/report/plots.h"
#include "lib/analysis/report/report_markdown.h"
#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/common/words.h"
#include "lib/records/jsonl.h"
#include "lib/records/records.h"
#include "lib/training/noise_scale.h"

namespace batchscope::app {
namespace fs = std::filesystem;
namespace {

// --tile 128x64: the GEMM tile of the prediction.
Tile tile_option(const std::string& text) {
  const size_t x = text.find('x');
  char* end = nullptr;
  const long long m = x == std::string::npos ? 0 : std::strtoll(text.c_str(), &end, 10);
  const bool m_ok = x != std::string::npos && end == text.c_str() + x;
  const long long n = m_ok ? std::strtoll(text.c_str() + x + 1, &end, 10) : 0;
  if (!m_ok || *end != '\0' || m < 1 || n < 1 || m > 4096 || n > 4096) {
    throw UserError(located("command line", 0, "--tile " + text + " is not a tile",
                            "give its rows and columns as MxN, from 1 to 4096, e.g. --tile 128x64"));
  }
  return Tile{m, n, kDefaultTile.k};
}

// --noise-scale: B_noise as a number, or a `train --noise-scale` run (its directory or train.jsonl), whose
// last epoch with a resolved noise scale gives it, or RUN:EPOCH, that epoch's.
GivenNoiseScale noise_scale_option(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') {
    if (!(value >= 1 && value <= 1e12)) {
      refuse("--noise-scale " + printable(text) + " is not a noise scale",
             "give B_noise as a batch size from 1 to 1e12, e.g. --noise-scale 1100");
    }
    return {value, "--noise-scale"};
  }
  std::string path = text;
  std::optional<int64_t> wanted;  // RUN:EPOCH, where RUN:EPOCH is not itself a file or directory
  std::error_code ec;
  const std::size_t colon = text.rfind(':');
  if (!fs::exists(text, ec) && colon != std::string::npos && colon + 1 < text.size() &&
      text.find_first_not_of("0123456789", colon + 1) == std::string::npos && text.size() - colon <= 7) {
    path = text.substr(0, colon);
    wanted = std::stoll(text.substr(colon + 1));
  }
  fs::path file(path);
  if (fs::is_directory(file, ec)) file /= "train.jsonl";
  if (!fs::is_regular_file(file, ec)) {
    refuse("--noise-scale " + printable(text) +
               " is neither a number nor a training run's directory or train.jsonl (with :EPOCH or not)",
           "give B_noise, e.g. --noise-scale 1100, or the --out of a train --noise-scale run");
  }
  const JsonlContents contents = read_jsonl(file.string());
  std::optional<GivenNoiseScale> found;
  std::vector<int64_t> resolved;  // the epochs with a resolved noise scale
  for (std::size_t i = 0; i < contents.records.size(); ++i) {
    const Json& r = contents.records[i];
    if (r.value("type", "") != "epoch" || !r.contains("noise_scale")) continue;
    const int line = contents.record_lines[i];
    try {
      const NoiseScale n = noise_scale_from_json(r["noise_scale"]);
      const Json epoch = r.value("epoch", Json());
      if (!n.b_simple || !(*n.b_simple > 0) || !epoch.is_number_integer()) continue;
      resolved.push_back(epoch.get<int64_t>());
      if (!wanted || *wanted == resolved.back()) {
        found = GivenNoiseScale{*n.b_simple,
                                file.string() + ":" + std::to_string(line) + " (epoch " + epoch.dump() + ")"};
      }
    } catch (const BadRecord& bad) {
      throw UserError(located(file.string(), line, std::string("is damaged: the epoch record ") + bad.what(),
                              "repair or remove that line, or give B_noise as a number"));
    }
  }
  if (!found && wanted && !resolved.empty()) {
    throw UserError(located(file.string(), 0,
                            "holds no epoch " + std::to_string(*wanted) + " whose noise scale was resolved",
                            "give one of its epochs with one: " + joined_numbers(resolved, ", ")));
  }
  if (!found) {
    throw UserError(
        located(file.string(), 0, "holds no epoch whose noise scale was resolved",
                "train with --noise-scale N (more groups resolve it better), or give B_noise as a "
                "number"));
  }
  return *found;
}

cxxopts::Options analyze_options() {
  cxxopts::Options options(
      "batchscope analyze",
      "Find the trend, the jumps and their period in the step times of one or more sweep logs, and the\n"
      "line their peak memory follows with the sizes where a workspace changed it, and write report.md,\n"
      "analysis.json and plots. Logs of the same experiment on the same kind of machine are\n"
      "merged (a sweep split across machines or runs); other logs of the same model and phase are compared.");
  options.positional_help("LOG [LOG...]  (steps.jsonl files or the sweep directories holding them)");
  // clang-format off
  options.add_options()
      ("logs", "sweep logs", cxxopts::value<std::vector<std::string>>())
      ("o,out", "directory for report.md, analysis.json and plots/ (default: analysis/ beside the first log); "
                "analyze replaces its own files there", cxxopts::value<std::string>())
      ("min-samples", "timed steps a batch size needs to be used; fewer are flagged", cxxopts::value<std::string>()->default_value(std::to_string(limits::kMinAnalyzedSteps)))
      ("threshold", "a jump must exceed the local trend by this many noise deviations", cxxopts::value<std::string>()->default_value("5"))
      ("min-jump", "a jump must also be at least this percentage of the step time", cxxopts::value<std::string>()->default_value("2"))
      ("window", "consecutive differences on each side that give the local slope", cxxopts::value<std::string>()->default_value("8"))
      ("sms", "predict jumps from GEMM tiles and waves for a GPU with this many SMs (default: the SM count in the run record; none on a CPU)", cxxopts::value<std::string>())
      ("tile", "the GEMM tile MxN of the prediction where no profiled kernel name gives one (default 128x128)", cxxopts::value<std::string>())
      ("price", "$ per device-hour, for every device the --prices file does not name: adds $ per million samples and the cheapest batch size", cxxopts::value<std::string>())
      ("prices", "a YAML file with prices: mapping device names (or parts of them) to $ per hour", cxxopts::value<std::string>())
      ("peak", "the JSON-lines file of batchscope peak --out (again, or comma-separated, for more files): each group's highest TFLOP/s as a share of its device's measured peaks, and a profiled sweep's layers' TFLOP/s against its convolution peak and, where peak --model timed them, against each layer alone", cxxopts::value<std::vector<std::string>>())
      ("epoch-samples", "samples in an epoch, for $ per epoch (default: the training set of a known dataset, 60000 for mnist and fashion-mnist, 50000 for cifar10 and cifar100, or of a dataset directory's files where they are here; none for synthetic data)", cxxopts::value<std::string>())
      ("noise-scale", "the gradient noise scale B_noise, or a train --noise-scale run (its directory or train.jsonl; its last epoch's, or RUN:EPOCH): each training group's predicted time to an accuracy per batch size, steps S_min (1 + B_noise / B) at its median step time (McCandlish et al.), and the batch size of least time", cxxopts::value<std::string>())
      ("separate", "compare every log, and every experiment in it, on its own instead of merging logs of the same experiment and pooling experiments of the same settings")
      ("no-plots", "write the report and analysis.json only")
      ("gnuplot", "the gnuplot program to draw with", cxxopts::value<std::string>()->default_value("gnuplot"))
      ("q,quiet", "no summary on the terminal")
      ("json", "print the analysis (what analysis.json holds: per group, every batch size) as JSON on stdout instead of the summary")
      ("h,help", "this help");
  // clang-format on
  options.parse_positional({"logs"});
  return options;
}

// A log as the default --out's analysis.json names it: the last two parts of its path ("a/steps.jsonl"),
// the same whatever directory analyze ran from.
std::string log_key(const std::string& argument) {
  const fs::path file = fs::absolute(log_file_for(argument)).lexically_normal();
  return (file.parent_path().filename() / file.filename()).string();
}

// analysis.json, with the logs as given on the command line and as the default --out's check names them.
Json analysis_json(const Analysis& analysis, const AnalyzeOptions& analyze,
                   const cxxopts::ParseResult& result) {
  Json j = analysis_to_json(analysis, analyze);
  Json arguments = Json::array();
  for (const std::string& log : result["logs"].as<std::vector<std::string>>())
    arguments.push_back(Json{{"given", log}, {"log", log_key(log)}});
  j["arguments"] = arguments;
  return j;
}

// report.md, analysis.json and the plots in out_dir (created where missing); returns what became of the
// plots.
PlotOutcome write_outputs(const Analysis& analysis, const AnalyzeOptions& analyze, const fs::path& out_dir,
                          const cxxopts::ParseResult& result) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    throw UserError(located(out_dir.string(), 0, "cannot be created (" + ec.message() + ")",
                            "choose an --out directory you can write to"));
  }
  PlotOutcome plots;
  if (result.count("no-plots")) {
    plots.skipped_reason = "--no-plots was given.";
    plots.removed = remove_plot_files((out_dir / "plots").string());
  } else {
    plots =
        write_plots(analysis, (out_dir / "plots").string(), PlotOptions{result["gnuplot"].as<std::string>()});
  }
  std::ostringstream report;
  write_report(report, analysis, plots, "plots");
  replace_file((out_dir / "analysis.json").string(), analysis_json(analysis, analyze, result).dump(2) + "\n");
  replace_file((out_dir / "report.md").string(), report.str());
  return plots;
}

// Where the default --out (analysis/ beside the first log) holds an analysis of other logs, this one would
// replace it: `analyze a` then `analyze a b` would lose a's own report. Refused; the same logs again, or an
// analysis that names none (written before it did), are replaced as always.
void refuse_other_analysis(const fs::path& out_dir, const std::vector<std::string>& logs) {
  const fs::path path = out_dir / "analysis.json";
  std::ifstream in(path);
  if (!in) return;
  const Json earlier = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!earlier.is_object() || !earlier.contains("arguments") || !earlier["arguments"].is_array()) return;
  std::vector<std::string> then;
  for (const Json& a : earlier["arguments"]) {
    if (a.is_object() && a.contains("log") && a["log"].is_string())
      then.push_back(a["log"].get<std::string>());
  }
  std::vector<std::string> now;
  for (const std::string& log : logs) now.push_back(log_key(log));
  std::sort(then.begin(), then.end());
  std::sort(now.begin(), now.end());
  if (then == now) return;
  throw UserError(located(
      path.string(), 0,
      "holds the analysis of " + listed(then) + ", which this analysis of " + listed(now) + " would replace",
      "give --out DIR for this one, or remove " + out_dir.string() + " to replace it"));
}

}  // namespace

int run_analyze_command(const std::vector<std::string>& args) {
  cxxopts::Options options = analyze_options();
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help()
              << "\nExamples:\n  batchscope analyze runs/vgg16_jumps\n"
                 "  batchscope analyze runs/h100/steps.jsonl runs/a100/steps.jsonl --out runs/compare\n";
    return 0;
  }
  if (result.count("logs") == 0)
    refuse("analyze needs at least one log", "pass a steps.jsonl or its sweep directory, e.g. batchscope analyze runs/quick");

  AnalyzeOptions analyze;
  analyze.min_samples = static_cast<int>(whole_option(result, "min-samples", 1, limits::kMaxSteps));
  analyze.detector.z_threshold = real_option(result, "threshold", 0, 1e6, /*least_excluded=*/true);
  analyze.detector.min_relative = real_option(result, "min-jump", 0, 1e6) / 100.0;
  analyze.detector.window = static_cast<int>(whole_option(result, "window", 1, 100000));
  analyze.grouping.separate = result.count("separate") > 0;
  if (result.count("sms")) analyze.sms = whole_option(result, "sms", 1, 100000);
  if (result.count("tile")) analyze.tile = tile_option(result["tile"].as<std::string>());
  if (result.count("prices")) analyze.prices = read_prices(result["prices"].as<std::string>());
  if (result.count("price")) analyze.prices.fallback = real_option(result, "price", 0, 1e9, /*least_excluded=*/true);
  if (result.count("peak")) analyze.peaks = read_peak_tables(result["peak"].as<std::vector<std::string>>());
  if (result.count("epoch-samples")) analyze.epoch_samples = whole_option(result, "epoch-samples", 1, int64_t{1} << 40);
  if (result.count("noise-scale"))
    analyze.noise_scale = noise_scale_option(result["noise-scale"].as<std::string>());

  const auto logs = result["logs"].as<std::vector<std::string>>();
  const fs::path out_dir = result.count("out")
                               ? fs::path(result["out"].as<std::string>())
                               : fs::path(log_file_for(logs.front())).parent_path() / "analysis";
  if (!result.count("out")) refuse_other_analysis(out_dir, logs);
  const Analysis analysis = analyze_logs(logs, analyze);

  const PlotOutcome plots = write_outputs(analysis, analyze, out_dir, result);

  for (const std::string& w : analysis.warnings) std::cerr << "batchscope: warning: " << w << "\n";
  for (const std::string& w : plots.warnings) std::cerr << "batchscope: warning: " << w << "\n";
  if (!plots.made) std::cerr << "batchscope: plots skipped: " << plots.skipped_reason << "\n";
  std::ostream& said = result.count("json") ? std::cerr : std::cout;
  if (result.count("json")) {
    // Standard output holds the JSON alone (what analysis.json holds), for a pipe.
    std::cout << analysis_json(analysis, analyze, result).dump(2) << "\n";
  } else if (!result.count("quiet")) {
    write_terminal_summary(std::cout, analysis);
    std::cout << "\n";
  }
  said << "written: " << (out_dir / "report.md").string() << ", " << (out_dir / "analysis.json").string();
  if (plots.made) said << ", " << counted(plots.plots, "plot") << " in " << (out_dir / "plots").string();
  if (!plots.removed.empty()) {
    said << " (removed " << counted(static_cast<long long>(plots.removed.size()), "file")
         << " of plots an earlier analysis drew there)";
  }
  said << "\n";
  return 0;
}

}  // namespace batchscope::app
