#include "lib/analysis/report/profile_report.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "lib/analysis/report/report_markdown.h"
#include "lib/common/words.h"

namespace batchscope {
namespace {

constexpr std::size_t kLayersPlotted = 8;
constexpr std::size_t kLayersTabled = 12;
constexpr std::size_t kSizesTabled = 8;
// One colour per plotted layer (the "other layers" band is grey).
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f"};

// "features.0 fwd", "classifier.0 bwd", or a step part's own name.
std::string pass_label(const std::string& layer, const std::string& pass) {
  return pass == profile_pass::kStep ? layer : layer + " " + (pass == profile_pass::kForward ? "fwd" : "bwd");
}

std::string label_of(const LayerSeries& l) { return pass_label(l.layer, l.pass); }

double largest(const LayerSeries& l) {
  double m = 0;
  for (const auto& [batch, ms] : l.ms) m = std::max(m, ms);
  return m;
}

// The layers with the largest times first, the first `count` of them; the others are summed apart.
std::vector<const LayerSeries*> largest_layers(const GroupProfile& p, std::size_t count,
                                               std::vector<const LayerSeries*>& rest) {
  std::vector<const LayerSeries*> order;
  for (const LayerSeries& l : p.layers) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(),
                   [](const LayerSeries* a, const LayerSeries* b) { return largest(*a) > largest(*b); });
  if (order.size() > count) {
    rest.assign(order.begin() + static_cast<std::ptrdiff_t>(count), order.end());
    order.resize(count);
  }
  return order;
}

double at(const LayerSeries& l, int64_t batch) {
  const auto found = l.ms.find(batch);
  return found == l.ms.end() ? 0.0 : found->second;
}

// The batch sizes of the table: both sides of every explained jump first, then spread over the rest.
std::vector<int64_t> tabled_sizes(const GroupProfile& p) {
  std::set<int64_t> chosen;
  for (const JumpCause& c : p.causes) {
    if (!c.missing.empty()) continue;
    if (chosen.size() + 2 > kSizesTabled) break;
    chosen.insert(c.from_batch);
    chosen.insert(c.to_batch);
  }
  const std::vector<int64_t>& all = p.batch_sizes;
  if (all.size() <= kSizesTabled) return all;
  // The rest spread evenly from the smallest size to the largest; where one falls on a size already
  // chosen, the nearest sizes not yet chosen fill the table.
  const std::size_t free_slots = kSizesTabled - chosen.size();
  for (std::size_t i = 0; i < free_slots; ++i)
    chosen.insert(all[(all.size() - 1) * i / std::max<std::size_t>(1, free_slots - 1)]);
  for (std::size_t i = 0; chosen.size() < kSizesTabled && i < all.size(); ++i) chosen.insert(all[i]);
  return {chosen.begin(), chosen.end()};
}

std::optional<PlotScript> layers_plot(const GroupAnalysis& g) {
  const GroupProfile& p = *g.profile;
  if (p.batch_sizes.size() < 2) return std::nullopt;
  std::vector<const LayerSeries*> rest;
  const std::vector<const LayerSeries*> shown = largest_layers(p, kLayersPlotted, rest);
  PlotScript plot{"layers_" + g.id, "# batch_size, then the running sum of the layers below (ms per step)\n", ""};
  for (int64_t batch : p.batch_sizes) {
    double sum = 0;
    plot.data += std::to_string(batch);
    for (const LayerSeries* l : shown) {
      sum += at(*l, batch);
      plot.data += " " + gp_number(sum);
    }
    for (const LayerSeries* l : rest) sum += at(*l, batch);
    plot.data += " " + gp_number(sum) + "\n";
  }
  std::string& body = plot.body;
  body += "set title " + gp_string(g.label + ": time per layer (" + p.basis + " time, stacked)") + "\n";
  body += "set ylabel 'ms per step'\nset yrange [0:*]\nset key outside right top\n";
  body += x_range(p.batch_sizes.front(), p.batch_sizes.back());
  std::vector<std::string> items;
  const std::size_t columns = shown.size() + (rest.empty() ? 0 : 1);
  // Drawn from the top down, so that each band covers the one above it only where it should.
  for (std::size_t k = columns; k-- > 0;) {
    const std::string upper = "$" + std::to_string(k + 2);
    const std::string lower = k == 0 ? "0" : "$" + std::to_string(k + 1);
    const std::string title = k < shown.size() ? label_of(*shown[k]) : std::to_string(rest.size()) + " other layers";
    const char* colour = k < shown.size() ? kColours[k % std::size(kColours)] : "#c7c7c7";
    items.push_back(std::string(items.empty() ? gp_string(plot.name + ".dat") : "''") + " using 1:(" + upper +
                    "):(" + lower + ") with filledcurves fs solid 0.85 lc rgb '" + colour + "' title " +
                    gp_string(title));
  }
  body += join_plot(items);
  return plot;
}

// The first `count` GEMM layer passes by time at the rates' batch size, the largest first.
std::vector<const LayerRate*> largest_rates(const LayerRates& r, std::size_t count) {
  std::vector<const LayerRate*> order;
  for (const LayerRate& l : r.layers) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(),
                   [](const LayerRate* a, const LayerRate* b) { return a->ms > b->ms; });
  if (order.size() > count) order.resize(count);
  return order;
}

// How cuDNN chose the algorithms of the passes timed alone, where a GPU's profile says cuDNN ran.
std::string alone_mode(const LayerRates& r, const GroupProfile& p) {
  if (p.basis != "device" || !r.alone) return "";
  bool searched = false;
  for (const LayerRate& l : r.layers) searched = searched || (l.alone_tflops && l.alone_cudnn_benchmark);
  const std::string mode = searched ? " with cuDNN's search (benchmark mode)" : " with cuDNN's heuristics";
  return mode + (r.alone->step_mode ? ", as the step ran" : ", which the step did not use");
}

// How the passes alone were timed: by the timer and under the profiler as the step's layers are, the
// faster of the two read, or, from a peak file without the profiled runs, by the timer alone.
std::string alone_measure(const LayersAlone& a, const GroupProfile& p) {
  const bool device = p.basis == "device";
  const std::string both =
      device ? "at the faster of its runs between CUDA events and its kernels' time under "
               "the profiler, the step's measure here (the events' span holds launch gaps too)"
             : "at the faster of its timed runs and its runs under the profiler, host time "
               "as the step's here";
  const std::string timed =
      device ? "GPU time between CUDA events, launch gaps included, against the "
               "profile's kernel time here"
             : "wall time without the profiler, against the profiled step's host time here";
  if (a.profiled == a.passes) return "; each pass " + both;
  if (a.profiled == 0) {
    return "; " + timed +
           " (the peak file has no runs under the profiler: peak adds them unless --profiled-runs 0, "
           "or on a GPU whose profiler records no kernels)";
  }
  return "; " + std::to_string(a.profiled) + " of the passes each " + both + ", the rest by " + timed;
}

// "**Layer rates at batch 64** ...": the GEMM layers' FLOPs over their time, together and the largest
// by time one by one, against the group's convolution peak where analyze was given one.
void write_layer_rates(std::ostream& out, const GroupAnalysis& g) {
  if (!g.layer_rates) return;
  const LayerRates& r = *g.layer_rates;
  const GroupProfile& p = *g.profile;
  out << "**Layer rates at batch " << r.batch_size << "**";
  if (g.fastest) out << " (the profiled batch size nearest the fastest, " << g.fastest->batch_size << ")";
  out << ": the convolution and linear layers did " << significant(r.gemm_gflop, 3) << " GFLOP per step in "
      << significant(r.gemm_ms, 3) << " ms, " << significant(r.gemm_tflops, 3) << " TFLOP/s";
  if (r.step_ms > 0) {
    out << ", " << significant(100 * r.gemm_ms / r.step_ms, 3) << "% of the profiled step's "
        << significant(r.step_ms, 3) << " ms; the rest went to the other layers (normalisation, activations, "
        << "pooling), the loss and the optimizer"
        << (p.basis == "device" ? ", and to the GPU's idle time between kernels" : "");
  }
  out << ".";
  if (r.layout_ms > 0) {
    out << " Of the layers' time, " << significant(r.layout_ms, 3) << " ms ("
        << significant(100 * r.layout_ms / r.gemm_ms, 3)
        << "%) went to cuDNN's conversions of tensors between NCHW and NHWC, for kernels that take the other "
           "layout than the tensors had (a sweep with --channels-last shows what the other layout saves).";
    if (r.alone && r.alone->layout_passes > 0 && r.alone->step_layout_ms > 0) {
      const LayersAlone& a = *r.alone;
      out << " Alone, under the profiler (`peak --model`), "
          << (a.layout_passes == static_cast<int>(r.layers.size())
                  ? std::string("the same passes")
                  : std::to_string(a.layout_passes) + " of the passes")
          << " convert " << significant(a.layout_ms, 3) << " ms against their "
          << significant(a.step_layout_ms, 3) << " ms here: ";
      if (a.layout_ms >= a.step_layout_ms)
        out << "the conversions come with the layers' own layout and kernels, not with the step.";
      else
        out << significant(100 * a.layout_ms / a.step_layout_ms, 3)
            << "% of them come with the layers' own layout and kernels, the rest with the step.";
    }
  }
  out << " A layer's FLOPs are its GEMMs' (a multiply-add is 2; its backward pass the weight gradient, and "
         "the input gradient for all but the first layer), so a layer that cuDNN runs by FFT or Winograd "
         "can show more than the roof.";
  if (r.alone) {
    const LayersAlone& a = *r.alone;
    out << " **Timed alone** (`batchscope peak --model`, " << a.from << "; each layer's own module at batch "
        << r.batch_size << alone_mode(r, p) << alone_measure(a, p) << "), "
        << (a.passes == static_cast<int>(r.layers.size())
                ? "the " + std::to_string(a.passes)
                : std::to_string(a.passes) + " of the " + std::to_string(r.layers.size()))
        << " passes take " << significant(a.ms, 3) << " ms against " << significant(a.step_ms, 3)
        << " ms here: the step runs them at " << significant(100 * a.ms / a.step_ms, 3)
        << "% of their rate alone. A layer far below its own rate alone is held back by the step (layout "
           "conversions, another algorithm, the kernels around it); one near it, by its shape.";
  }
  out << "\n\n";
  const std::optional<PeakEntry>& roof = r.roof;
  const bool alone = r.alone.has_value();
  const std::vector<const LayerRate*> order = largest_rates(r, kLayersTabled);
  const bool layouts = r.layout_ms > 0;
  out << "| layer | GFLOP | ms |" << (layouts ? " of it, layout conversions (ms) |" : "") << " TFLOP/s |";
  if (roof) {
    out << " % of the " << roof->precision << " convolution peak (" << significant(roof->median_tflops, 4)
        << " TFLOP/s, " << roof->file << ":" << roof->line << ") |";
  }
  const bool searched = alone && r.alone->searched;
  if (alone) out << " TFLOP/s alone | % of its rate alone |";
  if (searched) out << " TFLOP/s alone with cuDNN's search |";
  out << "\n|---|---:|---:|---:|" << (layouts ? "---:|" : "") << (roof ? "---:|" : "")
      << (alone ? "---:|---:|" : "") << (searched ? "---:|" : "") << "\n";
  const auto row = [&](const std::string& name, double gflop, double ms, double layout_ms, double tflops,
                       std::optional<double> alone_tflops, std::optional<double> searched_tflops) {
    out << "| " << name << " | " << significant(gflop, 3) << " | " << significant(ms, 3) << " |";
    if (layouts) out << " " << significant(layout_ms, 3) << " |";
    out << " " << significant(tflops, 3) << " |";
    if (roof) out << " " << significant(100 * tflops / roof->median_tflops, 3) << " |";
    if (alone && alone_tflops)
      out << " " << significant(*alone_tflops, 3) << " | " << significant(100 * tflops / *alone_tflops, 3)
          << " |";
    if (alone && !alone_tflops) out << " | |";
    if (searched) out << " " << (searched_tflops ? significant(*searched_tflops, 3) : std::string()) << " |";
    out << "\n";
  };
  for (const LayerRate* l : order) {
    row(pass_label(l->layer, l->pass), l->gflop, l->ms, l->layout_ms, l->tflops, l->alone_tflops,
        l->searched_tflops);
  }
  row("*all " + std::to_string(r.layers.size()) + " passes*", r.gemm_gflop, r.gemm_ms, r.layout_ms,
      r.gemm_tflops, all_alone_tflops(r), std::nullopt);
  out << "\n";
}

// The largest GEMM layers' TFLOP/s against batch size (the largest by time at the rates' batch size),
// and all of them together: where a layer's rate falls, its kernel changed or it ran out of work.
std::optional<PlotScript> layer_rates_plot(const GroupAnalysis& g) {
  if (!g.layer_rates || g.profile->batch_sizes.size() < 2) return std::nullopt;
  const LayerRates& r = *g.layer_rates;
  const GroupProfile& p = *g.profile;
  const std::vector<const LayerRate*> shown = largest_rates(r, kLayersPlotted - 1);
  // Each pass's time per batch size; its FLOPs grow with the batch from those at the rates' size.
  std::map<std::pair<std::string, std::string>, const LayerSeries*> series;
  for (const LayerSeries& l : p.layers) series[{l.layer, l.pass}] = &l;
  const auto ms_at = [&](const LayerRate& l, int64_t batch) {
    const auto found = series.find({l.layer, l.pass});
    return found == series.end() ? 0.0 : at(*found->second, batch);
  };
  const auto gflop_at = [&](const LayerRate& l, int64_t batch) {
    return l.gflop / static_cast<double>(r.batch_size) * static_cast<double>(batch);
  };
  // Timed alone (peak --model): each shown pass's rate alone, and all of them together where every pass
  // was, at each batch size the peak files time them at.
  const bool alone = std::any_of(r.layers.begin(), r.layers.end(),
                                 [](const LayerRate& l) { return !l.alone_by_batch.empty(); });
  const auto at_batch = [](const std::map<int64_t, double>& by_batch,
                           int64_t batch) -> std::optional<double> {
    const auto found = by_batch.find(batch);
    if (found == by_batch.end()) return std::nullopt;
    return found->second;
  };
  PlotScript plot{
      "layer_rates_" + g.id,
      std::string("# batch_size, all the GEMM layers' TFLOP/s, then each shown layer's") +
          (alone ? "; then all of them and each shown layer timed alone, where peak --model timed them"
                 : "") +
          "\n",
      ""};
  const auto value = [](std::optional<double> v) { return v ? gp_number(*v) : std::string("NaN"); };
  for (int64_t batch : p.batch_sizes) {
    double gflop = 0, ms = 0;
    for (const LayerRate& l : r.layers) {
      gflop += gflop_at(l, batch);
      ms += ms_at(l, batch);
    }
    plot.data += std::to_string(batch) + " " + (ms > 0 ? gp_number(gflop / ms) : "NaN");
    for (const LayerRate* l : shown) {
      const double layer_ms = ms_at(*l, batch);
      plot.data += " " + (layer_ms > 0 ? gp_number(gflop_at(*l, batch) / layer_ms) : "NaN");
    }
    if (alone) {
      plot.data += " " + value(at_batch(r.all_alone_by_batch, batch));
      for (const LayerRate* l : shown) plot.data += " " + value(at_batch(l->alone_by_batch, batch));
    }
    plot.data += "\n";
  }
  std::string& body = plot.body;
  body += "set title " +
          gp_string(g.label + ": TFLOP/s of the convolution and linear layers (" + p.basis + " time)") + "\n";
  body += "set ylabel 'TFLOP/s'\nset yrange [0:*]\nset key outside right top\n";
  body += x_range(p.batch_sizes.front(), p.batch_sizes.back());
  std::vector<std::string> items = {
      gp_string(plot.name + ".dat") +
      " using 1:2 with linespoints lw 3 pt 7 ps 0.6 lc rgb '#000000' title 'all of them'"};
  if (r.roof) {
    items.push_back(gp_number(r.roof->median_tflops) + " with lines dt 2 lw 1.5 lc rgb '#7f7f7f' title " +
                    gp_string(r.roof->precision + " convolution peak"));
  }
  for (std::size_t k = 0; k < shown.size(); ++k) {
    items.push_back("'' using 1:" + std::to_string(k + 3) + " with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '" +
                    kColours[k % std::size(kColours)] + "' title " +
                    gp_string(pass_label(shown[k]->layer, shown[k]->pass)));
  }
  if (alone) {
    // Open circles in each pass's colour: where the pass would be run alone, joined by a dashed line
    // where peak timed it at neighbouring profiled sizes.
    const std::size_t first = shown.size() + 3;
    items.push_back("'' using 1:" + std::to_string(first) +
                    " with linespoints dt 2 pt 6 ps 1.8 lw 2 lc rgb '#000000' title 'timed alone (circles)'");
    for (std::size_t k = 0; k < shown.size(); ++k) {
      items.push_back("'' using 1:" + std::to_string(first + 1 + k) +
                      " with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '" +
                      kColours[k % std::size(kColours)] + "' notitle");
    }
  }
  body += join_plot(items);
  return plot;
}

}  // namespace

std::vector<PlotScript> profile_plots(const Analysis& analysis) {
  std::vector<PlotScript> out;
  for (const GroupAnalysis& g : analysis.groups) {
    if (!g.profile) continue;
    if (auto plot = layers_plot(g)) out.push_back(std::move(*plot));
    if (auto plot = layer_rates_plot(g)) out.push_back(std::move(*plot));
  }
  return out;
}

void write_profile_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                           const std::string& plot_dir) {
  if (!g.profile) return;
  const GroupProfile& p = *g.profile;
  out << "### Where the time goes\n\n";
  out << p.batch_sizes.size() << " batch size(s) profiled (" << p.method << "). Times are "
      << (p.basis == "device" ? "the GPU time of the kernels each layer launched"
                              : "the host time each layer owns, its nested layers left out")
      << ", per step, from extra profiled steps run after the timed ones.\n\n";
  embed_plot(out, plots, plot_dir, "layers_" + g.id, "time per layer vs batch size, stacked");
  if (!p.causes.empty()) {
    out << "**Why it jumps:**\n\n";
    for (const JumpCause& c : p.causes) out << "- " << (c.drop ? "drop " : "") << c.summary << "\n";
    out << "\n";
  }
  std::vector<const LayerSeries*> rest;
  const std::vector<const LayerSeries*> shown = largest_layers(p, kLayersTabled, rest);
  const std::vector<int64_t> sizes = tabled_sizes(p);
  out << "| layer (ms per step) |";
  for (int64_t b : sizes) out << " " << b << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < sizes.size(); ++i) out << "---:|";
  out << "\n";
  for (const LayerSeries* l : shown) {
    out << "| " << label_of(*l) << " |";
    for (int64_t b : sizes) out << " " << significant(at(*l, b), 3) << " |";
    out << "\n";
  }
  if (!rest.empty()) {
    out << "| " << rest.size() << " other layers |";
    for (int64_t b : sizes) {
      double sum = 0;
      for (const LayerSeries* l : rest) sum += at(*l, b);
      out << " " << significant(sum, 3) << " |";
    }
    out << "\n";
  }
  out << "| *profiled step (wall)* |";
  for (int64_t b : sizes) out << " " << significant(p.step_ms.count(b) ? p.step_ms.at(b) : 0.0, 3) << " |";
  out << "\n\n";
  write_layer_rates(out, g);
  embed_plot(out, plots, plot_dir, "layer_rates_" + g.id,
             "TFLOP/s of the convolution and linear layers vs batch size");
}

void write_prediction(std::ostream& out, const GroupAnalysis& g) {
  if (!g.prediction) {
    if (!g.no_prediction.empty()) out << "**Predicted jumps:** none made (" << g.no_prediction << ").\n\n";
    return;
  }
  const Prediction& p = *g.prediction;
  const auto list = [](const std::vector<int64_t>& sizes) {
    return sizes.empty() ? std::string("none") : joined_numbers(sizes, ", ");
  };
  out << "**Predicted jumps** (GEMM tiles and waves on " << p.sms << " SMs, tiles from " << p.tiles_from << "):";
  if (p.jumps.empty()) out << " none in the measured range.";
  out << "\n\n";
  for (const PredictedJump& j : p.jumps) {
    out << "- " << j.from_batch << "→" << j.to_batch << ": +" << significant(j.step_pct, 2) << "% in the model";
    if (!j.layers.empty()) {
      out << ", a new wave in";
      for (std::size_t i = 0; i < j.layers.size(); ++i) out << (i == 0 ? " " : ", ") << j.layers[i];
    }
    out << "\n";
  }
  out << "\nAgainst the measured jumps (within one batch size): " << p.matched << " matched, agreement (F1) "
      << significant(p.agreement, 2) << " (precision " << significant(p.precision, 2) << ", recall "
      << significant(p.recall, 2) << "); predicted only: " << list(p.predicted_only)
      << "; measured only: " << list(p.measured_only) << ".\n\n";
}

void write_transfer_verdicts(std::ostream& out, const Analysis& analysis) {
  if (analysis.transfer_verdicts.empty()) return;
  out << "## Do the jumps come from the copy to the device?\n\n";
  for (const TransferVerdict& v : analysis.transfer_verdicts) {
    const auto list = [](const std::vector<int64_t>& sizes) {
      return sizes.empty() ? std::string("none") : joined_numbers(sizes, ", ");
    };
    out << "- " << v.included_label << " (copy timed) against " << v.excluded_label
        << " (data on the device): jumps before " << list(v.with_copy) << " with the copy, before "
        << list(v.on_device) << " without. **" << v.verdict << ".**\n";
  }
  out << "\n";
}

}  // namespace batchscope
