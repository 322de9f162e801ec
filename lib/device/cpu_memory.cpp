#include "lib/device/cpu_memory.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <stdexcept>

#include "lib/common/words.h"

namespace batchscope::cpu_memory {
namespace {

// Every block starts with a header that holds its size, and LibTorch gets the address after it as both
// the data and the context. Wrapping the context instead would break the raw interface
// (raw_allocate asserts that they are equal), which oneDNN's convolutions use for their scratch memory.
// 64 bytes keep the data at LibTorch's alignment.
constexpr std::size_t kHeaderBytes = 64;
static_assert(kHeaderBytes % c10::gAlignment == 0 && kHeaderBytes >= sizeof(int64_t),
              "the header must keep the data aligned and hold the size");

constexpr int64_t kNoLimit = -1;

std::atomic<int64_t> current{0};
std::atomic<int64_t> peak{0};
std::atomic<int64_t> limit_bytes{kNoLimit};
std::atomic<bool> is_installed{false};
c10::Allocator* wrapped = nullptr;
c10::DeleterFnPtr wrapped_delete = nullptr;

void raise_peak(int64_t now) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

// Counts n more bytes, or throws the out-of-memory error where the limit leaves no room for them.
void reserve(int64_t n) {
  int64_t before = current.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t limit = limit_bytes.load(std::memory_order_relaxed);
    TORCH_CHECK_WITH(OutOfMemoryError, limit == kNoLimit || before + n <= limit,
                     "CPU out of memory: tried to allocate ", format_memory_size(n), " with ",
                     format_memory_size(before), " in use, above the limit of ", format_memory_size(limit),
                     " on LibTorch's CPU memory");
    if (current.compare_exchange_weak(before, before + n, std::memory_order_relaxed)) break;
  }
  raise_peak(before + n);
}

void counted_delete(void* data) {
  if (data == nullptr) return;
  char* block = static_cast<char*>(data) - kHeaderBytes;
  int64_t n = 0;
  std::memcpy(&n, block, sizeof n);
  current.fetch_sub(n, std::memory_order_relaxed);
  wrapped_delete(block);
}

class CountingAllocator : public c10::Allocator {
 public:
  // LibTorch 2.3 and later make allocate() non-const; defining both overrides whichever the headers
  // declare, and `override` is left out so that neither is an error.
  c10::DataPtr allocate(std::size_t n) const { return allocate_counted(n); }
  c10::DataPtr allocate(std::size_t n) { return allocate_counted(n); }
  c10::DeleterFnPtr raw_deleter() const { return &counted_delete; }
  // Pure virtual from LibTorch 2.3 on, absent before.
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

 private:
  static c10::DataPtr allocate_counted(std::size_t n) {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &counted_delete, cpu};
    const auto bytes = static_cast<int64_t>(n);
    reserve(bytes);
    void* block = nullptr;
    try {
      block = wrapped->raw_allocate(n + kHeaderBytes);
    } catch (...) {
      current.fetch_sub(bytes, std::memory_order_relaxed);
      throw;
    }
    std::memcpy(block, &bytes, sizeof bytes);
    void* data = static_cast<char*>(block) + kHeaderBytes;
    return {data, data, &counted_delete, cpu};
  }
};

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    c10::Allocator* in_use = c10::GetCPUAllocator();
    TORCH_CHECK(in_use->raw_deleter() != nullptr,
                "cannot count CPU memory: LibTorch's CPU allocator in use has no raw deleter to wrap");
    wrapped = in_use;
    wrapped_delete = in_use->raw_deleter();
    // Never deleted: tensors freed during static destruction still come back to it.
    auto* counting = new CountingAllocator();
    // Above the priority of LibTorch's own CPU allocators, so that neither replaces it later.
    c10::SetCPUAllocator(counting, std::numeric_limits<uint8_t>::max());
    TORCH_CHECK(c10::GetCPUAllocator() == counting,
                "cannot count CPU memory: LibTorch refused to replace its CPU allocator");
    is_installed.store(true);
  });
}

bool installed() { return is_installed.load(); }

void set_limit(std::optional<int64_t> bytes) {
  if (bytes) TORCH_CHECK(*bytes >= 0, "a CPU memory limit cannot be negative, got ", *bytes);
  install();
  limit_bytes.store(bytes ? *bytes : kNoLimit);
}

std::optional<int64_t> limit() {
  const int64_t bytes = limit_bytes.load();
  return bytes == kNoLimit ? std::nullopt : std::optional<int64_t>(bytes);
}

int64_t current_bytes() { return current.load(); }
int64_t peak_bytes() { return peak.load(); }
void reset_peak() { peak.store(current.load()); }

ScopedLimit::ScopedLimit(std::optional<int64_t> bytes) : previous_(limit()) { set_limit(bytes); }
ScopedLimit::~ScopedLimit() { limit_bytes.store(previous_ ? *previous_ : kNoLimit); }

std::optional<int64_t> available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  int64_t value = 0;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:" && unit == "kB") return value * 1024;
  }
  return std::nullopt;
}

}  // namespace batchscope::cpu_memory

namespace batchscope {
namespace {

// The multiplier of a unit, 0 when there is no such unit.
double unit_bytes(const std::string& unit) {
  if (unit.empty() || unit == "b") return 1;
  const std::string prefixes = "kmgt";
  const std::size_t power = prefixes.find(unit[0]);
  if (power == std::string::npos) return 0;
  const std::string rest = unit.substr(1);
  if (rest.empty() || rest == "i" || rest == "ib") return std::pow(1024.0, static_cast<double>(power + 1));
  if (rest == "b") return std::pow(1000.0, static_cast<double>(power + 1));
  return 0;
}

}  // namespace

int64_t parse_memory_size(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("memory size '" + text + "' " + why +
                                 "; write bytes or a number with a unit, e.g. 512MiB, 8GiB, 1.5G or 2GB");
  };
  std::size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  const std::string number = text.substr(0, end);
  std::size_t unit_start = end;
  while (unit_start < text.size() && text[unit_start] == ' ') ++unit_start;
  const std::string unit = lowercase(text.substr(unit_start));
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) {
    throw bad("does not start with a number");
  }
  const double multiplier = unit_bytes(unit);
  if (multiplier == 0) throw bad("has an unknown unit '" + text.substr(unit_start) + "'");
  if (number.size() > 30) throw bad("is too large");  // std::stod would throw out_of_range past 1e308
  const double bytes = std::stod(number) * multiplier;
  if (multiplier == 1 && number.find('.') != std::string::npos) throw bad("is not a whole number of bytes");
  if (bytes >= 9.2e18) throw bad("is too large");
  const auto rounded = static_cast<int64_t>(std::llround(bytes));
  if (rounded <= 0) throw bad("is not more than zero bytes");
  return rounded;
}

std::string format_memory_size(int64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (std::fabs(value) >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char out[32];
  if (unit == 0) {
    std::snprintf(out, sizeof out, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(out, sizeof out,
                  std::fabs(value) < 10    ? "%.2f %s"
                  : std::fabs(value) < 100 ? "%.1f %s"
                                           : "%.0f %s",
                  value, units[unit]);
  }
  return out;
}

}  // namespace batchscope
