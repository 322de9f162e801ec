// batchscope's measured training step against PyTorch-in-Python's, on the same backend, model
// (mnist_cnn), batch and optimizer (SGD), on the CPU, in one run.
//
// The Python reference (bench/pytorch_reference.py) runs as a child process driven over a pipe. For each
// batch size both warm up, then take turns in short bursts of steps (alternating which goes first), so
// that the machine's changing speed hits both alike. batchscope's side is the sweep's own timed loop
// (run_timed_steps on a Workload). Both are pinned to one core. Printed per batch size: the median step time
// of each, their ratio, and the median and range of the per-burst ratios; then the timer's own cost per step.
#include <sched.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/config/batch_spec.h"
#include "lib/common/statistics.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"

namespace {

using batchscope::median;

// The reference process with a line protocol on its stdin and stdout.
class PythonReference {
 public:
  PythonReference(const std::string& python, const std::string& script, int threads) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      dup2(to_child[0], STDIN_FILENO);
      dup2(from_child[1], STDOUT_FILENO);
      close(to_child[1]);
      close(from_child[0]);
      const std::string t = std::to_string(threads);
      execl(python.c_str(), python.c_str(), script.c_str(), "--threads", t.c_str(),
            static_cast<char*>(nullptr));
      std::perror(("cannot start " + python).c_str());
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = fdopen(to_child[1], "w");
    out_ = fdopen(from_child[0], "r");
    header_ = nlohmann::json::parse(read_line());
  }
  ~PythonReference() {
    std::fputs("quit\n", in_);
    std::fclose(in_);
    std::fclose(out_);
    waitpid(pid_, nullptr, 0);
  }

  const nlohmann::json& header() const { return header_; }
  void prepare(int64_t batch, int warmup) {
    send("batch " + std::to_string(batch) + " " + std::to_string(warmup));
    if (read_line() != "ready") throw std::runtime_error("the reference did not get ready");
  }
  std::vector<double> steps(int n) {
    send("steps " + std::to_string(n));
    return nlohmann::json::parse(read_line()).get<std::vector<double>>();
  }

 private:
  void send(const std::string& line) {
    std::fputs((line + "\n").c_str(), in_);
    std::fflush(in_);
  }
  std::string read_line() {
    std::string line;
    for (int c = std::fgetc(out_); c != EOF && c != '\n'; c = std::fgetc(out_)) line += static_cast<char>(c);
    if (line.empty())
      throw std::runtime_error("the reference process stopped (is PyTorch installed for it?)");
    return line;
  }

  pid_t pid_ = -1;
  std::FILE* in_ = nullptr;
  std::FILE* out_ = nullptr;
  nlohmann::json header_;
};

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options("bench_overhead",
                           "batchscope's training step against PyTorch-in-Python's (mnist_cnn, CPU).");
  // clang-format off
  options.add_options()
      ("batch", "batch sizes", cxxopts::value<std::string>()->default_value("1,2,4,8,16,32,64"))
      ("bursts", "turns each side takes per batch size", cxxopts::value<int>()->default_value("15"))
      ("steps", "timed steps per turn", cxxopts::value<int>()->default_value("10"))
      ("warmup", "untimed steps per batch size", cxxopts::value<int>()->default_value("20"))
      ("threads", "CPU threads for both", cxxopts::value<int>()->default_value("1"))
      ("cpu", "pin both processes to this CPU (default: the last one; -1: no pinning)", cxxopts::value<int>())
      ("python", "the Python with PyTorch", cxxopts::value<std::string>()->default_value("/usr/bin/python3"))
      ("reference", "the reference script", cxxopts::value<std::string>()->default_value("bench/pytorch_reference.py"))
      ("h,help", "this help");
  // clang-format on
  const auto args = options.parse(argc, argv);
  if (args.count("help")) {
    std::cout << options.help();
    return 0;
  }
  try {
    const int threads = args["threads"].as<int>();
    const int bursts = args["bursts"].as<int>();
    const int steps = args["steps"].as<int>();
    const int warmup = args["warmup"].as<int>();
    // One core for both: unpinned, whichever process lands beside the machine's other work is slower for
    // reasons that are not its own.
    const int cpu =
        args.count("cpu") ? args["cpu"].as<int>() : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)) - 1;
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_setaffinity(0, sizeof set, &set);  // the child inherits it
    }
    torch::set_num_threads(threads);
    PythonReference python(args["python"].as<std::string>(), args["reference"].as<std::string>(), threads);

    batchscope::ExperimentConfig e;
    e.name = "bench";
    e.model = "mnist_cnn";
    e.input_shape = {1, 28, 28};
    e.classes = 10;
    e.device = "cpu";
    batchscope::Workload workload(e, torch::Device("cpu"));
    batchscope::HostStepTimer timer;
    const double overhead_ms = batchscope::measure_timer_overhead_ms(timer, 1000);

    std::printf(
        "mnist_cnn training step (SGD, lr 0.01) on the CPU, %d thread(s): PyTorch %s in Python vs batchscope "
        "on LibTorch %s\n%d turns of %d timed steps each per batch size, alternating\n",
        threads, python.header().value("torch", "?").c_str(), TORCH_VERSION, bursts, steps);
    std::printf("%6s %12s %14s %8s %16s %22s\n", "batch", "pytorch ms", "batchscope ms", "ratio",
                "turn ratio med", "turn ratio range");
    int missed = 0;
    for (int64_t batch : batchscope::parse_batch_spec(args["batch"].as<std::string>())) {
      python.prepare(batch, warmup);
      workload.prepare_batch(batch);
      workload.warm_up(warmup);
      std::vector<double> py_all, bs_all, turn_ratios;
      for (int b = 0; b < bursts; ++b) {
        std::vector<double> py, bs;
        if (b % 2 == 0) {
          py = python.steps(steps);
          bs = batchscope::run_timed_steps(workload, timer, steps).times_ms;
        } else {
          bs = batchscope::run_timed_steps(workload, timer, steps).times_ms;
          py = python.steps(steps);
        }
        turn_ratios.push_back(median(bs) / median(py));
        py_all.insert(py_all.end(), py.begin(), py.end());
        bs_all.insert(bs_all.end(), bs.begin(), bs.end());
      }
      const double ratio = median(bs_all) / median(py_all);
      const double goal = batch == 1 ? 0.90 : 1.00;
      missed += ratio > goal;
      std::printf("%6lld %12.4f %14.4f %8.3f %16.3f %13.3f-%-8.3f <= %.2f %s\n",
                  static_cast<long long>(batch), median(py_all), median(bs_all), ratio, median(turn_ratios),
                  *std::min_element(turn_ratios.begin(), turn_ratios.end()),
                  *std::max_element(turn_ratios.begin(), turn_ratios.end()), goal,
                  ratio <= goal ? "met" : "MISSED");
      std::fflush(stdout);
    }
    std::printf("timer overhead per step: %.3f us (median of 1000 empty start/stop pairs)\n%s\n",
                overhead_ms * 1e3,
                missed == 0 ? "all goals met" : (std::to_string(missed) + " goal(s) missed").c_str());
    return missed == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "bench_overhead: " << error.what() << "\n";
    return 2;
  }
}
