#include "bench/step_process.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace batchscope::bench {

StepProcess::StepProcess(const std::vector<std::string>& argv, const std::vector<int>& cpus) : name_(argv.at(0)) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) throw std::runtime_error("pipe failed");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    if (!cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int cpu : cpus) CPU_SET(cpu, &set);
      sched_setaffinity(0, sizeof set, &set);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());  // a bare name ("python3") is looked up on PATH
    std::perror(("cannot start " + argv[0]).c_str());
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  in_ = fdopen(to_child[1], "w");
  out_ = fdopen(from_child[0], "r");
  header_ = nlohmann::json::parse(read_line());
}

StepProcess::~StepProcess() {
  resume();
  std::fputs("quit\n", in_);
  std::fclose(in_);
  std::fclose(out_);
  waitpid(pid_, nullptr, 0);
}

double StepProcess::prepare(int64_t batch, int warmup) {
  send("batch " + std::to_string(batch) + " " + std::to_string(warmup));
  const std::string answer = read_line();
  if (answer.rfind("ready", 0) != 0) throw std::runtime_error(name_ + " did not get ready: " + answer);
  return answer.size() > 6 ? std::stod(answer.substr(6)) : 0.0;
}

std::vector<double> StepProcess::steps(int n) {
  send("steps " + std::to_string(n));
  return nlohmann::json::parse(read_line()).get<std::vector<double>>();
}

void StepProcess::pause() {
  if (paused_) return;
  kill(pid_, SIGSTOP);
  // Stopped for certain before the other side starts: waitpid reports the stop.
  int status = 0;
  waitpid(pid_, &status, WUNTRACED);
  paused_ = true;
}

void StepProcess::resume() {
  if (!paused_) return;
  kill(pid_, SIGCONT);
  paused_ = false;
}

void StepProcess::send(const std::string& line) {
  resume();
  std::fputs((line + "\n").c_str(), in_);
  std::fflush(in_);
}

std::string StepProcess::read_line() {
  std::string line;
  for (int c = std::fgetc(out_); c != EOF && c != '\n'; c = std::fgetc(out_)) line += static_cast<char>(c);
  if (line.empty()) throw std::runtime_error(name_ + " stopped (is PyTorch installed for it?)");
  return line;
}

}  // namespace batchscope::bench
