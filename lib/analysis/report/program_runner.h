#pragma once

#include <optional>
#include <string>
#include <vector>

namespace batchscope {

// The path of a program: a name with a slash must be an executable file, other names are looked up
// on PATH. nullopt when there is none.
std::optional<std::string> find_program(const std::string& name);

struct ProgramRun {
  bool started = false;
  std::string failure;  // why it could not be started
  int exit_status = -1;
  std::string errors;  // what it wrote to stderr
};

// Runs program with arguments inside dir, stdin and stdout on /dev/null, and waits for it. argv only,
// no shell: paths and labels are never parsed by anything but the program.
ProgramRun run_program(const std::string& program, const std::vector<std::string>& arguments,
                       const std::string& dir);

}  // namespace batchscope
