#pragma once

// A child process that runs timed steps on request, over a line protocol on its stdin and stdout
// (bench/pytorch_reference.py describes it). The benchmark starts two of them, PyTorch-in-Python and
// batchscope, and lets only one run at a time: the other is stopped (SIGSTOP) with all its threads, so
// that OpenMP workers still spinning after its turn take no core from the side being timed.
#include <sys/types.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace batchscope::bench {

class StepProcess {
 public:
  // Starts argv[0] with its arguments, bound to `cpus` (all CPUs where empty), and reads its header.
  StepProcess(const std::vector<std::string>& argv, const std::vector<int>& cpus);
  ~StepProcess();
  StepProcess(const StepProcess&) = delete;
  StepProcess& operator=(const StepProcess&) = delete;

  const nlohmann::json& header() const { return header_; }
  // Makes the data of this batch size and runs `warmup` untimed steps; returns the last one's time in ms.
  double prepare(int64_t batch, int warmup);
  // Runs `n` timed steps; their times in ms.
  std::vector<double> steps(int n);
  // Stops and continues every thread of the process; a stopped process is continued before each request.
  void pause();
  void resume();

 private:
  void send(const std::string& line);
  std::string read_line();

  pid_t pid_ = -1;
  bool paused_ = false;
  std::FILE* in_ = nullptr;
  std::FILE* out_ = nullptr;
  nlohmann::json header_;
  std::string name_;
};

}  // namespace batchscope::bench
