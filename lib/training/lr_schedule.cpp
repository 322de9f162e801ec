#include "lib/training/lr_schedule.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "lib/common/words.h"

namespace batchscope {

double lr_at(const LrSchedule& schedule, double lr, int64_t step, int64_t steps_per_epoch, int epochs) {
  const int64_t warmup = static_cast<int64_t>(schedule.warmup_epochs) * steps_per_epoch;
  if (step < warmup) {
    // A constant amount more each step, from the reference rate; the run's own rate at the first step after.
    return schedule.warmup_from +
           (lr - schedule.warmup_from) * static_cast<double>(step) / static_cast<double>(warmup);
  }
  switch (schedule.decay) {
    case LrSchedule::Decay::Step: {
      const int64_t epoch = step / steps_per_epoch + 1;  // the epoch this step belongs to, from 1
      double rate = lr;
      for (const int milestone : schedule.milestones) {
        if (epoch > milestone) rate *= schedule.gamma;
      }
      return rate;
    }
    case LrSchedule::Decay::Cosine: {
      const int64_t total = static_cast<int64_t>(epochs) * steps_per_epoch;
      if (total <= warmup) return lr;
      const double done = static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
      return 0.5 * lr * (1 + std::cos(M_PI * std::min(done, 1.0)));
    }
    case LrSchedule::Decay::None:
      break;
  }
  return lr;
}

bool read_lr_decay(const std::string& text, LrSchedule& schedule) {
  if (text == "none" || text == "cosine") {
    schedule.decay = text == "none" ? LrSchedule::Decay::None : LrSchedule::Decay::Cosine;
    schedule.milestones.clear();
    return true;
  }
  const std::string prefix = "step:";
  if (text.rfind(prefix, 0) != 0 || text.size() == prefix.size()) return false;
  std::vector<int> milestones;
  std::size_t at = prefix.size();
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string digits = text.substr(at, comma - at);
    if (digits.empty() || digits.size() > 6) return false;
    int epoch = 0;
    for (const char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      epoch = 10 * epoch + (c - '0');
    }
    if (epoch < 1 || (!milestones.empty() && epoch <= milestones.back())) return false;
    milestones.push_back(epoch);
    at = comma + 1;
  }
  schedule.decay = LrSchedule::Decay::Step;
  schedule.milestones = milestones;
  return true;
}

std::string lr_decay_text(const LrSchedule& schedule) {
  switch (schedule.decay) {
    case LrSchedule::Decay::Step:
      return "step:" + joined_numbers(schedule.milestones, ",");
    case LrSchedule::Decay::Cosine:
      return "cosine";
    case LrSchedule::Decay::None:
      break;
  }
  return "none";
}

std::string describe(const LrSchedule& schedule) {
  std::vector<std::string> parts;
  if (schedule.warmup_epochs > 0) {
    parts.push_back("warmed up over " + counted(schedule.warmup_epochs, "epoch") + " from " +
                    fmt::format("{:g}", schedule.warmup_from));
  }
  if (schedule.decay == LrSchedule::Decay::Step) {
    std::vector<std::string> epochs;
    for (const int m : schedule.milestones) epochs.push_back(std::to_string(m));
    parts.push_back(fmt::format("times {:g} after ", schedule.gamma) +
                    (epochs.size() == 1 ? "epoch " : "epochs ") + listed(epochs));
  } else if (schedule.decay == LrSchedule::Decay::Cosine) {
    parts.push_back("cosine to 0 at the last epoch");
  }
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : ", then ") + parts[i];
  return text;
}

nlohmann::ordered_json lr_schedule_json(const LrSchedule& schedule) {
  nlohmann::ordered_json j = {{"warmup_epochs", schedule.warmup_epochs}};
  if (schedule.warmup_epochs > 0) j["warmup_from"] = schedule.warmup_from;
  j["decay"] = schedule.decay == LrSchedule::Decay::Step     ? "step"
               : schedule.decay == LrSchedule::Decay::Cosine ? "cosine"
                                                             : "none";
  if (schedule.decay == LrSchedule::Decay::Step) {
    j["milestones"] = schedule.milestones;
    j["gamma"] = schedule.gamma;
  }
  j["set"] = "each optimizer step";
  return j;
}

}  // namespace batchscope
