// batchscope's measured step against PyTorch-in-Python's, on the same backend, model, batch, phase,
// optimizer (SGD, Adam or AdamW, each in a loop over the parameters or multi-tensor) and threads, on the CPU
// or a GPU (--device cuda:N: both sides time each step between two CUDA events, as a sweep does).
//
// Each side is a child process speaking one line protocol (bench/pytorch_reference.py describes it):
// PyTorch-in-Python, and this program itself in --worker mode, which runs the sweep's own timed loop
// (run_timed_steps on a Workload, with the progress line told of every step). Both are bound to the
// same CPUs and only one runs at a time: the other is stopped with all its threads. For each batch
// size both warm up, then take turns of timed steps, alternating who goes first, so that the machine's
// changing speed hits both alike. A round is one pair of fresh processes through every batch size;
// several rounds show how far one run's answer can be trusted. Per case (model, phase, threads) it
// prints a table: the median step time of each side, the median of the rounds' ratios
// batchscope/PyTorch and their range, and the goal. An empty batch is timed as well, to show how much
// of PyTorch's step is there without samples (without_empty).
#include <sys/mman.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/step_process.h"
#include "lib/common/statistics.h"
#include "lib/common/words.h"
#include "lib/config/batch_spec.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/cpu_threads.h"
#include "lib/sweep/progress.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"

namespace {

using batchscope::median;
using batchscope::bench::StepProcess;
using Json = nlohmann::json;

struct Model {
  std::string name, input;
  int64_t classes;
};
const std::vector<Model> kModels = {{"mnist_cnn", "1,28,28", 10}, {"vgg16", "3,32,32", 10}};

// A training case's optimizer: PyTorch's class of that name on the Python side, batchscope's optimizer
// kind on the other, both with PyTorch's defaults; `foreach` picks the multi-tensor step on both.
struct Optimizer {
  std::string name;
  bool foreach = false;
  std::string label() const { return name + (foreach ? "+foreach" : ""); }
};

Optimizer find_optimizer(const std::string& text) {
  const std::size_t plus = text.find('+');
  Optimizer o{text.substr(0, plus), plus != std::string::npos};
  const bool known = o.name == "sgd" || o.name == "adam" || o.name == "adamw";
  if (!known || (o.foreach && text.substr(plus) != "+foreach")) {
    throw std::runtime_error("--optimizers " + text +
                             ": use sgd, adam or adamw, each alone or with +foreach");
  }
  return o;
}

// The optimizer's type and the settings its step depends on, as the reference describes PyTorch's.
Json describe(const batchscope::OptimizerConfig& o) {
  using batchscope::OptimizerKind;
  Json j = {{"type", o.kind == OptimizerKind::AdamW  ? "adamw"
                     : o.kind == OptimizerKind::Adam ? "adam"
                                                     : "sgd"},
            {"lr", o.lr},
            {"weight_decay", o.weight_decay},
            {"foreach", o.foreach.value_or(false)}};
  if (o.kind == OptimizerKind::Adam || o.kind == OptimizerKind::AdamW) {
    j["betas"] = {o.beta1, o.beta2};
    j["eps"] = o.eps;
  }
  return j;
}

const Model& find_model(const std::string& name) {
  for (const Model& m : kModels) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no model " + name + " in the benchmark: use mnist_cnn or vgg16");
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::vector<int64_t> shape_of(const std::string& text) {
  std::vector<int64_t> shape;
  for (const std::string& s : split(text)) shape.push_back(std::stoll(s));
  return shape;
}

// --device: cpu, or a CUDA device this build and machine have.
torch::Device parse_device(const std::string& text) {
  std::optional<torch::Device> device;
  try {
    device.emplace(text);
  } catch (const std::exception&) {
  }
  if (!device || !(device->is_cpu() || device->is_cuda())) {
    throw std::runtime_error("--device " + text + ": give cpu or cuda:N (cuda:0, the first GPU)");
  }
  if (device->is_cuda()) {
    const int64_t gpus = torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
    if (gpus == 0) {
      throw std::runtime_error("--device " + text +
                               ": this machine (or this build of LibTorch) has no CUDA GPU; "
                               "give --device cpu");
    }
    if (device->index() >= gpus) {
      throw std::runtime_error("--device " + text + ": there are " + std::to_string(gpus) +
                               " GPU(s), cuda:0 to cuda:" + std::to_string(gpus - 1));
    }
    if (!device->has_index()) device->set_index(0);
  }
  return *device;
}

// --worker: batchscope's side of the protocol.
int run_worker(const cxxopts::ParseResult& args) {
  torch::set_num_threads(std::stoi(args["threads"].as<std::string>()));
  batchscope::ExperimentConfig e;
  e.name = "bench";
  e.model = args["model"].as<std::string>();
  e.input_shape = shape_of(args["input"].as<std::string>());
  e.classes = args["classes"].as<int64_t>();
  e.phase = args["phase"].as<std::string>() == "infer" ? batchscope::Phase::Infer : batchscope::Phase::Train;
  e.device = args["device"].as<std::string>();
  const Optimizer optimizer{args["optimizer"].as<std::string>(), args["foreach"].as<int>() != 0};
  e.optimizer.kind = optimizer.name == "adamw"  ? batchscope::OptimizerKind::AdamW
                     : optimizer.name == "adam" ? batchscope::OptimizerKind::Adam
                                                : batchscope::OptimizerKind::SGD;
  if (e.optimizer.kind == batchscope::OptimizerKind::AdamW)
    e.optimizer.weight_decay = batchscope::kAdamWWeightDecay;
  e.optimizer.foreach = optimizer.foreach;
  const torch::Device device(e.device);
  // A CPU sweep counts LibTorch's CPU tensors for each size's peak memory: so does its side here.
  if (device.is_cpu()) batchscope::cpu_memory::install();
  batchscope::Workload workload(e, device);
  // The sweep's timer for the device: CUDA events on a GPU, the monotonic clock on the CPU.
  const std::unique_ptr<batchscope::StepTimer> timer = batchscope::make_step_timer(device);
  // The sweep's progress line, told of every step as in a sweep; drawn into a stream nobody reads, so
  // that its cost (a clock read a step, a redraw every 0.25 s) is in batchscope's times.
  std::ostringstream discarded;
  batchscope::Progress progress(discarded, /*enabled=*/true);
  int64_t parameters = 0;
  for (const auto& p : workload.network().parameters()) parameters += p.numel();
  std::cout << Json{{"torch", TORCH_VERSION},
                    {"device", device.str()},
                    {"timer", timer->method()},
                    {"threads", torch::get_num_threads()},
                    {"interop_threads", torch::get_num_interop_threads()},
                    {"parameters", parameters},
                    {"optimizer", workload.training() ? describe(e.optimizer) : Json(nullptr)}}
                   .dump()
            << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "batch") {
      int64_t batch = 0;
      int warmup = 0;
      words >> batch >> warmup;
      workload.prepare_batch(batch);
      progress.begin_sweep({{e.name, batch, 1 << 30}});
      progress.begin_size(e.name, 1, 1, batch, 0, 1 << 30);
      discarded.str("");
      // Timed as the reference times its warm-up, to size the turns by the last (warm) step: the first
      // pays for first-time allocations and kernel set-up, and would make a turn one or two steps long.
      const std::vector<double> times = batchscope::run_timed_steps(workload, *timer, warmup).times_ms;
      std::printf("ready %.6f\n", times.empty() ? 0.0 : times.back());
      std::fflush(stdout);
    } else if (command == "steps") {
      int n = 0;
      words >> n;
      std::cout
          << Json(batchscope::run_timed_steps(workload, *timer, n, &progress.observer()).times_ms).dump()
          << std::endl;
      discarded.str("");
    } else {
      break;
    }
  }
  return 0;
}

struct Settings {
  std::vector<int64_t> batches;
  int rounds, turns, warmup, max_steps, confirm_rounds;
  double turn_ms;
  double batch1_goal = 0.90, goal = 1.00;  // --goals
  std::string python, reference, self;
  std::string device = "cpu";  // --device: cpu or cuda:N, both sides
};

// A batch size's measurements; batch 0 is the empty batch (see without_empty).
struct Row {
  int64_t batch = 0;
  int steps_per_turn = 0;
  std::vector<double> py, bs, round_ratios;
  std::vector<double> py_round_medians, bs_round_medians;
};

// What is left of PyTorch's step at a batch size without its step on the empty batch, as a share of it,
// from one round's medians: (py_b - py_0) / py_b. It shows how much of a step is there with no samples
// (Python's module calls and optimizer loop; in training, kernels too, the optimizer's update of every
// parameter). It is no bound on the ratio: an empty batch skips work that one sample's step does, in
// Python as in the operators (mnist_cnn's inference at batch 1 on the CPU: batchscope saved 0.048 ms of
// a 1.18 ms step, where PyTorch's whole empty step took 0.034 ms), so it informs and does not judge.
double without_empty(double py_empty_ms, double py_ms) { return (py_ms - py_empty_ms) / py_ms; }

// The CPUs a case with `threads` threads runs on: the last ones this process may use.
std::vector<int> cpus_for(int threads) {
  const std::vector<int> allowed = batchscope::cpu_threads::allowed_cpus();
  if (threads >= static_cast<int>(allowed.size())) return allowed;
  return {allowed.end() - threads, allowed.end()};
}

std::string cpu_list(const std::vector<int>& cpus) { return batchscope::joined_numbers(cpus, ","); }

// Maps `bytes` (at most 80% of the memory available now) with every page faulted in, then unmaps it; the
// bytes touched. A virtual machine backs a guest page the first time the guest touches it, slowly: on the
// development VM, of two processes taking turns at vgg16 training (411 MB of gradients mapped afresh each
// step), the one started second took ~300 ms longer on one step in three (1.05-1.26 s against 0.81-0.95 s),
// whichever side it was, and two copies of the same process differed the same way; after 20 GiB had
// been touched once, 1 step in 40 did. Touched once before the first case, those pages are backed and
// handed out again to both sides.
std::size_t touch_host_memory(std::size_t bytes) {
  const long page = sysconf(_SC_PAGESIZE), available = sysconf(_SC_AVPHYS_PAGES);
  if (page > 0 && available > 0) {
    bytes = std::min(bytes, static_cast<std::size_t>(0.8 * static_cast<double>(page) * static_cast<double>(available)));
  }
  if (bytes == 0) return 0;
  void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (block == MAP_FAILED) return 0;
  munmap(block, bytes);
  return bytes;
}

// One round: a fresh pair of processes through every batch size.
void run_round(const Settings& s, const Model& model, const std::string& phase, const Optimizer& optimizer,
               int threads, int round, std::vector<Row>& rows, Json& headers) {
  const std::vector<int> cpus = cpus_for(threads);
  const std::vector<std::string> common = {"--model",     model.name,
                                           "--input",     model.input,
                                           "--classes",   std::to_string(model.classes),
                                           "--phase",     phase,
                                           "--threads",   std::to_string(threads),
                                           "--optimizer", optimizer.name,
                                           "--foreach",   optimizer.foreach ? "1" : "0",
                                           "--device",    s.device};
  std::vector<std::string> py_argv = {s.python, s.reference};
  std::vector<std::string> bs_argv = {s.self, "--worker"};
  py_argv.insert(py_argv.end(), common.begin(), common.end());
  bs_argv.insert(bs_argv.end(), common.begin(), common.end());
  // The side started and prepared second was seen to get pages its machine had never handed out (see
  // touch_host_memory), so which side goes first alternates by round, as the turns do.
  const bool python_first = round % 2 == 0;
  auto first = std::make_unique<StepProcess>(python_first ? py_argv : bs_argv, cpus);
  first->pause();
  auto second = std::make_unique<StepProcess>(python_first ? bs_argv : py_argv, cpus);
  second->pause();
  StepProcess& py = python_first ? *first : *second;
  StepProcess& bs = python_first ? *second : *first;
  for (const auto* side : {&py, &bs}) {
    if (side->header().value("device", std::string()) != s.device) {
      throw std::runtime_error("a side runs on " + side->header().dump() + " instead of " + s.device);
    }
    if (side->header().value("threads", 0) != threads) {
      throw std::runtime_error("a side runs " + side->header().dump() + " instead of " + std::to_string(threads) +
                               " thread(s)");
    }
  }
  if (py.header().value("parameters", 0LL) != bs.header().value("parameters", 0LL)) {
    throw std::runtime_error("the models differ: PyTorch's has " + py.header().value("parameters", Json()).dump() +
                             " parameters, batchscope's " + bs.header().value("parameters", Json()).dump());
  }
  if (py.header().value("optimizer", Json()) != bs.header().value("optimizer", Json())) {
    throw std::runtime_error("the optimizers differ: PyTorch's is " +
                             py.header().value("optimizer", Json()).dump() + ", batchscope's " +
                             bs.header().value("optimizer", Json()).dump());
  }
  headers = {{"pytorch", py.header()}, {"batchscope", bs.header()}};
  for (Row& row : rows) {
    double warm_ms = 0;
    for (StepProcess* side : {first.get(), second.get()}) {
      warm_ms = std::max(warm_ms, side->prepare(row.batch, s.warmup));
      side->pause();
    }
    if (round == 0) {
      row.steps_per_turn = static_cast<int>(std::clamp(std::ceil(s.turn_ms / std::max(warm_ms, 1e-3)), 1.0,
                                                       static_cast<double>(s.max_steps)));
    }
    std::vector<double> py_round, bs_round;
    for (int turn = 0; turn < s.turns; ++turn) {
      const bool python_first = (turn + round) % 2 == 0;
      for (int k = 0; k < 2; ++k) {
        const bool python = python_first == (k == 0);
        StepProcess& side = python ? py : bs;
        const std::vector<double> times = side.steps(row.steps_per_turn);
        side.pause();
        (python ? py_round : bs_round).insert((python ? py_round : bs_round).end(), times.begin(), times.end());
      }
    }
    row.round_ratios.push_back(median(bs_round) / median(py_round));
    row.py_round_medians.push_back(median(py_round));
    row.bs_round_medians.push_back(median(bs_round));
    row.py.insert(row.py.end(), py_round.begin(), py_round.end());
    row.bs.insert(row.bs.end(), bs_round.begin(), bs_round.end());
  }
}

// What a case's goals came to.
struct Verdicts {
  int missed = 0;          // goals missed in every round
  int not_told_apart = 0;  // goals missed by the rounds' median but met by one round or more
  int confirmed = 0;       // sizes given more rounds because every round missed
};

// A batch size judged by its rounds.
struct Judgement {
  double ratio = 0, low = 0, high = 0, without_empty = 0;
  std::vector<double> round_without_empty;
  double goal = 0;
  bool met = false, missed = false;
  std::string verdict() const { return met ? "met" : missed ? "missed" : "not told apart"; }
};

Judgement judge(const Settings& s, const Row& row, const Row& empty) {
  Judgement j;
  j.ratio = median(row.round_ratios);
  const auto [low, high] = std::minmax_element(row.round_ratios.begin(), row.round_ratios.end());
  j.low = *low;
  j.high = *high;
  for (std::size_t r = 0; r < row.py_round_medians.size(); ++r) {
    j.round_without_empty.push_back(without_empty(empty.py_round_medians.at(r), row.py_round_medians[r]));
  }
  j.without_empty = median(j.round_without_empty);
  // The goals: 0.90 at batch 1 (a tool without Python's per-step work should save at least 10% there),
  // 1.00 elsewhere (never slower), as stated, whatever the empty batch shows.
  j.goal = row.batch == 1 ? s.batch1_goal : s.goal;
  // Judged by the rounds, as the README asks a reader to: a goal is missed where every round missed
  // it. Where the median misses it and a round meets it, the two sides are equal within what this
  // machine tells apart. The rounds' range holds the median of the rounds' distribution with
  // probability 1 - 2^(1-n) for n rounds, whatever the distribution: 75% at 3 rounds, 98% at 6.
  j.met = j.ratio <= j.goal;
  j.missed = j.low > j.goal;
  return j;
}

// One table.
Verdicts run_case(const Settings& s, const Model& model, const std::string& phase, const Optimizer& optimizer,
                  int threads, Json& report) {
  // The empty batch first: what a step costs with no samples (see without_empty).
  std::vector<Row> rows{Row{0, 0, {}, {}, {}, {}, {}}};
  for (int64_t b : s.batches) rows.push_back(Row{b, 0, {}, {}, {}, {}, {}});
  Json headers;
  for (int round = 0; round < s.rounds; ++round)
    run_round(s, model, phase, optimizer, threads, round, rows, headers);
  // A size that missed in every round may be a real loss or a few rounds that fell the same way (with
  // 3 rounds, one size in 8 where the two sides are equal): it runs --confirm-rounds more, with the
  // empty batch, and is judged by all of its rounds.
  Verdicts verdicts;
  std::vector<std::size_t> doubtful;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (judge(s, rows[i], rows.front()).missed) doubtful.push_back(i);
  }
  if (s.confirm_rounds > 0 && !doubtful.empty()) {
    std::vector<Row> again{rows.front()};
    for (std::size_t i : doubtful) again.push_back(rows[i]);
    for (int k = 0; k < s.confirm_rounds; ++k)
      run_round(s, model, phase, optimizer, threads, s.rounds + k, again, headers);
    rows.front() = again.front();
    for (std::size_t k = 0; k < doubtful.size(); ++k) rows[doubtful[k]] = again[k + 1];
    verdicts.confirmed = static_cast<int>(doubtful.size());
  }

  const std::string thread_count = batchscope::counted(threads, "thread");
  const std::string round_count = batchscope::counted(s.rounds, "round");
  const std::string turn_count = batchscope::counted(s.turns, "alternating turn");
  std::printf(
      "\n%s %s, %s, %s on %s: PyTorch %s in Python vs batchscope on LibTorch %s\n"
      "%s of fresh processes, each %s per batch size; the idle side stopped\n",
      model.name.c_str(), model.input.c_str(),
      (phase == "train" ? "train with " + optimizer.label() : phase).c_str(), thread_count.c_str(),
      (s.device == "cpu" ? "CPU " + cpu_list(cpus_for(threads))
                         : s.device + " (host CPU " + cpu_list(cpus_for(threads)) + "), timed by CUDA events")
          .c_str(),
      headers["pytorch"].value("torch", "?").c_str(), TORCH_VERSION, round_count.c_str(), turn_count.c_str());
  if (verdicts.confirmed > 0) {
    std::printf("%s missed in every round, run again for %s\n", batchscope::counted(verdicts.confirmed, "size").c_str(),
                batchscope::counted(s.confirm_rounds, "round").c_str());
  }
  std::printf("%6s %6s %12s %14s %8s %18s %9s %6s %s\n", "batch", "steps", "pytorch ms", "batchscope ms",
              "ratio", "rounds' range", "w/o empty", "goal", "");
  Json table = Json::array();
  for (const Row& row : rows) {
    const double ratio = median(row.round_ratios);
    const auto [low, high] = std::minmax_element(row.round_ratios.begin(), row.round_ratios.end());
    Json entry = {{"batch", row.batch},
                  {"steps_per_turn", row.steps_per_turn},
                  {"pytorch_median_ms", median(row.py)},
                  {"batchscope_median_ms", median(row.bs)},
                  {"ratio", ratio},
                  {"round_ratios", row.round_ratios},
                  // Every timed step in the order it ran (round by round, turn by turn, a turn's steps
                  // together), so that a cost that comes with a turn's first steps can be seen.
                  {"pytorch_steps_ms", row.py},
                  {"batchscope_steps_ms", row.bs}};
    if (row.batch == 0) {
      std::printf("%6s %6d %12.4f %14.4f %8.3f %9.3f-%-8.3f %9s %6s %s\n", "empty", row.steps_per_turn,
                  median(row.py), median(row.bs), ratio, *low, *high, "", "", "(no samples: not judged)");
      std::fflush(stdout);
      entry["goal"] = nullptr;
      table.push_back(entry);
      continue;
    }
    const Judgement j = judge(s, row, rows.front());
    verdicts.missed += j.missed;
    verdicts.not_told_apart += !j.met && !j.missed;
    std::string verdict = j.missed ? "MISSED" : j.verdict();
    char shown[96];
    if (row.round_ratios.size() > static_cast<std::size_t>(s.rounds)) {
      std::snprintf(shown, sizeof shown, " (%zu rounds)", row.round_ratios.size());
      verdict += shown;
    }
    std::printf("%6lld %6d %12.4f %14.4f %8.3f %9.3f-%-8.3f %9.3f %6.2f %s\n",
                static_cast<long long>(row.batch), row.steps_per_turn, median(row.py), median(row.bs), ratio,
                *low, *high, j.without_empty, j.goal, verdict.c_str());
    std::fflush(stdout);
    entry["without_empty"] = j.without_empty;
    entry["round_without_empty"] = j.round_without_empty;
    entry["goal"] = j.goal;
    entry["verdict"] = j.verdict();
    table.push_back(entry);
  }
  std::printf(
      "w/o empty: (PyTorch's step - its step on an empty batch) / PyTorch's step: how much of it is there "
      "only with samples.\nNot a bound on the ratio (an empty batch skips work a sample's step does) "
      "and not judged.\n");
  report.push_back({{"model", model.name},
                    {"input", model.input},
                    {"device", s.device},
                    {"phase", phase},
                    {"optimizer", phase == "train" ? Json(optimizer.label()) : Json(nullptr)},
                    {"threads", threads},
                    {"cpus", cpus_for(threads)},
                    {"rounds", s.rounds},
                    {"confirm_rounds", s.confirm_rounds},
                    {"processes", headers},
                    {"rows", table}});
  return verdicts;
}

}  // namespace

int main(int argc, char** argv) {
  const int all = batchscope::cpu_threads::usable_physical_cores(batchscope::cpu_threads::allowed_cpus());
  cxxopts::Options options(
      "bench_overhead",
      "batchscope's step against PyTorch-in-Python's on the same LibTorch, model, batch and "
      "threads, on the CPU or a GPU.\nGoals: ratio batchscope/PyTorch <= 0.90 at batch 1, <= 1.00 at every "
      "other batch size. A size is judged by its rounds:\nmet by their median, missed where "
      "every round misses (and still does after --confirm-rounds more), not told apart\n"
      "otherwise; exit code 1 where a goal is missed. An empty batch is timed too, and not judged: "
      "the column\n\"w/o empty\" is the share of PyTorch's step left without its step on the empty batch.");
  // clang-format off
  options.add_options()
      ("models", "mnist_cnn (1x28x28) and/or vgg16 (3x32x32)", cxxopts::value<std::string>()->default_value("mnist_cnn,vgg16"))
      ("phases", "train and/or infer", cxxopts::value<std::string>()->default_value("train,infer"))
      ("optimizers", "the training cases' optimizers, each a case of its own: sgd, adam, adamw, each alone (a loop "
                     "over the parameters) or with +foreach (multi-tensor), e.g. adam,adam+foreach",
       cxxopts::value<std::string>()->default_value("sgd"))
      ("threads", "thread counts, each a case of its own; \"all\" is one per usable physical core (" +
                  std::to_string(all) + " here)", cxxopts::value<std::string>()->default_value("1,all"))
      ("batch", "batch sizes", cxxopts::value<std::string>()->default_value("1,2,4,8,16,32,64,128,256"))
      ("rounds", "pairs of fresh processes per case", cxxopts::value<int>()->default_value("3"))
      ("goals", "the goals: at batch 1, and at every other size", cxxopts::value<std::string>()->default_value("0.90,1.00"))
      ("confirm-rounds", "more rounds for a size that missed its goal in every round, before it is judged",
       cxxopts::value<int>()->default_value("3"))
      ("turns", "timed turns each side takes per batch size and round", cxxopts::value<int>()->default_value("4"))
      ("turn-ms", "a turn's length: its steps are as many as fill it", cxxopts::value<double>()->default_value("250"))
      ("max-steps", "the most timed steps in a turn", cxxopts::value<int>()->default_value("50"))
      ("warmup", "untimed steps per batch size and round", cxxopts::value<int>()->default_value("3"))
      ("json", "also write the tables to this JSON file", cxxopts::value<std::string>())
      ("touch-gib", "GiB of host memory (at most 80% of what is available) touched once before the first case, so "
                    "that neither side is handed pages the machine has never given out; 0 touches none",
       cxxopts::value<double>()->default_value("8"))
      ("glibc-default", "leave glibc's malloc to move its mmap and trim thresholds as it likes (see the README)")
      ("python", "the Python with PyTorch", cxxopts::value<std::string>()->default_value("/usr/bin/python3"))
      ("reference", "the reference script", cxxopts::value<std::string>()->default_value("bench/pytorch_reference.py"))
      ("device", "cpu, or cuda:N: both sides' steps on that GPU, each timed between two CUDA events (the timer of a "
                 "sweep there), the device synchronised after each step", cxxopts::value<std::string>()->default_value("cpu"))
      ("worker", "internal: run batchscope's side of the protocol")
      ("model", "internal (--worker)", cxxopts::value<std::string>()->default_value("mnist_cnn"))
      ("input", "internal (--worker)", cxxopts::value<std::string>()->default_value("1,28,28"))
      ("classes", "internal (--worker)", cxxopts::value<int64_t>()->default_value("10"))
      ("phase", "internal (--worker)", cxxopts::value<std::string>()->default_value("train"))
      ("optimizer", "internal (--worker)", cxxopts::value<std::string>()->default_value("sgd"))
      ("foreach", "internal (--worker)", cxxopts::value<int>()->default_value("0"))
      ("h,help", "this help");
  // clang-format on
  try {
    const auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::cout << options.help();
      return 0;
    }
    if (args.count("worker")) return run_worker(args);
    Settings s;
    s.batches = batchscope::parse_batch_spec(args["batch"].as<std::string>());
    s.rounds = std::max(1, args["rounds"].as<int>());
    s.turns = std::max(1, args["turns"].as<int>());
    s.confirm_rounds = std::max(0, args["confirm-rounds"].as<int>());
    const std::vector<std::string> goals = split(args["goals"].as<std::string>());
    try {
      if (goals.size() != 2) throw std::invalid_argument("two");
      s.batch1_goal = std::stod(goals[0]);
      s.goal = std::stod(goals[1]);
    } catch (const std::exception&) {
      throw std::runtime_error("--goals " + args["goals"].as<std::string>() +
                               ": give two ratios, at batch 1 and elsewhere, e.g. 0.90,1.00");
    }
    s.warmup = std::max(1, args["warmup"].as<int>());
    s.max_steps = std::max(1, args["max-steps"].as<int>());
    s.turn_ms = args["turn-ms"].as<double>();
    s.python = args["python"].as<std::string>();
    s.reference = args["reference"].as<std::string>();
    s.device = args["device"].as<std::string>();
    const torch::Device device = parse_device(s.device);
    s.device = device.str();  // cuda: cuda:0, as both sides name it
    // glibc's malloc hands blocks above its mmap threshold back to the system when they are freed and
    // moves the threshold as the process's history goes, so each step of a large tensor may fault its
    // pages in again, or not: one process of a pair lands in one regime and the other by chance, 4-5x
    // apart on the same step. Both sides get the same fixed thresholds (unless the environment or
    // --glibc-default says otherwise) so the comparison is of the two steps, not of that chance.
    if (!args.count("glibc-default")) {
      setenv("MALLOC_MMAP_THRESHOLD_", "33554432", /*overwrite=*/0);
      setenv("MALLOC_TRIM_THRESHOLD_", "4294967296", /*overwrite=*/0);
    }
    const char* mmap_threshold = std::getenv("MALLOC_MMAP_THRESHOLD_");
    const char* trim_threshold = std::getenv("MALLOC_TRIM_THRESHOLD_");
    std::printf("glibc malloc of both sides: %s\n",
                mmap_threshold || trim_threshold
                    ? ("MALLOC_MMAP_THRESHOLD_=" + std::string(mmap_threshold ? mmap_threshold : "(default)") +
                       " MALLOC_TRIM_THRESHOLD_=" + std::string(trim_threshold ? trim_threshold : "(default)"))
                          .c_str()
                    : "glibc's own moving thresholds (--glibc-default)");
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    s.self = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : argv[0];

    std::vector<int> thread_counts;
    for (const std::string& t : split(args["threads"].as<std::string>())) {
      const int count = t == "all" ? all : std::stoi(t);
      if (count < 1) throw std::runtime_error("--threads " + t + " is not a thread count");
      if (std::find(thread_counts.begin(), thread_counts.end(), count) == thread_counts.end())
        thread_counts.push_back(count);
    }
    const double touch_gib = args["touch-gib"].as<double>();
    if (touch_gib > 0) {
      const auto start = std::chrono::steady_clock::now();
      const std::size_t touched = touch_host_memory(static_cast<std::size_t>(touch_gib * (1ULL << 30)));
      std::printf("host memory touched once before the cases: %.1f GiB in %.1f s (--touch-gib)\n",
                  static_cast<double>(touched) / (1ULL << 30),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const std::unique_ptr<batchscope::StepTimer> timer = batchscope::make_step_timer(device);
    std::printf("timer overhead per step: %.3f us (%s, median of 1000 empty start/stop pairs)\n",
                batchscope::measure_timer_overhead_ms(*timer, 1000) * 1e3, timer->method());
    int missed = 0, not_told_apart = 0, cases = 0;
    Json report = Json::array();
    std::vector<Optimizer> optimizers;
    for (const std::string& text : split(args["optimizers"].as<std::string>()))
      optimizers.push_back(find_optimizer(text));
    if (optimizers.empty()) throw std::runtime_error("--optimizers names none; give sgd, adam or adamw");
    for (const std::string& name : split(args["models"].as<std::string>())) {
      const Model& model = find_model(name);
      for (const std::string& phase : split(args["phases"].as<std::string>())) {
        if (phase != "train" && phase != "infer") throw std::runtime_error("--phases takes train and infer");
        // Inference steps no optimizer: one case whatever --optimizers says.
        const std::vector<Optimizer> steps_with =
            phase == "train" ? optimizers : std::vector<Optimizer>{{"sgd", false}};
        for (const Optimizer& optimizer : steps_with) {
          for (int threads : thread_counts) {
            const Verdicts verdicts = run_case(s, model, phase, optimizer, threads, report);
            missed += verdicts.missed;
            not_told_apart += verdicts.not_told_apart;
            ++cases;
          }
        }
      }
    }
    if (args.count("json")) std::ofstream(args["json"].as<std::string>()) << report.dump(2) << "\n";
    std::printf("\n%s: %s\n", batchscope::counted(cases, "case").c_str(),
                missed == 0 ? "no goal missed in every round"
                            : (batchscope::counted(missed, "goal") + " missed in every round").c_str());
    if (not_told_apart > 0) {
      std::printf("%s above the goal by the median, at or below it in a round: not told apart\n",
                  batchscope::counted(not_told_apart, "size").c_str());
    }
    return missed == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "bench_overhead: " << error.what() << "\n";
    return 2;
  }
}
