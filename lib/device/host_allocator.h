#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>

// How glibc's malloc serves the host's large blocks (a CPU step's activations and gradients), and why.
//
// glibc serves a block above its mmap threshold with mmap and unmaps it when freed; freeing such a block
// raises the threshold to its size (up to 32 MiB), and the heap's free top is given back to the system
// above a trim threshold that moves with it. So whether a step of large tensors faults its pages in
// afresh every time depends on what the process happened to free before: two runs of the same sweep on
// the same CPU were seen 2x apart at one batch size (mnist_cnn training at 16: 35.3 against 18.6 ms).
// batchscope fixes both thresholds at the start of every command, so that a sweep repeats, unless the
// environment already decides (glibc's MALLOC_* thresholds, or another allocator in LD_PRELOAD) or
// BATCHSCOPE_MALLOC=dynamic asks for glibc's own moving thresholds. The run record says which.
namespace batchscope::host_allocator {

enum class Mode {
  Fixed,        // batchscope set the thresholds below
  Environment,  // the environment decides (MALLOC_* thresholds, or an allocator in LD_PRELOAD)
  Dynamic,      // BATCHSCOPE_MALLOC=dynamic: glibc's own moving thresholds
};

// The largest mmap threshold glibc takes on a 64-bit system; a block above it is always mapped.
inline constexpr int64_t kMmapThreshold = 32LL << 20;
// The largest trim threshold mallopt takes (an int): the heap's free top is kept up to 2 GiB.
inline constexpr int64_t kTrimThreshold = 2147483647;

struct InEffect {
  Mode mode = Mode::Dynamic;
  std::string decided_by;  // the variable that decided, for Mode::Environment and Mode::Dynamic
};

// The variables of this process that decide how host memory is allocated, by name: glibc's MALLOC_*
// thresholds, GLIBC_TUNABLES, LD_PRELOAD and BATCHSCOPE_MALLOC (those that are set). The run record lists
// them as cpu.allocator_environment.
std::map<std::string, std::string> environment();

// What `environment` (the process's variables, by name) asks for. BATCHSCOPE_MALLOC other than fixed or
// dynamic is a UserError naming the variable.
InEffect choose(const std::map<std::string, std::string>& environment);

// Chooses from the process's environment and sets the thresholds where the choice is Mode::Fixed. Once,
// before any command allocates its tensors; remembered for in_effect().
InEffect apply();

// What apply() chose (Mode::Dynamic with no variable if it has not run).
InEffect in_effect();

// {"thresholds": "fixed", "mmap_threshold_bytes": ..., "trim_threshold_bytes": ...}, or
// {"thresholds": "environment" | "glibc dynamic", "decided_by": VARIABLE}: the run record's cpu.malloc.
nlohmann::json to_json(const InEffect& in_effect);

}  // namespace batchscope::host_allocator
