#include "lib/common/file_writes.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

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

}  // namespace batchscope
