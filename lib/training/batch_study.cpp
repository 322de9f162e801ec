#include "lib/training/batch_study.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "lib/analysis/report/plots.h"
#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/common/micro_batches.h"
#include "lib/common/replaced_results.h"
#include "lib/common/words.h"
#include "lib/device/cpu_memory.h"
#include "lib/training/training_parts.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace {

using namespace training_parts;

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100 * share);
  return text;
}

std::string number(const char* format, double value) {
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// The epochs a row's figures are over: to the target where it was reached, else all it ran.
int64_t epochs_counted(const BatchStudyRow& row) {
  return row.outcome.target_epoch ? *row.outcome.target_epoch
                                  : static_cast<int64_t>(row.outcome.epochs.size());
}

// The noise scale at the last epoch counted, where the runs measure it.
const std::optional<NoiseScale>& noise_counted(const BatchStudyRow& row) {
  static const std::optional<NoiseScale> none;
  const int64_t counted = epochs_counted(row);
  return counted > 0 ? row.outcome.epochs[static_cast<std::size_t>(counted - 1)].noise_scale : none;
}

// The steps a row's figures are over: to the evaluation that reached the target (within its epoch where
// the runs evaluate every so many steps), else every step of the epochs counted.
int64_t steps_counted(const BatchStudyRow& row) {
  const int64_t epochs = epochs_counted(row);
  if (epochs == 0) return 0;
  return (epochs - 1) * row.steps_per_epoch + row.outcome.target_step.value_or(row.steps_per_epoch);
}

// The training images of those steps: every batch but an epoch's last is full.
int64_t samples_counted(const BatchStudyRow& row) {
  const int64_t epochs = epochs_counted(row);
  if (epochs == 0) return 0;
  return (epochs - 1) * row.outcome.train_samples +
         (row.outcome.target_step ? *row.outcome.target_step * row.batch_size : row.outcome.train_samples);
}

// Whether a batch of this size runs as micro-batches of the chunk (train --chunk; 0: none).
bool accumulated(int64_t batch, int64_t chunk) { return chunk > 0 && chunk < batch; }

// A batch as the study's micro-batches run it: "4096 (8×512)", "1000 (4×250)"; the size alone where it
// trains whole.
std::string batch_text(int64_t batch, int64_t chunk) {
  std::string text = std::to_string(batch);
  if (!accumulated(batch, chunk)) return text;
  return text + " (" + micro_batch_text(micro_batch_sizes(batch, chunk)) + ")";
}

// S(B) = S_min (1 + B_crit / B) fitted to the steps each batch size took to the target.
std::optional<CriticalBatch> critical_batch_of(const BatchStudy& study) {
  std::vector<std::pair<int64_t, double>> points;
  for (const BatchStudyRow& row : study.rows) {
    if (row.outcome.target_epoch)
      points.emplace_back(row.batch_size, static_cast<double>(steps_counted(row)));
  }
  return fit_critical_batch(points);
}

// The training seconds of those steps.
double seconds_counted(const BatchStudyRow& row) {
  double seconds = 0;
  const int64_t epochs = epochs_counted(row);
  for (int64_t i = 0; i < epochs; ++i) {
    const EpochResult& r = row.outcome.epochs[static_cast<std::size_t>(i)];
    seconds += i + 1 == epochs && row.outcome.target_seconds ? *row.outcome.target_seconds : r.epoch_seconds;
  }
  return seconds;
}

// An epoch's training energy, or up to the evaluation at that step within it; none where not measured.
std::optional<double> epoch_energy(const EpochResult& r, std::optional<int64_t> up_to_step) {
  if (!up_to_step) return r.energy_j;
  for (const StepEvaluation& e : r.evaluations) {
    if (e.step == *up_to_step) return e.training_joules;
  }
  return std::nullopt;
}

// The device's energy over the seconds counted: the epochs' before the target's, then the target epoch's up
// to the evaluation that reached it; none where an epoch counted was not measured. `above_idle_only`: each
// part less its session's idle draw over its seconds, none where an epoch counted had no idle baseline.
std::optional<double> energy_counted(const BatchStudyRow& row, bool above_idle_only = false) {
  const int64_t epochs = epochs_counted(row);
  if (epochs == 0) return std::nullopt;
  double joules = 0;
  for (int64_t i = 0; i < epochs; ++i) {
    const EpochResult& r = row.outcome.epochs[static_cast<std::size_t>(i)];
    const bool target_epoch = i + 1 == epochs;
    std::optional<double> part = epoch_energy(r, target_epoch ? row.outcome.target_step : std::nullopt);
    if (above_idle_only) {
      const bool partial = target_epoch && row.outcome.target_seconds;
      part = above_idle(part, r.idle_power_w, partial ? *row.outcome.target_seconds : r.epoch_seconds);
    }
    if (!part) return std::nullopt;
    joules += *part;
  }
  return joules;
}

// The row that reached the target on the least energy (gross, or above idle); null where none did with
// that energy measured.
const BatchStudyRow* least_energy_to_target(const BatchStudy& study, bool above_idle_only = false) {
  const BatchStudyRow* best = nullptr;
  for (const BatchStudyRow& row : study.rows) {
    if (!row.outcome.target_epoch || !energy_counted(row, above_idle_only)) continue;
    if (best == nullptr || *energy_counted(row, above_idle_only) < *energy_counted(*best, above_idle_only))
      best = &row;
  }
  return best;
}

// Each epoch's running training time: the seconds of the epochs up to and including it.
std::vector<double> running_seconds(const BatchStudyRow& row) {
  std::vector<double> out;
  double seconds = 0;
  for (const EpochResult& r : row.outcome.epochs) out.push_back(seconds += r.epoch_seconds);
  return out;
}

// The row that reached the target in the least training time (or, `by_epochs`, in the fewest epochs,
// the least time breaking ties); null where none reached it.
const BatchStudyRow* first_to_target(const BatchStudy& study, bool by_epochs) {
  const BatchStudyRow* best = nullptr;
  for (const BatchStudyRow& row : study.rows) {
    if (!row.outcome.target_epoch) continue;
    const auto key = [&](const BatchStudyRow& r) {
      return std::make_pair(by_epochs ? static_cast<double>(*r.outcome.target_epoch) : 0.0,
                            *r.seconds_to_target);
    };
    if (best == nullptr || key(row) < key(*best)) best = &row;
  }
  return best;
}

Json study_json(const BatchStudy& study, const BatchStudyOptions& options) {
  Json rows = Json::array();
  for (const BatchStudyRow& row : study.rows) {
    const EpochResult& last = row.outcome.epochs.back();
    const bool reached = row.outcome.target_epoch.has_value();
    // The curve the plot draws: each epoch at its running training time, after the evaluations within it.
    Json curve = Json::array();
    const std::vector<double> seconds = running_seconds(row);
    for (std::size_t i = 0; i < seconds.size(); ++i) {
      const EpochResult& r = row.outcome.epochs[i];
      const double before = seconds[i] - r.epoch_seconds;
      for (const StepEvaluation& e : r.evaluations) {
        curve.push_back({{"epoch", r.epoch},
                         {"step", e.step},
                         {"training_seconds", before + e.training_seconds},
                         {"test_accuracy", e.test.accuracy},
                         {"test_loss", e.test.loss}});
      }
      curve.push_back({{"epoch", r.epoch},
                       {"training_seconds", seconds[i]},
                       {"test_accuracy", r.test.accuracy},
                       {"test_loss", r.test.loss}});
      if (r.noise_scale) curve.back()["noise_scale"] = to_json(*r.noise_scale);
      if (r.peak_memory_bytes) curve.back()["peak_memory_bytes"] = *r.peak_memory_bytes;
      if (r.energy_j) curve.back()["energy_j"] = *r.energy_j;
    }
    rows.push_back(
        {{"batch_size", row.batch_size},
         {"chunk", row.outcome.chunk > 0 ? Json(row.outcome.chunk) : Json()},
         {"lr", row.lr},
         {"run", (fs::path(row.dir) / kJsonlName).string()},
         {"epochs", row.outcome.epochs.size()},
         {"steps_per_epoch", row.steps_per_epoch},
         {"target_epoch", reached ? Json(*row.outcome.target_epoch) : Json()},
         {"diverged_epoch", row.outcome.diverged_epoch ? Json(*row.outcome.diverged_epoch) : Json()},
         {"seconds_to_target", reached ? Json(*row.seconds_to_target) : Json()},
         {"target_step", row.outcome.target_step ? Json(*row.outcome.target_step) : Json()},
         {"steps_to_target", reached ? Json(steps_counted(row)) : Json()},
         {"samples_to_target", reached ? Json(samples_counted(row)) : Json()},
         {"training_seconds", seconds_counted(row)},
         {"energy_to_target_j", reached && energy_counted(row) ? Json(*energy_counted(row)) : Json()},
         {"training_energy_j", energy_counted(row) ? Json(*energy_counted(row)) : Json()},
         {"energy_to_target_above_idle_j",
          reached && energy_counted(row, true) ? Json(*energy_counted(row, true)) : Json()},
         {"training_energy_above_idle_j",
          energy_counted(row, true) ? Json(*energy_counted(row, true)) : Json()},
         {"idle_power_w", last.idle_power_w ? Json(*last.idle_power_w) : Json()},
         {"mean_samples_per_s", row.mean_samples_per_s},
         {"best_test_accuracy", row.best_test_accuracy},
         {"last_test_accuracy", last.test.accuracy},
         {"last_test_loss", last.test.loss},
         {"noise_scale", noise_counted(row) ? Json(to_json(*noise_counted(row))) : Json()},
         {"peak_memory_bytes", row.peak_memory_bytes ? Json(*row.peak_memory_bytes) : Json()},
         {"curve", curve}});
  }
  const BatchStudyRow* fastest = first_to_target(study, false);
  const BatchStudyRow* fewest = first_to_target(study, true);
  const BatchStudyRow* thriftiest = least_energy_to_target(study);
  const BatchStudyRow* thriftiest_above_idle = least_energy_to_target(study, true);
  const std::optional<CriticalBatch> critical = critical_batch_of(study);
  const Json critical_json = critical ? Json{{"min_steps", critical->min_steps},
                                             {"critical_batch", critical->critical_batch},
                                             {"batch_sizes", critical->points},
                                             {"model",
                                              "steps to target = min_steps (1 + critical_batch / batch), "
                                              "least squares in 1/batch, each size "
                                              "weighed by its relative error"}}
                                      : Json();
  return {{"model", options.training.model},
          {"data", options.training.data},
          {"optimizer", to_string(options.training.optimizer.kind)},
          {"lr", options.training.optimizer.lr},
          {"precision", to_string(study.precision)},
          {"augment", data::to_string(study.augment)},
          {"channels_last", study.channels_last},
          {"chunk", study.chunk_auto  ? Json("auto")
                    : study.chunk > 0 ? Json(study.chunk)
                                      : Json()},
          {"lr_schedule", study.lr_schedule.constant() ? Json() : Json(lr_schedule_json(study.lr_schedule))},
          {"loss_scale", to_string(study.loss_scale)},
          {"reference_batch", study.reference_batch},
          {"lr_scaling", to_string(study.lr_scaling)},
          {"most_epochs", options.training.epochs},
          {"target_accuracy", study.target_accuracy ? Json(*study.target_accuracy) : Json()},
          {"rows", rows},
          {"fastest_to_target", fastest ? Json(fastest->batch_size) : Json()},
          {"fewest_epochs_to_target", fewest ? Json(fewest->batch_size) : Json()},
          {"least_energy_to_target", thriftiest ? Json(thriftiest->batch_size) : Json()},
          {"least_energy_to_target_above_idle",
           thriftiest_above_idle ? Json(thriftiest_above_idle->batch_size) : Json()},
          {"critical_batch", critical_json}};
}

}  // namespace

std::optional<LrScaling> lr_scaling_from_string(const std::string& text) {
  if (text == "none") return LrScaling::None;
  if (text == "linear") return LrScaling::Linear;
  if (text == "sqrt") return LrScaling::Sqrt;
  return std::nullopt;
}

const char* to_string(LrScaling scaling) {
  switch (scaling) {
    case LrScaling::Linear:
      return "linear";
    case LrScaling::Sqrt:
      return "sqrt";
    case LrScaling::None:
      break;
  }
  return "none";
}

double scaled_lr(double lr, int64_t batch_size, int64_t reference_batch, LrScaling scaling) {
  const double ratio = static_cast<double>(batch_size) / static_cast<double>(reference_batch);
  switch (scaling) {
    case LrScaling::Linear:
      return lr * ratio;
    case LrScaling::Sqrt:
      return lr * std::sqrt(ratio);
    case LrScaling::None:
      break;
  }
  return lr;
}

BatchStudy run_batch_study(const BatchStudyOptions& options) {
  if (options.batch_sizes.empty()) {
    throw UserError(located("command line", 0, "no batch size is given", "give e.g. --batch 32,128,512"));
  }
  check_options(options.training);
  BatchStudy study;
  study.target_accuracy = options.training.target_accuracy;
  study.lr_scaling = options.lr_scaling;
  study.precision = options.training.precision;
  study.loss_scale = options.training.loss_scale;
  study.augment = augmentation_of(options.training);
  study.lr_schedule = options.training.lr_schedule;
  study.channels_last = options.training.channels_last;
  study.eval_every = options.training.eval_every;
  study.chunk = options.training.chunk;
  study.chunk_auto = options.training.chunk_auto;
  study.lr_schedule.warmup_from = options.training.optimizer.lr;
  study.reference_batch = options.reference_batch > 0
                              ? options.reference_batch
                              : *std::min_element(options.batch_sizes.begin(), options.batch_sizes.end());
  const std::string device = resolve_training_device(options.training.device);
  build_network(options.training.model, data::kind_of_data(options.training.data));
  if (options.training.force) {
    // The study it replaces, every size's run and the study's files, is kept whole until this one is
    // complete (each run's own --force would drop its old run as soon as that size completed).
    const fs::path out(options.training.out_dir);
    if (const std::optional<std::string> kept = set_aside_replaced(
            out.string(),
            [](const std::string& name) {
              return name.rfind("batch-", 0) == 0 || name.rfind("time_to_accuracy", 0) == 0;
            },
            [](const std::string& dir) { return fs::exists(fs::path(dir) / "time_to_accuracy.json"); })) {
      spdlog::info("--force: the study this one replaces is kept in {} until this one is complete", *kept);
    }
  }
  std::vector<TrainingOptions> runs;
  std::vector<int64_t> seen;
  for (const int64_t batch : options.batch_sizes) {
    if (std::find(seen.begin(), seen.end(), batch) != seen.end()) continue;
    seen.push_back(batch);
    TrainingOptions o = options.training;
    o.batch_size = batch;
    o.optimizer.lr =
        scaled_lr(options.training.optimizer.lr, batch, study.reference_batch, options.lr_scaling);
    o.lr_schedule = study.lr_schedule;  // a warm-up from the reference batch's rate to this size's
    o.out_dir = (fs::path(options.training.out_dir) / ("batch-" + std::to_string(batch))).string();
    o.reuse_complete = true;
    o.force = false;  // the study's --force set the old study aside above
    check_options(o);
    check_output_dir(o);
    runs.push_back(o);
  }
  const LoadedData data =
      load_data(options.training.data, options.training.limit_train, options.training.limit_test);
  const int64_t largest = *std::max_element(seen.begin(), seen.end());
  if (largest > data.splits.train.size()) {
    throw UserError(located(data.location.directory, 0,
                            "--batch " + std::to_string(largest) + " is larger than the " +
                                std::to_string(data.splits.train.size()) + " training images",
                            "give smaller batch sizes or a larger --limit-train"));
  }
  // Before anything is trained: a run of other options is refused, not found after the sizes before it.
  for (const TrainingOptions& o : runs) check_earlier_options(o, device, data);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const TrainingOptions& o = runs[i];
    if (options.on_batch) options.on_batch(o.batch_size, o.optimizer.lr, o.out_dir);
    BatchStudyRow row;
    row.batch_size = o.batch_size;
    row.lr = o.optimizer.lr;
    row.dir = o.out_dir;
    row.outcome = train_on(o, device, data);
    // The device's idle draw, measured once: the later sizes take this run's baseline.
    if (row.outcome.idle) {
      for (std::size_t j = i + 1; j < runs.size(); ++j) {
        if (!runs[j].known_idle) runs[j].known_idle = row.outcome.idle;
      }
    }
    // --chunk auto: where this size did not fit whole, no larger micro-batch fits beside a larger batch,
    // and the later, larger sizes' searches start from the largest that fitted here.
    const std::optional<ChunkSearch>& search = row.outcome.chunk_search;
    if (search && search->chunk > 0) {
      for (std::size_t j = i + 1; j < runs.size(); ++j) {
        if (runs[j].batch_size > o.batch_size &&
            (runs[j].chunk_fits == 0 || runs[j].chunk_fits > search->largest_fitting)) {
          runs[j].chunk_fits = search->largest_fitting;
          runs[j].chunk_fits_batch = o.batch_size;
        }
      }
    }
    row.steps_per_epoch = (row.outcome.train_samples + o.batch_size - 1) / o.batch_size;
    double seconds = 0;
    for (const EpochResult& r : row.outcome.epochs) {
      row.best_test_accuracy = std::max(row.best_test_accuracy, r.test.accuracy);
      seconds += r.epoch_seconds;
    }
    row.mean_samples_per_s = seconds > 0 ? static_cast<double>(row.outcome.train_samples) *
                                               static_cast<double>(row.outcome.epochs.size()) / seconds
                                         : 0;
    if (row.outcome.target_epoch) row.seconds_to_target = seconds_counted(row);
    for (int64_t e = 0; e < epochs_counted(row); ++e) {
      const std::optional<int64_t>& peak = row.outcome.epochs[static_cast<std::size_t>(e)].peak_memory_bytes;
      if (peak) row.peak_memory_bytes = std::max(row.peak_memory_bytes.value_or(0), *peak);
    }
    const bool stopped =
        row.outcome.stopped || (o.stop_requested && o.stop_requested() && i + 1 < runs.size());
    study.rows.push_back(std::move(row));
    if (stopped) {
      study.stopped = true;
      for (std::size_t j = i + 1; j < runs.size(); ++j) study.not_started.push_back(runs[j].batch_size);
      return study;
    }
  }
  const fs::path out(options.training.out_dir);
  study.json_path = (out / "time_to_accuracy.json").string();
  study.markdown_path = (out / "time_to_accuracy.md").string();
  replace_file(study.json_path, study_json(study, options).dump(2) + "\n");
  replace_file(study.markdown_path, format_batch_study(study));
  const PlotOutcome plot = draw_plots({time_to_accuracy_plot(study)}, out.string());
  for (const std::string& file : plot.files) study.plot_files.push_back((out / file).string());
  study.plot_skipped = plot.skipped_reason;
  study.plot_warnings = plot.warnings;
  const DroppedReplaced dropped = drop_replaced(out.string());
  if (!dropped.left.empty())
    spdlog::warn("the study this one replaced is kept in {}, which could not be removed: remove it by hand",
                 dropped.left);
  return study;
}

PlotScript time_to_accuracy_plot(const BatchStudy& study) {
  PlotScript plot{"time_to_accuracy", "", ""};
  std::vector<std::string> items;
  double shortest = 0, longest = 0;
  for (const BatchStudyRow& row : study.rows) {
    const std::string label =
        "batch " + std::to_string(row.batch_size) + " (lr " + number("%.4g", row.lr) + ")";
    if (!items.empty()) plot.data += "\n\n";  // two blank lines start a new gnuplot index block
    plot.data += "# " + label + "\n# training_s test_accuracy_pct epoch\n";
    const std::vector<double> running = running_seconds(row);
    for (std::size_t i = 0; i < running.size(); ++i) {
      const EpochResult& r = row.outcome.epochs[i];
      // The evaluations within the epoch first (their epoch column a fraction of it), then its end.
      std::vector<double> points;  // their running training seconds
      for (const StepEvaluation& e : r.evaluations) {
        points.push_back(running[i] - r.epoch_seconds + e.training_seconds);
        plot.data +=
            gp_number(points.back()) + " " + gp_number(100 * e.test.accuracy) + " " +
            gp_number(r.epoch - 1 + static_cast<double>(e.step) / static_cast<double>(row.steps_per_epoch),
                      4) +
            "\n";
      }
      points.push_back(running[i]);
      plot.data += gp_number(running[i]) + " " + gp_number(100 * r.test.accuracy) + " " +
                   std::to_string(r.epoch) + "\n";
      for (const double seconds : points) {
        if (seconds > 0) shortest = shortest > 0 ? std::min(shortest, seconds) : seconds;
        longest = std::max(longest, seconds);
      }
    }
    items.push_back((items.empty() ? gp_string(plot.name + ".dat") : std::string("''")) + " index " +
                    std::to_string(items.size()) + " using 1:2 with linespoints lw 2 pt 7 ps 0.6 title " +
                    gp_string(label));
  }
  if (study.target_accuracy) {
    items.push_back(gp_number(100 * *study.target_accuracy) +
                    " with lines dt 2 lw 1.5 lc rgb '#555555' title " +
                    gp_string("target " + percent(*study.target_accuracy)));
  }
  std::string& body = plot.body;
  body +=
      "set title " +
      gp_string(std::string("Test accuracy against training time per batch size (learning rate scaled ") +
                to_string(study.lr_scaling) + " from batch " + std::to_string(study.reference_batch) + ")") +
      "\n";
  body += "set xlabel 'training time (s, evaluation excluded)'\n";
  body += "set ylabel 'test accuracy (%)'\n";
  body += "set yrange [*:100]\n";  // no room above what an accuracy can be
  body += "set key below\n";       // gnuplot leaves the key the room it needs below the axis
  // Small batches reach the target in seconds where large ones take minutes: a log axis past 50x.
  if (shortest > 0 && longest / shortest > 50) {
    body +=
        "set logscale x\nset xrange [" + gp_number(shortest / 1.3) + ":" + gp_number(longest * 1.3) + "]\n";
  }
  body += join_plot(items);
  return plot;
}

std::string format_batch_study(const BatchStudy& study) {
  const bool target = study.target_accuracy.has_value();
  std::string text;
  if (target) {
    text += "Time to " + percent(*study.target_accuracy) + " test accuracy per batch size";
  } else {
    text += "Training per batch size";
  }
  if (study.stopped) text += ", so far";
  text += " (learning rate scaled " + std::string(to_string(study.lr_scaling)) + " from batch " +
          std::to_string(study.reference_batch);
  if (study.precision != Precision::FP32) {
    text += "; " + to_string(study.precision) + " under autocast" +
            (study.loss_scale == LossScale::Dynamic ? ", loss scaled" : "");
  } else if (study.loss_scale == LossScale::Dynamic) {
    text += "; loss scaled";
  }
  if (!study.lr_schedule.constant()) text += "; learning rate " + describe(study.lr_schedule);
  if (study.augment.any()) text += "; training images augmented " + data::to_string(study.augment);
  if (study.channels_last) text += "; channels-last";
  if (std::any_of(study.rows.begin(), study.rows.end(),
                  [&](const BatchStudyRow& row) { return row.outcome.chunk > 0; })) {
    text += study.chunk_auto
                ? "; batches that did not fit accumulated in the largest even micro-batches that "
                  "did (--chunk auto)"
                : "; batches above " + std::to_string(study.chunk) +
                      " accumulated in micro-batches of at most " + std::to_string(study.chunk);
  }
  if (study.eval_every > 0)
    text += "; the test split evaluated every " + std::to_string(study.eval_every) + " steps too";
  text += "; seconds are the training epochs', evaluation excluded)\n\n";
  // Where the runs measure it: the gradient noise scale at the last epoch counted.
  const bool noise = std::any_of(study.rows.begin(), study.rows.end(),
                                 [](const BatchStudyRow& row) { return noise_counted(row).has_value(); });
  // Where the runs' records have it: the most memory each held while it trained.
  const bool memory = std::any_of(study.rows.begin(), study.rows.end(),
                                  [](const BatchStudyRow& row) { return row.peak_memory_bytes.has_value(); });
  text += target ? "| batch | lr | epochs to target | steps to target | seconds to target | samples/s | best "
                   "test accuracy |"
                 : "| batch | lr | epochs | steps | seconds | samples/s | best test accuracy |";
  // Where the runs measured it: the device's energy over the training counted.
  const bool energy = std::any_of(study.rows.begin(), study.rows.end(),
                                  [](const BatchStudyRow& row) { return energy_counted(row).has_value(); });
  if (memory) text += " peak memory |";
  if (energy) text += target ? " energy to target |" : " energy |";
  if (noise) text += " B_noise |";
  text += "\n|---:|---:|---:|---:|---:|---:|---:|" + std::string(memory ? "---:|" : "") +
          (energy ? "---:|" : "") + (noise ? "---:|" : "") + "\n";
  for (const BatchStudyRow& row : study.rows) {
    const int64_t epochs = epochs_counted(row);
    const bool missed = target && !row.outcome.target_epoch;
    text += "| " + batch_text(row.batch_size, row.outcome.chunk) + " | " + number("%.4g", row.lr) + " | ";
    if (row.outcome.stopped) {
      text += "stopped after " + std::to_string(row.outcome.epochs.size()) + " | — | — | ";
    } else if (row.outcome.diverged_epoch) {
      text += "diverged in epoch " + std::to_string(*row.outcome.diverged_epoch) + " | — | — | ";
    } else if (missed) {
      text += "not in " + std::to_string(row.outcome.epochs.size()) + " | — | — | ";
    } else {
      text += std::to_string(epochs) + " | " + std::to_string(steps_counted(row)) + " | " +
              number("%.1f", seconds_counted(row)) + " | ";
    }
    text += number("%.0f", row.mean_samples_per_s) + " | " + percent(row.best_test_accuracy) + " |";
    if (memory)
      text += " " + (row.peak_memory_bytes ? format_memory_size(*row.peak_memory_bytes) : "—") + " |";
    if (energy) {
      const std::optional<double> joules = energy_counted(row);
      text +=
          " " + (joules && !missed && !row.outcome.stopped ? energy_text(*joules) : std::string("—")) + " |";
    }
    if (noise) {
      const std::optional<NoiseScale>& n = noise_counted(row);
      text +=
          " " + (n ? noise_scale_text(*n).substr(std::string("B_noise ").size()) : std::string("—")) + " |";
    }
    text += "\n";
  }
  text += "\n";
  if (study.stopped) {
    const BatchStudyRow& last = study.rows.back();
    const std::string left = joined_numbers(study.not_started, ", ");
    text += "Stopped";
    if (last.outcome.stopped) {
      text += " in batch " + std::to_string(last.batch_size) + "'s run after epoch " +
              std::to_string(last.outcome.epochs.size());
    }
    text += (left.empty() ? std::string() : "; not started: batch " + left) +
            ". The same command goes on from there and writes the table.\n";
    return text;
  }
  if (target) {
    const BatchStudyRow* fastest = first_to_target(study, false);
    const BatchStudyRow* fewest = first_to_target(study, true);
    if (fastest == nullptr) {
      text += "No batch size reached " + percent(*study.target_accuracy) +
              " within its epochs: give more --epochs, another --lr or --lr-scaling.\n";
    } else {
      text += "Fastest to " + percent(*study.target_accuracy) + ": batch " +
              std::to_string(fastest->batch_size) + ", " + number("%.1f", *fastest->seconds_to_target) +
              " s of training in " + std::to_string(*fastest->outcome.target_epoch) + " epoch(s)" +
              (fastest->outcome.target_step
                   ? " (" + std::to_string(steps_counted(*fastest)) + " steps, evaluated every " +
                         std::to_string(study.eval_every) + ")"
                   : std::string()) +
              ".";
      if (fewest != fastest) {
        text += " Fewest epochs: batch " + std::to_string(fewest->batch_size) + ", " +
                std::to_string(*fewest->outcome.target_epoch) + " epoch(s) in " +
                number("%.1f", *fewest->seconds_to_target) + " s.";
      }
      if (const BatchStudyRow* thriftiest = least_energy_to_target(study)) {
        text += " Least energy: batch " + std::to_string(thriftiest->batch_size) + ", " +
                energy_text(*energy_counted(*thriftiest));
        if (thriftiest != fastest && energy_counted(*fastest)) {
          text += " (the fastest took " + energy_text(*energy_counted(*fastest)) + ")";
        }
        text += ".";
      }
      if (const BatchStudyRow* thriftiest = least_energy_to_target(study, true)) {
        text += " Above the idle draw (" + number("%.1f", *thriftiest->outcome.epochs.front().idle_power_w) +
                " W): batch " + std::to_string(thriftiest->batch_size) + ", " +
                energy_text(*energy_counted(*thriftiest, true));
        if (thriftiest != fastest && energy_counted(*fastest, true)) {
          text += " (the fastest " + energy_text(*energy_counted(*fastest, true)) + ")";
        }
        text += ".";
      }
      text += "\n";
      if (const std::optional<CriticalBatch> critical = critical_batch_of(study)) {
        text +=
            "\nSteps to target fit S_min (1 + B_crit / B) (McCandlish et al.) with S_min " +
            number("%.0f", critical->min_steps) + " and B_crit " + number("%.0f", critical->critical_batch) +
            " (" + std::to_string(critical->points) + " batch sizes; the steps are " +
            (study.eval_every > 0 ? "to the first evaluation every " + std::to_string(study.eval_every) +
                                        " steps that reached it"
                                  : std::string("whole epochs'")) +
            "): below B_crit a larger batch takes about "
            "proportionally fewer steps, above it hardly fewer." +
            (noise ? " The gradient noise scale B_noise, which the paper finds near B_crit, is in the table."
                   : "") +
            "\n";
      }
    }
  } else {
    const auto best = std::max_element(
        study.rows.begin(), study.rows.end(),
        [](const auto& a, const auto& b) { return a.best_test_accuracy < b.best_test_accuracy; });
    text += "Highest test accuracy: batch " + std::to_string(best->batch_size) + ", " +
            percent(best->best_test_accuracy) +
            ". Give --target-accuracy to time each batch size to one accuracy.\n";
  }
  return text;
}

}  // namespace batchscope
