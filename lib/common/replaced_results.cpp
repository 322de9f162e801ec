#include "lib/common/replaced_results.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "lib/common/errors.h"
#include "lib/common/file_writes.h"

namespace batchscope {

namespace fs = std::filesystem;

namespace {

constexpr const char* kReplaced = ".replaced";
// Filled first and renamed to .replaced when whole: a process killed half-way through the moves leaves
// .replaced.moving, which the next replacement fills on, so the old result is never split in two.
constexpr const char* kMoving = ".replaced.moving";

std::vector<fs::path> entries_of(const fs::path& dir, const std::function<bool(const std::string&)>& ours) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != kReplaced && name != kMoving && ours(name)) out.push_back(it->path());
  }
  return out;
}

void check(const std::error_code& ec, const fs::path& path, const std::string& what) {
  if (!ec) return;
  throw UserError(located(path.string(), 0, what + " (" + ec.message() + ")",
                          "make the directory writable, or choose another --out directory"));
}

}  // namespace

std::optional<std::string> set_aside_replaced(const std::string& dir,
                                              const std::function<bool(const std::string& name)>& ours,
                                              const std::function<bool(const std::string& dir)>& complete) {
  const fs::path kept = fs::path(dir) / kReplaced;
  const fs::path moving = fs::path(dir) / kMoving;
  std::error_code ec;
  const std::vector<fs::path> entries = entries_of(dir, ours);
  if (fs::exists(kept, ec)) {
    if (entries_of(kept, ours).empty()) {
      // Emptied by hand (its files moved back): nothing is kept there. Anything else in it is not ours.
      if (!fs::is_empty(kept, ec)) {
        throw UserError(located(kept.string(), 0, "holds none of the files this command keeps there",
                                "move what it holds elsewhere, or remove it"));
      }
      fs::remove(kept, ec);
      check(ec, kept, "cannot be removed");
    } else if (complete(dir)) {
      // A result completed beside it (its removal then failed): it is the older of the two.
      fs::remove_all(kept, ec);
      check(ec, kept, "cannot be removed, and it is older than the complete result beside it");
    } else {
      // An unfinished replacement beside it: started again.
      for (const fs::path& p : entries) {
        fs::remove_all(p, ec);
        check(ec, p, "cannot be removed, and the replacement it began is to start again");
      }
      return kept.string();
    }
  }
  if (entries.empty() && !fs::exists(moving, ec)) return std::nullopt;
  fs::create_directories(moving, ec);
  check(ec, moving, "cannot be created to keep the result being replaced");
  for (const fs::path& p : entries) {
    const fs::path to = moving / p.filename();
    // Already moved by a process stopped half-way: what is still in dir was written after it.
    if (fs::exists(to, ec)) {
      fs::remove_all(p, ec);
      check(ec, p, "cannot be removed");
      continue;
    }
    fs::rename(p, to, ec);
    check(ec, p, "cannot be moved into " + moving.string());
  }
  sync_directory(moving.string());
  fs::rename(moving, kept, ec);
  check(ec, moving, "cannot be renamed to " + kept.string());
  sync_directory(dir);
  return kept.string();
}

DroppedReplaced drop_replaced(const std::string& dir) {
  DroppedReplaced out;
  for (const char* name : {kReplaced, kMoving}) {
    std::error_code ec;
    const fs::path p = fs::path(dir) / name;
    if (!fs::exists(p, ec)) continue;
    out.was_there = true;
    fs::remove_all(p, ec);
    if (ec) out.left = p.string() + " (" + ec.message() + ")";
  }
  return out;
}

}  // namespace batchscope
