#include "lib/analysis/report/memory_report.h"

#include <algorithm>
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
std::string line_text(const MemoryFit& fit, const std::string& per_sample) {
  const std::string slope = bytes_text(fit.bytes_per_sample) + per_sample;
  if (fit.fixed_bytes < 0) return slope + " − " + bytes_text(-fit.fixed_bytes);
  return bytes_text(fit.fixed_bytes) + " + " + slope;
}

std::string reach_text(const MemoryReach& r) {
  return r.largest_batch ? "batch " + std::to_string(*r.largest_batch) : "not even batch 1";
}

const MemoryReach* own_reach(const MemoryFit& fit) {
  return !fit.reach.empty() && fit.reach.front().own ? &fit.reach.front() : nullptr;
}

}  // namespace

void write_memory_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                          const std::string& plot_dir) {
  if (!g.memory) return;
  const MemoryFit& fit = *g.memory;
  const bool gpu = g.identity.contains("cuda");
  out << "**Memory** (the most LibTorch's " << (gpu ? "caching allocator" : "CPU allocator")
      << " held during each batch size's steps; Theil–Sen over " << fit.points << " sizes, "
      << fit.first_batch << "–" << fit.last_batch << "):\n\n";
  embed_plot(out, plots, plot_dir, g.id + "_memory", "peak memory vs batch size");
  if (!(fit.bytes_per_sample > 0)) {
    out << "Peak memory does not grow with the batch size here (" << bytes_text(fit.fixed_bytes)
        << " at every size, within " << significant(100 * fit.worst_deviation, 2)
        << "%), so it sets no largest batch size.\n\n";
    return;
  }
  out << "Peak memory ≈ " << line_text(fit, " × batch size") << ", i.e. " << bytes_text(fit.bytes_per_sample)
      << " per extra sample; every measured peak lies within " << significant(100 * fit.worst_deviation, 2)
      << "% of the line (the farthest at batch " << fit.worst_at << ").";
  // "Extended, it reaches batch 1979 within NVIDIA H200's memory (140 GiB), and on a GPU of 16 GiB
  // batch 212, 24 GiB 326, ..."
  const MemoryReach* own = own_reach(fit);
  std::vector<std::string> others;
  for (const MemoryReach& r : fit.reach) {
    if (r.own) continue;
    const std::string batch = r.largest_batch ? std::to_string(*r.largest_batch) : "none";
    others.push_back(r.what + " " + (others.empty() ? reach_text(r) : batch));
  }
  if (own)
    out << " Extended, it reaches " << reach_text(*own) << " within " << own->what << " ("
        << format_memory_size(own->memory_bytes) << ")";
  if (!others.empty()) out << (own ? ", and" : " Extended, it reaches") << " on a GPU of " << listed(others);
  if (!fit.reach.empty()) out << ".";
  out << "\n\n";
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
  out << "  memory: " << line_text(*g.memory, " per sample");
  if (const MemoryReach* own = own_reach(*g.memory))
    out << "; the line reaches " << reach_text(*own) << " in " << own->what << " ("
        << format_memory_size(own->memory_bytes) << ")";
  out << "\n";
}

std::optional<PlotScript> memory_plot(const GroupAnalysis& g) {
  if (!g.memory) return std::nullopt;
  // GiB where the peaks pass 2 GiB, MiB below.
  int64_t most = 0;
  for (const PointStats& p : g.points) {
    if (p.peak_memory_bytes && !p.chunk) most = std::max(most, *p.peak_memory_bytes);
  }
  const bool gib = most > (int64_t{2} << 30);
  const double unit = gib ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
  PlotScript plot{g.id + "_memory", "# batch_size peak_memory_" + std::string(gib ? "gib" : "mib") + "\n",
                  ""};
  for (const PointStats& p : g.points) {
    if (p.peak_memory_bytes && !p.chunk)
      plot.data += std::to_string(p.batch_size) + " " +
                   gp_number(static_cast<double>(*p.peak_memory_bytes) / unit) + "\n";
  }
  std::string& body = plot.body;
  body += "set title " + gp_string(g.label) + "\n";
  body += std::string("set ylabel 'peak memory (") + (gib ? "GiB" : "MiB") + ")'\n";
  body += "set yrange [0:*]\n";
  body += "set key left top opaque\n";
  body += x_range(g.memory->first_batch, g.memory->last_batch);
  std::vector<std::string> items = {
      gp_string(plot.name + ".dat") +
      " using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory'"};
  items.push_back("(" + gp_number(g.memory->fixed_bytes / unit) + ") + (" +
                  gp_number(g.memory->bytes_per_sample / unit) +
                  ") * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'");
  body += join_plot(items);
  return plot;
}

Json memory_json(const MemoryFit& fit) {
  Json reach = Json::array();
  for (const MemoryReach& r : fit.reach) {
    reach.push_back({{"memory_bytes", r.memory_bytes},
                     {"what", r.what},
                     {"own", r.own},
                     {"largest_batch", optional_json(r.largest_batch)}});
  }
  return Json{{"fixed_bytes", fit.fixed_bytes}, {"bytes_per_sample", fit.bytes_per_sample},
              {"points", fit.points},           {"first_batch", fit.first_batch},
              {"last_batch", fit.last_batch},   {"worst_deviation", fit.worst_deviation},
              {"worst_at", fit.worst_at},       {"reach", reach}};
}

}  // namespace batchscope
