#include "lib/device/host_allocator.h"

#include <malloc.h>

#include <mutex>

#include "lib/common/errors.h"
#include "lib/device/cpu_threads.h"

namespace batchscope::host_allocator {
namespace {

std::mutex chosen_mutex;
InEffect chosen;

// The variables glibc reads its thresholds from, in the order they are named when more than one is set.
constexpr const char* kGlibcVariables[] = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                                           "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES"};

bool preloads_an_allocator(const std::string& preload) {
  return preload.find("malloc") != std::string::npos;  // libjemalloc, libtcmalloc, libmimalloc
}

}  // namespace

InEffect choose(const std::map<std::string, std::string>& environment) {
  if (const auto asked = environment.find("BATCHSCOPE_MALLOC"); asked != environment.end() && !asked->second.empty()) {
    if (asked->second == "dynamic") return {Mode::Dynamic, "BATCHSCOPE_MALLOC"};
    if (asked->second != "fixed") {
      throw UserError(located("environment", 0, "BATCHSCOPE_MALLOC='" + asked->second + "' is not fixed or dynamic",
                              "set it to fixed (the default: thresholds that stay put) or dynamic (glibc's own), or "
                              "unset it"));
    }
  }
  for (const char* name : kGlibcVariables) {
    const auto found = environment.find(name);
    if (found == environment.end()) continue;
    // GLIBC_TUNABLES decides only where it names a malloc tunable.
    if (std::string(name) == "GLIBC_TUNABLES" && found->second.find("malloc") == std::string::npos) continue;
    return {Mode::Environment, name};
  }
  if (const auto preload = environment.find("LD_PRELOAD");
      preload != environment.end() && preloads_an_allocator(preload->second)) {
    return {Mode::Environment, "LD_PRELOAD"};
  }
  return {Mode::Fixed, ""};
}

std::map<std::string, std::string> environment() {
  return cpu_threads::environment_variables([](const std::string& name) {
    return name == "BATCHSCOPE_MALLOC" || name == "LD_PRELOAD" || name == "GLIBC_TUNABLES" ||
           name.rfind("MALLOC_", 0) == 0;
  });
}

InEffect apply() {
  InEffect choice = choose(environment());
  // Setting either threshold also stops glibc from moving them.
  if (choice.mode == Mode::Fixed && (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold)) == 0 ||
                                     mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThreshold)) == 0)) {
    choice = {Mode::Dynamic, "mallopt"};  // refused: glibc keeps its own
  }
  std::lock_guard<std::mutex> lock(chosen_mutex);
  chosen = choice;
  return choice;
}

InEffect in_effect() {
  std::lock_guard<std::mutex> lock(chosen_mutex);
  return chosen;
}

nlohmann::json to_json(const InEffect& in_effect) {
  switch (in_effect.mode) {
    case Mode::Fixed:
      return {{"thresholds", "fixed"}, {"mmap_threshold_bytes", kMmapThreshold}, {"trim_threshold_bytes", kTrimThreshold}};
    case Mode::Environment:
      return {{"thresholds", "environment"}, {"decided_by", in_effect.decided_by}};
    case Mode::Dynamic:
      break;
  }
  nlohmann::json out = {{"thresholds", "glibc dynamic"}};
  if (!in_effect.decided_by.empty()) out["decided_by"] = in_effect.decided_by;
  return out;
}

}  // namespace batchscope::host_allocator
