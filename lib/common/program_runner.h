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
  std::string output;  // what it wrote to stdout, where asked to keep it
};

enum class Stdout { Discard, Keep };

// Runs program with arguments inside dir, stdin on /dev/null and stdout discarded or kept, and waits for
// it. argv only, no shell: paths and labels are never parsed by anything but the program.
ProgramRun run_program(const std::string& program, const std::vector<std::string>& arguments,
                       const std::string& dir, Stdout stdout_kept = Stdout::Discard);

}  // namespace batchscope
