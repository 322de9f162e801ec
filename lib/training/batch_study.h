#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/report/gnuplot_script.h"
#include "lib/training/training.h"

namespace batchscope {

// What a batch size costs to reach an accuracy: the same training at several batch sizes, each until its
// test accuracy reaches a target (or for the most epochs), with the learning rate scaled from the one
// given at a reference batch size.

enum class LrScaling { None, Linear, Sqrt };

// "none", "linear" or "sqrt"; nullopt for anything else.
std::optional<LrScaling> lr_scaling_from_string(const std::string& text);
const char* to_string(LrScaling scaling);

// lr at batch_size, from the learning rate at reference_batch: the same (none), times
// batch_size / reference_batch (linear, the rule of large-batch SGD), or times its square root (sqrt,
// the rule often used for Adam).
double scaled_lr(double lr, int64_t batch_size, int64_t reference_batch, LrScaling scaling);

struct BatchStudyOptions {
  // Everything but the batch size, the learning rate and the output directory, which each run gets
  // from the study; `training.optimizer.lr` is the learning rate at reference_batch.
  TrainingOptions training;
  std::vector<int64_t> batch_sizes;
  LrScaling lr_scaling = LrScaling::None;
  int64_t reference_batch = 0;  // 0: the smallest of batch_sizes
  // Told of each batch size before its run starts (its learning rate and directory).
  std::function<void(int64_t batch_size, double lr, const std::string& dir)> on_batch;
};

struct BatchStudyRow {
  int64_t batch_size = 0;
  double lr = 0;
  std::string dir;
  TrainingOutcome outcome;
  int64_t steps_per_epoch = 0;  // ceil(training images / batch size)
  std::optional<double>
      seconds_to_target;  // the training epochs' time up to the target's, evaluation excluded
  double best_test_accuracy = 0;
  double mean_samples_per_s = 0;  // training images over training seconds, all epochs
  // The most memory the epochs counted held while they trained; none where their records predate it.
  std::optional<int64_t> peak_memory_bytes;
};

struct BatchStudy {
  std::vector<BatchStudyRow> rows;
  std::optional<double> target_accuracy;
  int64_t reference_batch = 0;
  LrScaling lr_scaling = LrScaling::None;
  Precision precision = Precision::FP32;  // the runs' (train --precision), and whether their loss was scaled
  LossScale loss_scale = LossScale::Off;
  data::Augmentation augment;  // what the runs did to their training images
  LrSchedule lr_schedule;      // how their rates moved (warmed up from the reference batch's rate)
  bool channels_last = false;  // whether they trained NHWC
  int64_t eval_every = 0;      // their evaluations within an epoch (train --eval-every): every so many steps
  int64_t chunk = 0;  // the micro-batches of the sizes above it (train --chunk: gradient accumulation)
  // train --chunk auto: each size's run found its own (each row's outcome.chunk), a larger size's search
  // starting from what fitted beside a smaller one.
  bool chunk_auto = false;
  std::string json_path;      // OUT/time_to_accuracy.json
  std::string markdown_path;  // OUT/time_to_accuracy.md
  // OUT/time_to_accuracy.png and .svg, where gnuplot drew them; else why not (plot_skipped) or what
  // failed (plot_warnings).
  std::vector<std::string> plot_files;
  std::string plot_skipped;
  std::vector<std::string> plot_warnings;
  bool stopped = false;       // a run was stopped (stop_requested): no table was written
  std::vector<int64_t> not_started;  // where stopped: the batch sizes after the stopped one
};

// Trains at each batch size into <out_dir>/batch-<B> (a run each, as train_model writes it: a stopped
// run goes on after its last epoch, a complete one of the same options is taken as it is), then writes
// the study's table to <out_dir>/time_to_accuracy.json and .md and its plot beside them, replacing
// earlier ones (they are made from the runs). Every directory is read, and a run there of other options
// refused, before anything is trained. A run stopped on request ends the study there, without writing the
// table.
BatchStudy run_batch_study(const BatchStudyOptions& options);

// Test accuracy against training time (the epochs' training seconds added up, evaluation excluded), a
// line per batch size with a point per epoch, and the target as a dashed line: time_to_accuracy.
PlotScript time_to_accuracy_plot(const BatchStudy& study);

// The table, one row per batch size, and which batch size reached the target first in training time and
// in epochs; for a stopped study, the rows so far, the stopped run's marked, and the sizes not started.
std::string format_batch_study(const BatchStudy& study);

}  // namespace batchscope
