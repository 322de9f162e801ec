#include "lib/errors.h"

namespace batchscope {

std::string located(const std::string& file, int line, const std::string& problem, const std::string& fix) {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  std::string message = where + ": " + problem;
  if (!fix.empty()) message += "; " + fix;
  if (message.back() != '.') message += ".";
  return message;
}

}  // namespace batchscope
