#include "lib/sweep/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace batchscope {
namespace {

constexpr double kRedrawSeconds = 0.25;

// A step's seconds at batch size x from an experiment's sizes run so far: least squares through them
// where they span two sizes or more, else proportional to the one size; never below zero.
double seconds_per_step(const std::vector<ProgressSample>& samples, int64_t x) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ProgressSample& s : samples) {
    const auto b = static_cast<double>(s.batch_size);
    n += 1;
    sx += b;
    sy += s.seconds_per_step;
    sxx += b * b;
    sxy += b * s.seconds_per_step;
  }
  const double spread = n * sxx - sx * sx;
  const auto at = static_cast<double>(x);
  if (spread <= 1e-9 * std::max(1.0, sxx * n)) {
    // One batch size (perhaps run more than once): proportional to it.
    return sy / n * at / std::max(1.0, sx / n);
  }
  const double slope = (n * sxy - sx * sy) / spread;
  const double intercept = (sy - slope * sx) / n;
  double predicted = intercept + slope * at;
  if (predicted <= 0) {
    // A line through noisy small sizes can fall below zero: take the nearest size run instead.
    const ProgressSample& nearest = *std::min_element(samples.begin(), samples.end(), [x](const auto& a, const auto& b) {
      return std::llabs(a.batch_size - x) < std::llabs(b.batch_size - x);
    });
    predicted = nearest.seconds_per_step;
  }
  return predicted;
}

}  // namespace

std::optional<double> estimate_remaining_s(const std::map<std::string, std::vector<ProgressSample>>& seen,
                                           const std::vector<ProgressUnit>& left) {
  double seconds = 0, sample_steps = 0;
  for (const auto& [experiment, samples] : seen) {
    for (const ProgressSample& s : samples) {
      seconds += s.seconds_per_step;
      sample_steps += static_cast<double>(s.batch_size);
    }
  }
  if (sample_steps <= 0) return std::nullopt;
  const double per_sample_step = seconds / sample_steps;
  double remaining = 0;
  for (const ProgressUnit& u : left) {
    const auto found = seen.find(u.experiment);
    const double step = found != seen.end() && !found->second.empty()
                            ? seconds_per_step(found->second, u.batch_size)
                            : per_sample_step * static_cast<double>(u.batch_size);
    remaining += step * u.steps;
  }
  return remaining;
}

std::string Progress::format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lds", s);
  }
  return text;
}

void Progress::begin_size(const std::string& experiment, int experiment_index, int experiments, int64_t batch_size,
                          int warmup_steps, int timed_steps) {
  experiment_ = experiment;
  experiment_index_ = experiment_index;
  experiments_ = experiments;
  batch_size_ = batch_size;
  warmup_steps_ = warmup_steps;
  timed_steps_ = timed_steps;
  planned_steps_ = warmup_steps + timed_steps;
  part_ = warmup_steps > 0 ? StepPart::WarmUp : StepPart::Timed;
  done_ = 0;
  size_begin_ = Clock::now();
  running_ = true;
  if (enabled_) draw();
}

void Progress::step(StepPart part, int done, int total) {
  part_ = part;
  done_ = done;
  // steps: auto plans its timed steps a block at a time.
  if (part == StepPart::Timed) timed_steps_ = std::max(timed_steps_, total);
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (now - last_draw_ < std::chrono::duration<double>(kRedrawSeconds)) return;
  draw();
}

void Progress::take_unit(const std::string& experiment, int64_t batch_size, int steps) {
  const auto unit = std::find_if(left_.begin(), left_.end(), [&](const ProgressUnit& u) {
    return u.experiment == experiment && u.batch_size == batch_size;
  });
  if (unit == left_.end()) return;
  // A repeated batch size is one unit for all its passes: each pass takes its share of the steps.
  unit->steps -= steps;
  if (unit->steps <= 0) left_.erase(unit);
}

void Progress::end_size(const std::string& experiment, int64_t batch_size, int steps, bool measured) {
  if (measured && running_ && experiment == experiment_ && batch_size == batch_size_ && steps > 0) {
    const double seconds = std::chrono::duration<double>(Clock::now() - size_begin_).count();
    seen_[experiment].push_back({batch_size, seconds / steps});
    // With steps: auto a size takes more steps than planned; the experiment's other sizes likely do too.
    Stretch& st = stretch_[experiment];
    st.run += steps;
    st.planned += planned_steps_;
  }
  take_unit(experiment, batch_size, steps);
  running_ = false;
  if (enabled_ && !experiment_.empty()) draw();
}

std::optional<double> Progress::remaining_s() const {
  std::vector<ProgressUnit> left = left_;
  for (ProgressUnit& u : left) {
    const auto found = stretch_.find(u.experiment);
    if (found != stretch_.end() && found->second.planned > 0)
      u.steps = static_cast<int>(std::lround(u.steps * found->second.run / found->second.planned));
  }
  if (running_) {
    // The running size's own steps so far say best what its remaining steps take.
    const int steps_done = part_ == StepPart::WarmUp ? done_ : warmup_steps_ + done_;
    const int steps_total = warmup_steps_ + timed_steps_;
    for (auto it = left.begin(); it != left.end(); ++it) {
      if (it->experiment != experiment_ || it->batch_size != batch_size_) continue;
      const int rest_of_size = std::max(0, steps_total - steps_done);
      it->steps = std::max(0, it->steps - steps_total);
      double extra = 0;
      if (steps_done > 0) {
        const double so_far = std::chrono::duration<double>(Clock::now() - size_begin_).count();
        extra = so_far / steps_done * rest_of_size;
      } else {
        std::vector<ProgressUnit> one = {{experiment_, batch_size_, rest_of_size}};
        extra = estimate_remaining_s(seen_, one).value_or(0);
      }
      const std::optional<double> others = estimate_remaining_s(seen_, left);
      if (!others && steps_done == 0) return std::nullopt;
      return extra + others.value_or(0);
    }
  }
  return estimate_remaining_s(seen_, left);
}

void Progress::draw() {
  last_draw_ = Clock::now();
  const double elapsed = std::chrono::duration<double>(last_draw_ - begin_).count();
  std::ostringstream line;
  line << "[" << experiment_index_ << "/" << experiments_ << "] " << experiment_ << "  batch " << batch_size_;
  if (running_ && part_ == StepPart::WarmUp) {
    line << "  warm-up " << done_ << "/" << warmup_steps_;
  } else {
    line << "  step " << (running_ ? done_ : timed_steps_) << "/" << timed_steps_;
  }
  line << "  elapsed " << format_duration(elapsed);
  if (const std::optional<double> left = remaining_s(); left && *left > 0) line << "  remaining ~" << format_duration(*left);
  std::string text = line.str();
  const std::size_t width = text.size();
  if (width < last_width_) text.append(last_width_ - width, ' ');
  last_width_ = width;
  out_ << '\r' << text << std::flush;
}

void Progress::finish() {
  if (enabled_ && last_width_ > 0) out_ << '\n' << std::flush;
  last_width_ = 0;
}

}  // namespace batchscope
