#include "lib/analysis/report/memory_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "lib/analysis/report/report_markdown.h"
#include "lib/common/words.h"
#include "lib/device/cpu_memory.h"

namespace batchscope {
namespace {

std::string bytes_text(double bytes) { return format_memory_size(static_cast<int64_t>(std::llround(bytes))); }

// "1.09 GiB + 71.8 MiB × batch size", the fixed part after the slope where the line starts below zero.
std::string line_text(double fixed_bytes, double bytes_per_sample, const std::string& per_sample) {
  const std::string slope = bytes_text(bytes_per_sample) + per_sample;
  if (fixed_bytes < 0) return slope + " − " + bytes_text(-fixed_bytes);
  return bytes_text(fixed_bytes) + " + " + slope;
}

std::string reach_text(const MemoryReach& r) {
  return r.largest_batch ? "batch " + std::to_string(*r.largest_batch) : "not even batch 1";
}

const MemoryReach* own_reach(const MemoryFit& fit) {
  return !fit.reach.empty() && fit.reach.front().own ? &fit.reach.front() : nullptr;
}

// "+839 MiB", "−433 MiB".
std::string signed_bytes_text(double bytes) { return (bytes < 0 ? "−" : "+") + bytes_text(std::fabs(bytes)); }

std::string pair_name(int64_t from, int64_t to) { return std::to_string(from) + "→" + std::to_string(to); }

// The sizes with a whole peak, ascending: those the fit saw.
std::vector<int64_t> peak_batches(const GroupAnalysis& g) {
  std::vector<int64_t> batches;
  for (const auto& [batch, peak] : whole_batch_peaks(g.points)) batches.push_back(batch);
  std::sort(batches.begin(), batches.end());
  return batches;
}

// The line's sizes as runs of neighbouring measured sizes: "30–70", "1–22, 24–70".
std::string line_batches_text(const MemoryFit& fit, const std::vector<int64_t>& measured) {
  std::vector<std::string> runs;
  size_t i = 0;
  while (i < measured.size()) {
    if (!std::binary_search(fit.line_batches.begin(), fit.line_batches.end(), measured[i])) {
      ++i;
      continue;
    }
    size_t last = i;
    while (last + 1 < measured.size() &&
           std::binary_search(fit.line_batches.begin(), fit.line_batches.end(), measured[last + 1]))
      ++last;
    runs.push_back(std::to_string(measured[i]) + (last > i ? "–" + std::to_string(measured[last]) : ""));
    i = last + 1;
  }
  return listed(runs);
}

// "the drop 22→23 (−433 MiB)", or without the amount: "the jumps 16→17 and 24→25".
std::string changes_text(const std::vector<const MemoryAtChange*>& changes, bool amounts) {
  std::vector<std::string> jumps, drops;
  for (const MemoryAtChange* c : changes) {
    const std::string name = pair_name(c->from_batch, c->to_batch) +
                             (amounts ? " (" + signed_bytes_text(c->beyond_line_bytes) + ")" : "");
    (c->drop ? drops : jumps).push_back(name);
  }
  std::vector<std::string> parts;
  if (!jumps.empty()) parts.push_back((jumps.size() == 1 ? "the jump " : "the jumps ") + listed(jumps));
  if (!drops.empty()) parts.push_back((drops.size() == 1 ? "the drop " : "the drops ") + listed(drops));
  return listed(parts);
}

// Where the peak steps off the line between neighbouring sizes, and which changes of the step time came
// with such a step.
void write_memory_steps(std::ostream& out, const MemoryFit& fit, bool gpu) {
  const std::string threshold = bytes_text(fit.step_threshold_bytes);
  if (fit.steps.empty()) {
    out << "No two neighbouring sizes move the peak more than " << threshold
        << " beyond the line's growth between sizes one apart (the larger of 8 × the peaks' own scatter per "
           "size, "
           "which grows with the gap between sizes, and 1% of their median).";
  } else {
    std::vector<std::string> steps;
    for (const MemoryStep& s : fit.steps)
      steps.push_back(pair_name(s.from_batch, s.to_batch) + " (" + signed_bytes_text(s.beyond_line_bytes) +
                      ")");
    out << "The peak steps off the line "
        << (fit.steps.size() == 1 ? "once" : std::to_string(fit.steps.size()) + " times") << ", by more than "
        << threshold
        << " beyond its growth between sizes one apart (the larger of 8 × the peaks' own scatter per size, "
           "which grows with the gap between sizes, and 1% of their median): "
        << listed(steps) << ". "
        << (gpu ? "There a library's workspace changed with its algorithm (cuDNN chooses one per batch size)."
                : "There an operator's scratch memory changed with its algorithm.");
  }
  std::vector<const MemoryAtChange*> stepped, followed;
  for (const MemoryAtChange& c : fit.at_changes) (c.stepped ? stepped : followed).push_back(&c);
  if (!stepped.empty() && followed.empty()) {
    out << " Every change of the step time came with a step of the peak: " << changes_text(stepped, true)
        << ".";
  } else if (!stepped.empty()) {
    out << " Of the step time's changes, " << changes_text(stepped, true) << " came with a step of the peak; "
        << changes_text(followed, false)
        << " did not: the time changed there, the memory grew as the line does.";
  } else if (!followed.empty()) {
    std::string text = changes_text(followed, false);
    text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    out << " " << text << " came with no step of the peak (within " << threshold
        << " of the line's growth): what changed the time left the memory as it was.";
  }
  out << "\n\n";
}

}  // namespace

void write_memory_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                          const std::string& plot_dir) {
  if (!g.memory) return;
  const MemoryFit& fit = *g.memory;
  const bool gpu = g.identity.contains("cuda");
  const int line_points = static_cast<int>(fit.line_batches.size());
  out << "**Memory** (the most LibTorch's " << (gpu ? "caching allocator" : "CPU allocator")
      << " held during each batch size's steps at " << fit.points << " sizes, " << fit.first_batch << "–"
      << fit.last_batch << "; the line by Theil–Sen through "
      << (line_points < fit.points
              ? "the " + std::to_string(line_points) + " whose peaks sit at the largest size's level, " +
                    line_batches_text(fit, peak_batches(g))
              : std::string("all of them"))
      << "):\n\n";
  embed_plot(out, plots, plot_dir, g.id + "_memory", "peak memory vs batch size");
  if (!(fit.bytes_per_sample > 0)) {
    out << "Peak memory does not grow with the batch size here (" << bytes_text(fit.fixed_bytes)
        << " at every size, within " << significant(100 * fit.worst_deviation, 2)
        << "%), so it sets no largest batch size.\n\n";
    return;
  }
  out << "Peak memory ≈ " << line_text(fit.fixed_bytes, fit.bytes_per_sample, " × batch size") << ", i.e. "
      << bytes_text(fit.bytes_per_sample) << " per extra sample; every peak "
      << (line_points < fit.points ? "it runs through" : "measured") << " lies within "
      << significant(100 * fit.worst_deviation, 2) << "% of the line (the farthest at batch " << fit.worst_at
      << ")"
      << (line_points < fit.points ? "; the other sizes ran with other workspaces (the steps below)" : "")
      << ".";
  if (fit.top_steeper) {
    out << " At the largest sizes it grows faster than the line: " << bytes_text(fit.top_bytes_per_sample)
        << " per extra sample from batch " << fit.top_first_batch << " on (≈ "
        << line_text(fit.top_fixed_bytes, fit.top_bytes_per_sample, " × batch size")
        << "), so each reach below is the smaller of the two lines'.";
  }
  // "Extended, it reaches batch 1979 within NVIDIA H200's memory (140 GiB), and on a GPU of 16 GiB
  // batch 212, 24 GiB 326, ..."
  const MemoryReach* own = own_reach(fit);
  std::vector<std::string> others;
  for (const MemoryReach& r : fit.reach) {
    if (r.own) continue;
    const std::string batch = r.largest_batch ? std::to_string(*r.largest_batch) : "none";
    others.push_back(r.what + " " + (others.empty() ? reach_text(r) : batch));
  }
  const std::string extended = fit.top_steeper ? " Extended, the lines reach " : " Extended, it reaches ";
  if (own)
    out << extended << reach_text(*own) << " within " << own->what << " ("
        << format_memory_size(own->memory_bytes) << ")";
  if (!others.empty()) out << (own ? ", and" : extended) << " on a GPU of " << listed(others);
  if (!fit.reach.empty()) out << ".";
  out << "\n\n";
  write_memory_steps(out, fit, gpu);
  if (own && g.first_oom) {
    out << "The sweep ran out of memory from batch " << *g.first_oom << ", where the line put "
        << reach_text(*own) << " within " << own->what << ".\n\n";
  }
  if (gpu) {
    out << "These are upper bounds: the CUDA context, the libraries' memory outside the caching allocator "
           "and the allocator's fragmentation take more, so fewer samples fit, and on another GPU cuDNN may "
           "choose algorithms of other workspaces. `batchscope maxbatch` with this experiment's settings "
           "measures the largest batch that runs.\n\n";
  } else {
    out << "Only LibTorch's CPU tensors are counted; what BLAS and oneDNN allocate themselves is not. "
           "`batchscope maxbatch` with this experiment's settings measures the largest batch that runs "
           "within a limit.\n\n";
  }
}

void write_memory_terminal(std::ostream& out, const GroupAnalysis& g) {
  if (!g.memory || !(g.memory->bytes_per_sample > 0)) return;
  out << "  memory: " << line_text(g.memory->fixed_bytes, g.memory->bytes_per_sample, " per sample");
  if (g.memory->top_steeper)
    out << " (" << bytes_text(g.memory->top_bytes_per_sample) << " from batch " << g.memory->top_first_batch
        << " on)";
  if (const MemoryReach* own = own_reach(*g.memory))
    out << (g.memory->top_steeper ? "; the steeper line reaches " : "; the line reaches ") << reach_text(*own)
        << " in " << own->what << " (" << format_memory_size(own->memory_bytes) << ")";
  if (!g.memory->steps.empty()) {
    std::vector<std::string> steps;
    for (const MemoryStep& s : g.memory->steps) steps.push_back(pair_name(s.from_batch, s.to_batch));
    out << "; the peak steps off it at " << listed(steps);
  }
  out << "\n";
}

std::string memory_at_change_text(const GroupAnalysis& g, const Jump& change) {
  if (!g.memory) return "";
  for (const MemoryAtChange& c : g.memory->at_changes) {
    if (c.from_batch == change.from_batch && c.to_batch == change.to_batch)
      return signed_bytes_text(c.beyond_line_bytes) + (c.stepped ? ", a step" : "");
  }
  return "";
}

std::optional<PlotScript> memory_plot(const GroupAnalysis& g) {
  if (!g.memory) return std::nullopt;
  // GiB where the peaks pass 2 GiB, MiB below.
  const std::vector<std::pair<int64_t, int64_t>> peaks = whole_batch_peaks(g.points);
  int64_t most = 0;
  for (const auto& [batch, peak] : peaks) most = std::max(most, peak);
  const bool gib = most > (int64_t{2} << 30);
  const double unit = gib ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
  PlotScript plot{g.id + "_memory",
                  "# batch_size peak_memory_" + std::string(gib ? "gib" : "mib") + " on_line\n", ""};
  const std::vector<int64_t>& line = g.memory->line_batches;
  for (const auto& [batch, peak] : peaks) {
    plot.data += std::to_string(batch) + " " + gp_number(static_cast<double>(peak) / unit) + " " +
                 (std::binary_search(line.begin(), line.end(), batch) ? "1" : "0") + "\n";
  }
  const bool all_on_line = static_cast<int>(line.size()) == g.memory->points;
  std::string& body = plot.body;
  body += "set title " + gp_string(g.label) + "\n";
  body += std::string("set ylabel 'peak memory (") + (gib ? "GiB" : "MiB") + ")'\n";
  body += "set yrange [0:*]\n";
  body += "set key below\n";  // never over a point, and clear of the steps' labels
  body += x_range(g.memory->first_batch, g.memory->last_batch);
  // Each step off the line marked at the first size after it, as the time plot marks its jumps.
  for (size_t i = 0; i < g.memory->steps.size(); ++i) {
    const MemoryStep& step = g.memory->steps[i];
    const std::string x = gp_number(static_cast<double>(step.to_batch));
    const std::string text =
        pair_name(step.from_batch, step.to_batch) + " " + signed_bytes_text(step.beyond_line_bytes);
    const std::string y = gp_number(0.95 - 0.05 * static_cast<double>(i % 3));  // close steps' labels apart
    body += "set arrow from first " + x + ", graph 0 to first " + x +
            ", graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'\n";
    const bool right = in_right_half(g.memory->first_batch, g.memory->last_batch, step.to_batch);
    body += "set label " + gp_string(text) + " at first " + x + ", graph " + y +
            (right ? " right offset character -0.5,0" : " left offset character 0.5,0") +
            " front tc rgb '#d62728'\n";
  }
  // Filled where the line runs through the size, open where the size ran with another workspace.
  const std::string data = gp_string(plot.name + ".dat");
  std::vector<std::string> items;
  if (all_on_line) {
    items.push_back(data +
                    " using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory'");
  } else {
    items.push_back(data + " using 1:2 with lines lw 2 lc rgb '#9467bd' notitle");
    items.push_back(data + " using 1:($3 > 0 ? $2 : 1/0) with points pt 7 ps 0.9 lc rgb '#9467bd' " +
                    "title 'peak memory, a size of the line'");
    items.push_back(data + " using 1:($3 > 0 ? 1/0 : $2) with points pt 6 ps 1.1 lw 1.5 lc rgb '#9467bd' " +
                    "title 'peak memory, off the line'");
  }
  items.push_back("(" + gp_number(g.memory->fixed_bytes / unit) + ") + (" +
                  gp_number(g.memory->bytes_per_sample / unit) +
                  ") * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'");
  if (g.memory->top_steeper) {
    items.push_back("(x >= " + gp_number(static_cast<double>(g.memory->top_first_batch)) + " ? (" +
                    gp_number(g.memory->top_fixed_bytes / unit) + ") + (" +
                    gp_number(g.memory->top_bytes_per_sample / unit) +
                    ") * x : 1/0) with lines dt 4 lw 1.5 lc rgb '#ff7f0e' title 'line of the largest sizes'");
  }
  body += join_plot(items);
  return plot;
}

Json memory_json(const MemoryFit& fit) {
  Json reach = Json::array();
  for (const MemoryReach& r : fit.reach) {
    reach.push_back({{"memory_bytes", r.memory_bytes},
                     {"what", r.what},
                     {"own", r.own},
                     {"largest_batch", optional_json(r.largest_batch)},
                     {"from_top", r.from_top}});
  }
  Json steps = Json::array();
  for (const MemoryStep& st : fit.steps) {
    steps.push_back({{"from", st.from_batch},
                     {"to", st.to_batch},
                     {"from_bytes", st.from_bytes},
                     {"to_bytes", st.to_bytes},
                     {"beyond_line_bytes", st.beyond_line_bytes}});
  }
  Json at_changes = Json::array();
  for (const MemoryAtChange& c : fit.at_changes) {
    at_changes.push_back({{"from", c.from_batch},
                          {"to", c.to_batch},
                          {"change", c.drop ? "drop" : "rise"},
                          {"beyond_line_bytes", c.beyond_line_bytes},
                          {"stepped", c.stepped}});
  }
  return Json{{"fixed_bytes", fit.fixed_bytes},
              {"bytes_per_sample", fit.bytes_per_sample},
              {"points", fit.points},
              {"first_batch", fit.first_batch},
              {"last_batch", fit.last_batch},
              {"line_points", fit.line_batches.size()},
              {"line_batches", fit.line_batches},
              {"worst_deviation", fit.worst_deviation},
              {"worst_at", fit.worst_at},
              {"top_line",
               {{"fixed_bytes", fit.top_fixed_bytes},
                {"bytes_per_sample", fit.top_bytes_per_sample},
                {"first_batch", fit.top_first_batch},
                {"steeper", fit.top_steeper}}},
              {"reach", reach},
              {"step_threshold_bytes", fit.step_threshold_bytes},
              {"steps", steps},
              {"at_changes", at_changes}};
}

}  // namespace batchscope
