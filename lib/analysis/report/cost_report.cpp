#include "lib/analysis/report/cost_report.h"

#include <algorithm>
#include <map>
#include <vector>

#include "lib/analysis/report/report_markdown.h"
#include "lib/common/words.h"

namespace batchscope {
namespace {

std::string dollars(double usd) { return "$" + significant(usd, 3); }

const PointCost* cost_at(const GroupCost& cost, int64_t batch) {
  for (const PointCost& c : cost.points) {
    if (c.batch_size == batch) return &c;
  }
  return nullptr;
}

std::string cost_cell(const GroupCost& cost, std::optional<int64_t> batch) {
  if (!batch) return "–";
  const PointCost* c = cost_at(cost, *batch);
  return std::to_string(*batch) + (c ? " (" + dollars(c->usd_per_million_samples) + ")" : "");
}

}  // namespace

void write_cost_terminal(std::ostream& out, const GroupAnalysis& g) {
  if (!g.cost || !g.cost->cheapest) return;
  out << "  cheapest: batch " << g.cost->cheapest->batch_size << ", "
      << dollars(g.cost->cheapest->usd_per_million_samples) << " per million samples at "
      << dollars(g.cost->usd_per_hour) << "/h\n";
}

void write_cost_best(std::ostream& out, const GroupAnalysis& g) {
  if (!g.cost || !g.cost->cheapest) return;
  const PointCost& c = *g.cost->cheapest;
  out << "- cheapest: batch " << c.batch_size << ", " << dollars(c.usd_per_million_samples)
      << " per million samples at $" << significant(g.cost->usd_per_hour, 3) << "/h";
  if (c.usd_per_epoch)
    out << ", " << dollars(*c.usd_per_epoch) << " per epoch of " << *g.cost->epoch_samples << " samples";
  if (g.fastest && g.fastest->batch_size == c.batch_size)
    out << " (the fastest too: at one price per hour, cost follows samples/s)";
  out << "\n";
}

namespace {

// How much longer the fastest batch size (in samples/s) takes to an accuracy than the best: "" where they
// are the same size.
std::string fastest_against_best(const GroupAnalysis& g) {
  const GroupTimeToAccuracy& t = *g.time_to_accuracy;
  if (!g.fastest || g.fastest->batch_size == t.best->batch_size) return "";
  for (const PointTimeToAccuracy& p : t.points) {
    if (p.batch_size == g.fastest->batch_size)
      return "; the fastest in samples/s, batch " + std::to_string(p.batch_size) + ", takes " +
             significant(p.relative_time, 3) + "× as long";
  }
  return "";
}

}  // namespace

void write_time_to_accuracy_best(std::ostream& out, const GroupAnalysis& g) {
  if (!g.time_to_accuracy || !g.time_to_accuracy->best) return;
  const GroupTimeToAccuracy& t = *g.time_to_accuracy;
  out << "- least time to an accuracy, with B_noise " << samples_text(t.noise.b_noise) << " (" << t.noise.from
      << "): batch " << t.best->batch_size << ", " << significant(t.best->steps_factor, 3)
      << "× the fewest steps (S_min (1 + B_noise / B), McCandlish et al.)" << fastest_against_best(g) << "\n";
}

void write_time_to_accuracy_terminal(std::ostream& out, const GroupAnalysis& g) {
  if (!g.time_to_accuracy || !g.time_to_accuracy->best) return;
  const GroupTimeToAccuracy& t = *g.time_to_accuracy;
  out << "  least time to an accuracy (B_noise " << samples_text(t.noise.b_noise) << "): batch "
      << t.best->batch_size << fastest_against_best(g) << "\n";
}

void write_cost_section(std::ostream& out, const Analysis& a) {
  std::vector<const GroupAnalysis*> priced;
  for (const GroupAnalysis& g : a.groups) {
    if (g.cost && g.cost->cheapest) priced.push_back(&g);
  }
  if (priced.empty() && a.unpriced.empty()) return;
  out << "## What it costs\n\n";
  std::stable_sort(priced.begin(), priced.end(), [](const GroupAnalysis* x, const GroupAnalysis* y) {
    return x->cost->cheapest->usd_per_million_samples < y->cost->cheapest->usd_per_million_samples;
  });
  if (!priced.empty()) {
    // Against the cheapest group of the same workload (model, phase, input, classes, data): a training
    // group is not set against an inference one.
    std::map<std::string, double> cheapest_of_work;
    for (const GroupAnalysis* g : priced)
      cheapest_of_work.emplace(g->workload.dump(), g->cost->cheapest->usd_per_million_samples);
    out << "$ per million samples = price per hour × median step time / batch size; an epoch is ⌈samples / "
           "batch⌉ "
           "steps at the median step time.\n\n";
    out << "| group | $/h (from) | cheapest batch | $ per million samples | × cheapest of the same work | $ "
           "per epoch | "
           "fastest batch ($/M) | most efficient batch ($/M) |\n|---|---|---:|---:|---:|---:|---|---|\n";
    for (const GroupAnalysis* g : priced) {
      const GroupCost& cost = *g->cost;
      const PointCost& c = *cost.cheapest;
      std::optional<int64_t> efficient;
      if (g->energy && g->energy->most_efficient) efficient = g->energy->most_efficient->batch_size;
      out << "| " << g->label << " | " << significant(cost.usd_per_hour, 3) << " (" << cost.price_from
          << ") | " << c.batch_size << " | " << dollars(c.usd_per_million_samples) << " | "
          << significant(c.usd_per_million_samples / cheapest_of_work.at(g->workload.dump()), 3) << "× | "
          << (c.usd_per_epoch ? dollars(*c.usd_per_epoch) : std::string("–")) << " | "
          << cost_cell(cost, g->fastest ? std::optional<int64_t>(g->fastest->batch_size) : std::nullopt)
          << " | " << cost_cell(cost, efficient) << " |\n";
    }
    out << "\n";
  }
  if (!a.unpriced.empty()) {
    out << "No price was given for:";
    for (std::size_t i = 0; i < a.unpriced.size(); ++i) out << (i ? "; " : " ") << a.unpriced[i];
    out << ".\n\n";
  }
}

}  // namespace batchscope
