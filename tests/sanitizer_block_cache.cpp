// Under AddressSanitizer, every block of 128 KiB or more is mapped afresh when it is allocated and
// unmapped when it is freed, so a LibTorch step that allocates its activations faults each of their pages
// in again, every step: training on the CPU runs about nine times slower than in the optimised build, half
// of it in the kernel. glibc's heap, in the optimised build, hands the same blocks back instead. This
// gives the unit tests and the binary of the sanitized build (BATCHSCOPE_SANITIZE) the same: LibTorch's
// CPU blocks of that size, once freed, are kept poisoned (so a read or write of our code into one is still
// reported) and handed back to the next allocation of the same size, at most 1 GiB of them. What it gives
// up is ASan's quarantine for those blocks: a pointer kept into a block reused since is not caught.
// Smaller blocks, and every block of a build without AddressSanitizer, go to LibTorch's own allocator as
// before. The counting allocator (cpu_memory), where installed, wraps this one, so what it counts and
// limits is unchanged.

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BATCHSCOPE_BLOCK_CACHE 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define BATCHSCOPE_BLOCK_CACHE 1
#endif

#ifdef BATCHSCOPE_BLOCK_CACHE

#include <c10/core/CPUAllocator.h>
#include <sanitizer/asan_interface.h>

#include <cstddef>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

// ASan's own allocator serves smaller blocks from size classes it reuses.
constexpr std::size_t kCachedFrom = std::size_t{128} << 10;
// Beyond this the freed blocks are handed back to LibTorch's allocator.
constexpr std::size_t kMostCachedBytes = std::size_t{1} << 30;

std::mutex mutex;
std::unordered_map<void*, std::size_t> sizes;                     // every block this allocator handed out
std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // freed ones, by size
std::size_t cached_bytes = 0;
c10::Allocator* wrapped = nullptr;
c10::DeleterFnPtr wrapped_delete = nullptr;

void cached_delete(void* data) {
  if (data == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = sizes.find(data);
    if (it != sizes.end() && cached_bytes + it->second <= kMostCachedBytes) {
      ASAN_POISON_MEMORY_REGION(data, it->second);
      free_blocks[it->second].push_back(data);
      cached_bytes += it->second;
      return;
    }
    if (it != sizes.end()) sizes.erase(it);
  }
  wrapped_delete(data);
}

class BlockCache : public c10::Allocator {
 public:
  // Both signatures, as cpu_memory.cpp explains: LibTorch 2.3 made allocate() non-const.
  c10::DataPtr allocate(std::size_t n) const { return take(n); }
  c10::DataPtr allocate(std::size_t n) { return take(n); }
  c10::DeleterFnPtr raw_deleter() const { return &cached_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

 private:
  static c10::DataPtr take(std::size_t n) {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n < kCachedFrom) return wrapped->allocate(n);
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = free_blocks.find(n);
      if (it != free_blocks.end() && !it->second.empty()) {
        void* data = it->second.back();
        it->second.pop_back();
        cached_bytes -= n;
        ASAN_UNPOISON_MEMORY_REGION(data, n);
        return {data, data, &cached_delete, cpu};
      }
    }
    void* data = wrapped->raw_allocate(n);
    std::lock_guard<std::mutex> lock(mutex);
    sizes[data] = n;
    return {data, data, &cached_delete, cpu};
  }
};

struct Install {
  Install() {
    wrapped = c10::GetCPUAllocator();
    wrapped_delete = wrapped->raw_deleter();
    if (wrapped_delete == nullptr) return;
    // Never deleted: tensors freed during static destruction still come back to it. Below the counting
    // allocator's priority (the highest), which wraps it where a test installs that.
    static auto* cache = new BlockCache();
    c10::SetCPUAllocator(cache, 100);
  }
} install;

}  // namespace

#endif  // BATCHSCOPE_BLOCK_CACHE
