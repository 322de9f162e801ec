#include "lib/sweep/progress.h"

#include <cstdio>
#include <sstream>

namespace batchscope {

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

void Progress::show(const std::string& experiment, int experiment_index, int experiments, int64_t batch_size,
                    int steps_done, int steps_total) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(Clock::now() - begin_).count();
  std::ostringstream line;
  line << "[" << experiment_index << "/" << experiments << "] " << experiment << "  batch " << batch_size
       << "  step " << steps_done << "/" << steps_total << "  elapsed " << format_duration(elapsed);
  if (done_work_ > 0 && total_work_ > done_work_) {
    line << "  remaining ~" << format_duration(elapsed / done_work_ * (total_work_ - done_work_));
  }
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
