#pragma once

#include <string>

namespace batchscope {

// Replaces path as a whole: its content goes to a file of this process beside it, which is then renamed
// over it, so a reader never sees half of it, a failed write leaves the old one, and two processes
// (on this host or another sharing the directory) writing the same file at once never write into each
// other's. A file that cannot be written is a
// UserError naming it ("choose an --out directory you can write to").
void replace_file(const std::string& path, const std::string& content, bool executable = false);

}  // namespace batchscope
