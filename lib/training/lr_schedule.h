#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace batchscope {

// The learning rate of each optimizer step of a training run. By default the run's rate throughout. A
// warm-up raises it linearly, step by step, from the rate at the reference batch size to the run's own
// (scaled) rate over the first epochs, as Goyal et al. ("Accurate, Large Minibatch SGD", 2017) warm up
// a large batch's linearly scaled rate; a decay then lowers it: by a factor after given epochs (the
// ResNet recipe's steps), or along a cosine to zero at the last epoch (per step, as SGDR without
// restarts).
struct LrSchedule {
  enum class Decay { None, Step, Cosine };
  int warmup_epochs = 0;
  double warmup_from = 0;  // the first step's rate: the rate given for the reference batch size
  Decay decay = Decay::None;
  std::vector<int> milestones;  // Step: after each of these epochs (from 1) the rate is multiplied by gamma
  double gamma = 0.1;
  bool constant() const { return warmup_epochs == 0 && decay == Decay::None; }
  // A cosine's rates depend on how many epochs the run has: such a run cannot go on to more.
  bool depends_on_epochs() const { return decay == Decay::Cosine; }
};

// The rate of step `step` (from 0, counted over the whole run) of a run of `epochs` epochs of
// `steps_per_epoch` steps whose rate after any warm-up is `lr`.
double lr_at(const LrSchedule& schedule, double lr, int64_t step, int64_t steps_per_epoch, int epochs);

// --lr-decay's words: "none", "cosine", "step:E1,E2,..." (ascending epochs from 1); reads them into the
// schedule's decay and milestones, false (the schedule as it was) for anything else.
bool read_lr_decay(const std::string& text, LrSchedule& schedule);
// The words read_lr_decay reads back: "none", "cosine", "step:30,60".
std::string lr_decay_text(const LrSchedule& schedule);
// "warmed up over 5 epochs from 0.01, then times 0.1 after epochs 30 and 60": for a table's heading; ""
// for a constant rate.
std::string describe(const LrSchedule& schedule);
// The run record's "lr_schedule": every setting, and how the rate is set (each step).
nlohmann::ordered_json lr_schedule_json(const LrSchedule& schedule);

}  // namespace batchscope
