#pragma once

#include <stdexcept>
#include <string>

namespace batchscope {

// A user's mistake (a config, an argument, a data file, a log): the message is one sentence that
// names where the problem is and how to fix it. app/ turns it into exit code 2.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The text with its control bytes (a NUL, a newline, an escape) written as \xNN, so that a message
// quoting a user's bytes stays one printable line.
std::string printable(const std::string& text);

// "FILE:LINE: PROBLEM; FIX." with the line left out when it is not known (line <= 0).
std::string located(const std::string& file, int line, const std::string& problem, const std::string& fix);

}  // namespace batchscope
