#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace batchscope {

// Replaces path as a whole: its content goes to a file of this process beside it, which is then renamed
// over it, so a reader never sees half of it, a failed write leaves the old one, and two processes
// (on this host or another sharing the directory) writing the same file at once never write into each
// other's. A file that cannot be written is a
// UserError naming it ("choose an --out directory you can write to").
void replace_file(const std::string& path, const std::string& content, bool executable = false);

// Asks the kernel to write path's data to its disk before returning (fsync): before a file written beside
// is renamed into place, so that after a crash of the machine the name holds the whole new file and not an
// empty one. Where it cannot (a filesystem without it), nothing is said: the rename still holds.
void sync_file(const std::string& path);
// The same for a directory's entries: after the rename, so that the new name survives a crash.
void sync_directory(const std::string& dir);

// The bytes of path up to and including its last '\n' (0 where it has none); none where it cannot be read
// or is gzip.
std::optional<std::uintmax_t> whole_lines_bytes(const std::string& path);

// Cuts a JSON-lines file back to its whole lines: a write stopped half-way (a killed process, a full disk)
// leaves half a line after the last '\n', and a record appended to it would join that half and be lost
// with it. Returns the bytes cut (0 where the file ends with a whole line, is missing, or is gzip).
std::uintmax_t cut_half_line(const std::string& path);

}  // namespace batchscope
