#include "lib/common/errors.h"

namespace batchscope {

std::string printable(const std::string& text) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string located(const std::string& file, int line, const std::string& problem, const std::string& fix) {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  std::string message = where + ": " + problem;
  if (!fix.empty()) message += "; " + fix;
  if (message.back() != '.') message += ".";
  return message;
}

}  // namespace batchscope
