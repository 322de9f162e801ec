#pragma once

#include <functional>
#include <optional>
#include <string>

namespace batchscope {

// What --force replaces is kept until its replacement is complete, so that a replacement stopped, refused
// or failing early loses nothing: the entries of dir that `ours` picks (by file name) move into
// dir/.replaced, and drop_replaced removes them once the new result is complete. Where dir/.replaced
// holds a result already, an earlier replacement did not complete: that one stays and the unfinished
// replacement's entries are removed, unless `complete` says dir holds a complete result (the earlier
// replacement completed and .replaced outlived it), which is then the one set aside. An empty .replaced
// (its files moved back by hand) counts as none. Returns dir/.replaced where it holds something. The
// caller holds the directory's lock; a directory that cannot be written is a UserError naming it.
std::optional<std::string> set_aside_replaced(const std::string& dir,
                                              const std::function<bool(const std::string& name)>& ours,
                                              const std::function<bool(const std::string& dir)>& complete);

// Removes dir/.replaced once the result that replaced it is complete.
struct DroppedReplaced {
  bool was_there = false;
  std::string left;  // what could not be removed, and why; empty where all was
};
DroppedReplaced drop_replaced(const std::string& dir);

}  // namespace batchscope
