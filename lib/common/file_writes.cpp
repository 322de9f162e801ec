#include "lib/common/file_writes.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "lib/common/errors.h"

namespace fs = std::filesystem;

namespace batchscope {

void replace_file(const std::string& path, const std::string& content, bool executable) {
  // Named for this host and process: tasks on other nodes (every one of them pid 1 in its container) may
  // write the same file on a shared volume at the same moment.
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const fs::path temporary = path + "." + host + "." + std::to_string(::getpid()) + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      throw UserError(located(temporary.string(), 0, std::string("cannot be written (") + std::strerror(errno) + ")",
                              "choose an --out directory you can write to"));
    }
  }
  std::error_code ec;
  if (executable) fs::permissions(temporary, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw UserError(located(path, 0, "cannot be replaced (" + ec.message() + ")", "choose an --out directory you can write to"));
  }
}

namespace {

void sync_opened(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void sync_file(const std::string& path) { sync_opened(path, O_RDONLY); }

void sync_directory(const std::string& dir) { sync_opened(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY); }

std::optional<std::uintmax_t> whole_lines_bytes(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return std::nullopt;
  if (size == 0) return 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  char magic[2] = {};
  in.read(magic, 2);
  if (in.gcount() == 2 && static_cast<unsigned char>(magic[0]) == 0x1f &&
      static_cast<unsigned char>(magic[1]) == 0x8b)
    return std::nullopt;  // gzip: its last byte is no line's end
  // Back from the end, a block at a time, to the last '\n'.
  constexpr std::uintmax_t kBlock = 65536;
  std::string block;
  std::uintmax_t end = size;
  while (end > 0) {
    const std::uintmax_t begin = end > kBlock ? end - kBlock : 0;
    block.resize(end - begin);
    in.clear();
    in.seekg(static_cast<std::streamoff>(begin));
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    if (in.gcount() != static_cast<std::streamsize>(block.size())) return std::nullopt;
    const std::size_t newline = block.rfind('\n');
    if (newline != std::string::npos) return begin + newline + 1;
    end = begin;
  }
  return 0;
}

std::uintmax_t cut_half_line(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  const std::optional<std::uintmax_t> whole = whole_lines_bytes(path);
  if (ec || !whole || *whole >= size) return 0;
  fs::resize_file(path, *whole, ec);
  return ec ? 0 : size - *whole;
}

}  // namespace batchscope
