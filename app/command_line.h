#pragma once

#include <atomic>
#include <cstdint>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/common/limits.h"
#include "lib/config/config.h"

namespace batchscope::app {

#if CXXOPTS__VERSION_MAJOR > 3 || (CXXOPTS__VERSION_MAJOR == 3 && CXXOPTS__VERSION_MINOR >= 1)
using CommandLineError = cxxopts::exceptions::exception;
#else
using CommandLineError = cxxopts::OptionException;
#endif

// Parses a command's arguments (those after its name) with either cxxopts 2 or 3. A value that its
// option's kind refuses is a UserError naming the option: "--channels-last: 'maybe' is not a value
// that option takes".
cxxopts::ParseResult parse_command_line(cxxopts::Options& options, const std::vector<std::string>& args);

// A mistake on the command line: one sentence ("command line: PROBLEM; FIX."), exit code 2.
[[noreturn]] void refuse(const std::string& problem, const std::string& fix);
// The command as the run record keeps it: "batchscope sweep --model vgg16 --batch 1:70".
std::string command_text(const std::string& command, const std::vector<std::string>& args);

// The options that describe an experiment, shared by sweep, maxbatch and microbatch. Each is declared
// here once (flags, help, kind of value) and read back once into SweepOverrides, whose values the
// experiment's own checks then take, naming the option in their messages. A command declares the ones
// it takes; adding a sweep option is one entry in the table plus its use.
enum class ExperimentOption {
  Model, Batch, Device, Steps, Warmup, Phase, Precision, Optimizer, Lr, Input, InputKind, SeqLen, Classes, Data,
  Transfer, Chunk, Order, Seed, ChannelsLast, CudnnBenchmark, Profile, ProfileSteps, Repeats, CiWidth, MinTime,
  MaxTime, Tf32, LossScale, LossScaleInit, LossScaleGrowthInterval, Foreach, Vocab
};
void add_experiment_options(cxxopts::Options& options, const std::vector<ExperimentOption>& which);
// --model, which a command that takes one experiment needs: refused when missing or unknown, with the
// known names.
std::string model_option(const cxxopts::ParseResult& result);
// Those of `which` that were given, into `into` (the rest left as they are).
void read_experiment_options(const cxxopts::ParseResult& result, const std::vector<ExperimentOption>& which,
                             SweepOverrides& into);

// The whole number the whole text is (an optional '+' allowed), or nullopt: for an option that takes a
// word too (train --chunk auto).
std::optional<int64_t> whole_number(const std::string& text);

// Number options are declared as text (cxxopts::value<std::string>()) and read with these, so that a
// wrong value is refused with its option's name and the values it takes:
//   command line: --threads: 'abc' is not a whole number from 1 to 4096; give one, e.g. --threads 1.
int64_t whole_option(const cxxopts::ParseResult& result, const std::string& name, int64_t least,
                     int64_t most);
// One batch size, or several ("32,128,512", "32:4096:x4", as a sweep's batch spec reads them), each from
// 1 to the largest batch size.
std::vector<int64_t> batch_list_option(const cxxopts::ParseResult& result, const std::string& name);
// A seed: any whole number from 0 to 2^64 - 1.
uint64_t seed_option(const cxxopts::ParseResult& result, const std::string& name);
// A finite number from least to most (excluding least itself where least_excluded).
double real_option(const cxxopts::ParseResult& result, const std::string& name, double least, double most,
                   bool least_excluded = false);

// A share given as a percentage, "5%" or "5", from 0 to most_percent: returned as a fraction (0.05).
double percent_option(const cxxopts::ParseResult& result, const std::string& name, double most_percent);

// --threads, where given: LibTorch's intra-op threads for the rest of the run.
void apply_threads_option(const cxxopts::ParseResult& result);
// The help of a --threads option: `what` and the default this machine gets.
std::string threads_help(const std::string& what);
// The most --threads accepts.
inline constexpr int64_t kMaxThreads = limits::kMaxThreads;

// "3,224,224" as a shape; a UserError naming --input otherwise.
std::vector<int64_t> parse_input_shape(const std::string& text);

// A --memory-limit such as 8GiB as bytes; a UserError naming --memory-limit otherwise.
int64_t parse_memory_limit(const std::string& text);
// --memory-limit on GPU `index`: a size no larger than its memory (a UserError that says its size else).
int64_t parse_gpu_memory_limit(const std::string& text, int index);
// --memory-limit on each of the devices (cpu, cuda:N): on the CPU LibTorch's counted tensors, on a GPU its
// caching allocator, as on a GPU of that much memory. The bytes each may hold, {"cpu": N, "cuda:0": M}.
nlohmann::json apply_memory_limit(const std::string& text, const std::vector<std::string>& devices);

// The exit code of a command stopped by Ctrl-C or SIGTERM at a point the same command goes on from.
inline constexpr int kExitStopped = 130;

// Set once Ctrl-C or SIGTERM asked the command to stop (after stop_on_signals).
const std::atomic<bool>& stop_requested();
// From now on the first Ctrl-C (or SIGTERM) sets stop_requested() and prints that the command stops
// after `what` ("this batch size"), which the command finishes and writes; a second one stops at once.
// `what` must outlive the command (a literal).
void stop_on_signals(const char* what);

}  // namespace batchscope::app
