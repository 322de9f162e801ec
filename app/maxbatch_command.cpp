#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/config/config.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/records/maxbatch_records.h"
#include "lib/records/records.h"
#include "lib/sweep/kept_search.h"
#include "lib/sweep/max_batch.h"
#include "lib/sweep/sweep_runner.h"
#include "models/registry.h"

namespace batchscope::app {
namespace {

constexpr int kNothingFits = 3;
// What describes the experiment whose largest batch size is searched (the search picks the sizes).
const std::vector<ExperimentOption> kMaxbatchOptions = {
    ExperimentOption::Model,     ExperimentOption::Input,         ExperimentOption::Classes,
    ExperimentOption::SeqLen,    ExperimentOption::InputKind,     ExperimentOption::Vocab,
    ExperimentOption::Phase,     ExperimentOption::Precision,     ExperimentOption::Optimizer,
    ExperimentOption::ChannelsLast,                               ExperimentOption::Device,
    ExperimentOption::LossScale, ExperimentOption::LossScaleInit, ExperimentOption::LossScaleGrowthInterval,
    ExperimentOption::Foreach};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

std::string describe_try(const MaxBatchTry& t) {
  const std::string steps = std::to_string(t.steps) + (t.steps == 1 ? " step" : " steps");
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f s", t.seconds);
  const std::string when = t.earlier ? ", in an earlier session" : "";
  if (!t.fits) {
    return "try batch " + std::to_string(t.batch_size) + ": out of memory (" + steps + ", " + seconds + when +
           ")";
  }
  std::string text = "try batch " + std::to_string(t.batch_size) + ": fits (" + steps + ", " + seconds;
  if (t.peak_memory_bytes) text += ", peak " + format_memory_size(*t.peak_memory_bytes);
  return text + when + ")";
}

// "a full train step of vgg16 (3x224x224, fp16, loss scaled, foreach optimizer) on cpu within 2.00 GiB":
// the loss scaler's state and the multi-tensor step's temporaries take memory too.
std::string describe_workload(const ExperimentConfig& e, const MaxBatchResult& result) {
  std::string text = e.phase == Phase::Train ? "a full train step" : "an inference step";
  text += " of " + e.model + " (" + shape_text(e.input_shape) + ", " + to_string(e.precision);
  if (e.phase == Phase::Train && e.loss_scale == LossScale::Dynamic) text += ", loss scaled";
  if (e.phase == Phase::Train && e.optimizer.foreach.value_or(false)) text += ", foreach optimizer";
  text += ") on " + e.device;
  // How much fits on a GPU depends on how its caching allocator is set.
  if (e.device.rfind("cuda", 0) == 0) {
    for (const auto& [name, value] : cuda_allocator_environment()) text += " with " + name + "=" + value;
  }
  char share[32];
  std::snprintf(share, sizeof share, "%g%%", 100 * result.margin);
  // The CPU's limit is the one searched under, the margin already taken off; a GPU's cap is the memory
  // before its margin.
  if (result.cpu_memory_limit) {
    text += " within " + format_memory_size(*result.cpu_memory_limit);
    if (result.margin > 0) {
      const auto whole =
          static_cast<int64_t>(static_cast<double>(*result.cpu_memory_limit) / (1 - result.margin));
      text += " (" + format_memory_size(whole) + " less a " + share + " margin)";
    }
    return text;
  }
  if (result.gpu_memory_limit)
    text += " within " + format_memory_size(*result.gpu_memory_limit) + " of its memory";
  if (result.margin > 0)
    text += std::string(result.gpu_memory_limit ? " less" : ", leaving") + " a " + share + " margin";
  return text;
}

std::string answer_sentence(const ExperimentConfig& e, const MaxBatchResult& result) {
  if (!result.max_batch) {
    if (result.tries.empty())
      return "no batch size runs " + describe_workload(e, result) + ": " + result.error;
    return "not even batch size " + std::to_string(result.smallest) + " runs " +
           describe_workload(e, result) +
           (result.smallest > 1
                ? " (" + e.model + " trains from " + std::to_string(result.smallest) + " samples: batch norm)"
                : std::string()) +
           ": " + result.error;
  }
  const std::string confirmed = "confirmed with " + counted(result.confirm_steps, "step");
  std::string text = "largest batch size that runs " + describe_workload(e, result) + ": ";
  if (result.hit_upper_bound) {
    return text + "at least " + std::to_string(*result.max_batch) + " (the upper bound, " + confirmed +
           "; raise --upper to search further)";
  }
  text += std::to_string(*result.max_batch) + " (" + confirmed;
  if (result.first_failure) {
    text += "; " + std::to_string(*result.first_failure) + " ran out of memory";
    for (const MaxBatchTry& t : result.tries) {
      if (t.batch_size == *result.first_failure && !t.fits && t.stage == TryStage::Confirm) {
        text += " within " + std::to_string(t.steps) + " steps";
        break;
      }
    }
    if (result.stopped_by == "granularity" || result.stopped_by == "tolerance" || result.stopped_by == "try limit") {
      text += "; the search stopped at its " + result.stopped_by + ", so sizes " +
              std::to_string(*result.max_batch + 1) + " to " + std::to_string(*result.first_failure - 1) +
              " were not tried";
    }
  } else if (result.stopped_by == "try limit") {
    text += "; the try limit stopped the growth, so larger sizes were not tried";
  }
  text += ", " + counted(static_cast<long long>(result.tries.size()), "try", "tries");
  if (result.earlier_tries > 0)
    text += ", " + std::to_string(result.earlier_tries) + " of them in an earlier session";
  return text + ")";
}

// The stopped search at the end of --out that this command goes on with, or none to start anew. On the
// CPU without --memory-limit the search keeps the limit it began with. Refuses a stopped search of another
// experiment or other options, and tries that this search would not make, naming the line. A
// half-written last line is cut once the file is to be appended to.
std::optional<StoppedSearch> search_to_resume(const std::string& path, const cxxopts::ParseResult& args,
                                              const ExperimentConfig& e, MaxBatchOptions& search,
                                              const std::string& command) {
  if (args.count("restart")) {
    const SearchLog log = read_search_log(path);
    if (log.stopped) {
      spdlog::info("{} ends with a stopped search ({}); --restart: a new search starts after it", path,
                   counted(static_cast<long long>(log.stopped->tries.size()), "try", "tries"));
    }
    if (log.truncated_tail) std::filesystem::resize_file(path, log.complete_bytes);
    return std::nullopt;
  }
  EarlierSearch earlier = find_earlier_search(path, e, search, command, !args.count("memory-limit"));
  const auto tries = [&] {
    return counted(static_cast<long long>(earlier.stopped.tries.size()), "try", "tries");
  };
  switch (earlier.state) {
    case EarlierSearch::State::None:
    case EarlierSearch::State::Finished:
      break;
    case EarlierSearch::State::Unopened:
      spdlog::warn(
          "{} ends with {} that no maxbatch_search record opens (an older batchscope wrote them): a new "
          "search starts after them",
          path, tries());
      break;
    case EarlierSearch::State::Different:
      throw UserError(
          located(path, earlier.line,
                  "ends with a stopped search of another experiment or other options (" + earlier.why + ")",
                  "run the command that began it to finish it, choose another --out, or pass --restart "
                  "to start a new search after it"));
    case EarlierSearch::State::OtherTries:
      throw UserError(located(path, earlier.line,
                              "holds tries that this search does not make (" + earlier.why +
                                  "): another version of batchscope began it",
                              "choose another --out, or pass --restart to start a new search after it"));
    case EarlierSearch::State::Stopped:
      if (earlier.options.cpu_memory_limit != search.cpu_memory_limit) {
        spdlog::info("going on within {}, the limit the stopped search began with",
                     format_memory_size(*earlier.options.cpu_memory_limit));
      }
      search = earlier.options;
      cut_truncated_tail(path, earlier);
      return std::move(earlier.stopped);
  }
  cut_truncated_tail(path, earlier);
  return std::nullopt;
}

// The experiment the options describe, with its device resolved for this machine, through the
// sweep's own checks (so that the same options mean the same here as there).
ExperimentConfig experiment_from(const cxxopts::ParseResult& result) {
  model_option(result);
  SweepOverrides o;
  read_experiment_options(result, kMaxbatchOptions, o);
  // The search picks its own sizes from --start: the experiment's checks see that one.
  o.batch = std::to_string(whole_option(result, "start", 1, limits::kMaxBatchSize));
  SweepConfig config = sweep_from_overrides(o);
  config.experiments.front().origins["batch"] = {"command line", 0, "--start"};
  return resolve_for_machine(config).experiments.front();
}

// On the CPU without --memory-limit, the search runs within 90% of the memory available now.
MaxBatchOptions search_options(const cxxopts::ParseResult& result, const ExperimentConfig& e) {
  const torch::Device device(e.device);
  MaxBatchOptions search;
  search.upper_bound = whole_option(result, "upper", 1, limits::kMaxBatchSize);
  search.start = whole_option(result, "start", 1, limits::kMaxBatchSize);
  search.confirm_steps = static_cast<int>(whole_option(result, "confirm", 1, limits::kMaxSteps));
  search.granularity = whole_option(result, "granularity", 1, limits::kMaxBatchSize);
  search.tolerance = percent_option(result, "tolerance", 99);
  search.max_tries = static_cast<int>(whole_option(result, "max-tries", 0, 1000));
  if (search.max_tries == 1) refuse("--max-tries 1 leaves no try to bisect with", "give 2 or more, or 0 for no limit");
  search.margin = percent_option(result, "margin", 90);
  if (search.upper_bound < search.start) {
    refuse(
        "--upper " + std::to_string(search.upper_bound) + " is below --start " + std::to_string(search.start),
        "give an upper bound at least as large as the start");
  }
  if (result.count("memory-limit")) {
    const std::string text = result["memory-limit"].as<std::string>();
    if (device.is_cuda()) {
      // What fits on a GPU of that much memory: the caching allocator is capped there.
      search.gpu_memory_limit = parse_gpu_memory_limit(text, device.has_index() ? device.index() : 0);
    } else {
      search.cpu_memory_limit = parse_memory_limit(text);
    }
  } else if (device.is_cpu()) {
    search.cpu_memory_limit = default_cpu_memory_limit();
    if (!search.cpu_memory_limit) {
      refuse(
          "the memory available on this machine cannot be read, and nothing else stops the search on the CPU",
          "give a limit, e.g. --memory-limit 8GiB");
    }
    spdlog::info("searching within {}, 90% of the memory available now (--memory-limit to choose)",
                 format_memory_size(*search.cpu_memory_limit));
  }
  return search;
}

}  // namespace

int run_maxbatch_command(const std::vector<std::string>& args) {
  cxxopts::Options options(
      "batchscope maxbatch",
      "Find the largest batch size that runs a full training (or inference) step on a device: grow by\n"
      "doubling until a size runs out of memory, bisect, then run the answer --confirm steps in a row\n"
      "(where they fail, search on below with --confirm steps a try).\n"
      "On the CPU, LibTorch's tensor memory is counted and limited by --memory-limit (default: 90% of\n"
      "the memory available); memory that BLAS or oneDNN allocate themselves is not counted. On CUDA the\n"
      "GPU's own memory is the limit, or --memory-limit caps LibTorch's caching allocator at less (what\n"
      "fits on a GPU of that much memory, less its CUDA context).");
  add_experiment_options(options, kMaxbatchOptions);
  // clang-format off
  options.add_options()
      ("memory-limit", "the limit on LibTorch's memory, e.g. 2GiB, 512MiB, 4GB: on the CPU its counted tensors, on a GPU its caching allocator", cxxopts::value<std::string>())
      ("upper", "the largest batch size tried", cxxopts::value<std::string>()->default_value("65536"))
      ("start", "the first batch size tried", cxxopts::value<std::string>()->default_value("1"))
      ("confirm", "steps in a row the answer must run", cxxopts::value<std::string>()->default_value("3"))
      ("granularity", "stop bisecting once the size that fit and the one that did not are this close; the tries fall on its multiples", cxxopts::value<std::string>()->default_value("1"))
      ("tolerance", "stop bisecting once they are within this share of the size that did not fit, e.g. 5%", cxxopts::value<std::string>()->default_value("0%"))
      ("max-tries", "the most tries growing and bisecting may take before the answer is confirmed; 0: no limit", cxxopts::value<std::string>()->default_value("0"))
      ("margin", "leave this share of the memory free: the largest size that fits in the rest, e.g. 10%", cxxopts::value<std::string>()->default_value("0%"))
      ("json", "print the result as JSON")
      ("o,out", "append a record per try and the result to this JSON-lines file; where it ends with a stopped search of the same experiment and options, go on from its tries", cxxopts::value<std::string>())
      ("restart", "with --out: start a new search even where the file ends with a stopped one (kept as it is)")
      ("q,quiet", "no line per try")
      ("h,help", "this help");
  // clang-format on
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout
        << options.help()
        << "\nExit codes: 0 found (or at least --upper), 3 not even the smallest batch size fits, 2 bad "
           "input,\n"
           "130 stopped by Ctrl-C or SIGTERM after the running try (the same command with --out goes on).\n"
           "Example: batchscope maxbatch --model vgg16 --device cpu --memory-limit 2GiB\n";
    return 0;
  }
  if (result.count("quiet")) spdlog::set_level(spdlog::level::warn);
  if (result.count("restart") && !result.count("out")) {
    refuse("--restart applies to a search kept with --out", "give --out FILE, or leave --restart out");
  }
  const ExperimentConfig e = experiment_from(result);
  const torch::Device device(e.device);
  MaxBatchOptions search = search_options(result, e);

  const std::string command = command_text("maxbatch", args);
  SearchSession session;
  std::optional<JsonlWriter> out;
  if (result.count("out")) {
    const std::string path = result["out"].as<std::string>();
    check_own_records(path, {record::kMaxBatchSearch, record::kMaxBatchTry, record::kMaxBatch}, "maxbatch");
    if (std::optional<StoppedSearch> stopped = search_to_resume(path, result, e, search, command)) {
      session.earlier_tries = std::move(stopped->tries);
      spdlog::info("going on with the search stopped in {} after {}", path,
                   counted(static_cast<long long>(session.earlier_tries.size()), "try", "tries"));
    }
    out.emplace(path);
    out->add(search_opening_record(e, search, command, static_cast<int>(session.earlier_tries.size())));
    out->flush();
  }
  session.stop_requested = [] { return stop_requested().load(); };
  stop_on_signals("this try");

  MaxBatchResult found;
  try {
    found = run_max_batch(
        e, device, search,
        [&](const MaxBatchTry& t) {
          spdlog::info("{}", describe_try(t));
          if (out && !t.earlier) {
            out->add(search_try_record(e, t));
            out->flush();
          }
        },
        session);
  } catch (const MaxBatchStopped& stopped) {
    spdlog::warn("stopped after {}{}", counted(stopped.tries, "try", "tries"),
                 out ? "; run the same command to go on from them" : "; without --out nothing was kept");
    return kExitStopped;
  }
  if (out) {
    out->add(search_result_record(e, found, command));
    out->flush();
  }
  if (result.count("json")) {
    Json printed = search_result_record(e, found, command);
    Json tries = Json::array();
    for (const MaxBatchTry& t : found.tries) tries.push_back(to_json(t));
    printed["tries"] = tries;
    printed["answer"] = answer_sentence(e, found);
    std::cout << printed.dump(2) << "\n";
  } else {
    std::cout << answer_sentence(e, found) << "\n";
  }
  return found.max_batch ? 0 : kNothingFits;
}

}  // namespace batchscope::app
