#pragma once

#include <cstdint>
#include <optional>
#include <string>

// The memory of LibTorch's CPU tensors, counted by a wrapper around LibTorch's CPU allocator, with an
// optional limit: the CPU has no out-of-memory signal of its own before the kernel's OOM killer, so a
// search for the largest batch size needs one. An allocation that would pass the limit throws
// c10::OutOfMemoryError ("CPU out of memory: ..."), which is_out_of_memory() recognises.
//
// Only memory that LibTorch takes through its CPU allocator is counted: tensors, gradients, optimizer
// state and the scratch buffers oneDNN asks LibTorch for. What BLAS, OpenMP or oneDNN allocate with
// malloc of their own, and the process's other memory, is not, so leave some room below a real limit.
namespace batchscope::cpu_memory {

// Wraps the CPU allocator in use; idempotent and thread-safe. Only allocations made after the first
// call are counted. Throws std::runtime_error where the allocator in use cannot be wrapped.
void install();
bool installed();

// The limit on the counted bytes (nullopt: none). Applies to allocations made after the call; memory
// already held above a new limit stays, and only new allocations fail. Installs the wrapper first.
void set_limit(std::optional<int64_t> bytes);
std::optional<int64_t> limit();

// Bytes of counted allocations alive now, and the most alive at once since install() or reset_peak().
int64_t current_bytes();
int64_t peak_bytes();
// Starts a new peak at the current bytes.
void reset_peak();

// Sets a limit for its lifetime and puts the previous one back after, however the scope is left.
class ScopedLimit {
 public:
  explicit ScopedLimit(std::optional<int64_t> bytes);
  ~ScopedLimit();
  ScopedLimit(const ScopedLimit&) = delete;
  ScopedLimit& operator=(const ScopedLimit&) = delete;

 private:
  std::optional<int64_t> previous_;
};

// The memory the system could give this process now without swapping (MemAvailable in /proc/meminfo),
// or nullopt where that cannot be read.
std::optional<int64_t> available_bytes();

}  // namespace batchscope::cpu_memory

namespace batchscope {

// Reads a positive memory size: a whole number of bytes ("123", "123B"), or a number, with a fraction
// if needed, and a unit. K, M, G, T alone or with "i"/"iB" (G, Gi, GiB) are binary, powers of 1024;
// KB, MB, GB, TB are decimal, powers of 1000, as disk vendors use them. Units are case-insensitive and
// may follow a space. Throws std::invalid_argument with a sentence.
int64_t parse_memory_size(const std::string& text);

// "512 B", "12.0 MiB", "1.50 GiB": binary units, three significant digits.
std::string format_memory_size(int64_t bytes);

}  // namespace batchscope
