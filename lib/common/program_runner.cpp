#include "lib/common/program_runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace batchscope {

std::optional<std::string> find_program(const std::string& name) {
  auto runnable = [](const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (runnable(name)) return name;
    return std::nullopt;
  }
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/bin:/bin";
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (runnable(candidate)) return candidate;
  }
  return std::nullopt;
}

namespace {

// Everything that can still be read from fd, until its writers have closed it.
void read_all(int fd, std::string& into) {
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      into.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
}

}  // namespace

ProgramRun run_program(const std::string& program, const std::vector<std::string>& arguments,
                       const std::string& dir, Stdout stdout_kept) {
  ProgramRun run;
  // stdout goes into its own file, read once the program has ended: two pipes read one after the other
  // could fill up and stop the program.
  std::FILE* output_file = stdout_kept == Stdout::Keep ? std::tmpfile() : nullptr;
  if (stdout_kept == Stdout::Keep && output_file == nullptr) {
    run.failure = std::string("cannot create a file for its output (") + std::strerror(errno) + ")";
    return run;
  }
  struct FileCloser {
    std::FILE* file;
    ~FileCloser() {
      if (file != nullptr) std::fclose(file);
    }
  } closer{output_file};
  const int output_fd = output_file != nullptr ? ::fileno(output_file) : -1;
  int errors_pipe[2];
  int exec_pipe[2];  // close-on-exec: the child writes to it only when chdir or exec fails
  if (::pipe2(errors_pipe, O_CLOEXEC) != 0) {
    run.failure = std::string("cannot create a pipe (") + std::strerror(errno) + ")";
    return run;
  }
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    run.failure = std::string("cannot create a pipe (") + std::strerror(errno) + ")";
    ::close(errors_pipe[0]);
    ::close(errors_pipe[1]);
    return run;
  }
  std::vector<std::string> args = {program};
  args.insert(args.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, 0);
      ::dup2(null_fd, 1);
    }
    if (output_fd >= 0) ::dup2(output_fd, 1);
    ::dup2(errors_pipe[1], 2);
    int failure[2] = {0, 0};
    if (::chdir(dir.c_str()) != 0) {
      failure[0] = 1;
    } else {
      ::execv(argv[0], argv.data());
      failure[0] = 2;
    }
    failure[1] = errno;
    ssize_t ignored = ::write(exec_pipe[1], failure, sizeof failure);
    (void)ignored;
    ::_exit(127);
  }
  ::close(errors_pipe[1]);
  ::close(exec_pipe[1]);
  if (pid < 0) {
    run.failure = std::string("cannot start a process (") + std::strerror(errno) + ")";
    ::close(errors_pipe[0]);
    ::close(exec_pipe[0]);
    return run;
  }
  read_all(errors_pipe[0], run.errors);
  ::close(errors_pipe[0]);
  int failure[2] = {0, 0};
  ssize_t got;
  do {
    got = ::read(exec_pipe[0], failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof failure)) {
    run.failure = std::string(failure[0] == 1 ? "cannot enter " + dir : "cannot execute " + program) + " (" +
                  std::strerror(failure[1]) + ")";
    return run;
  }
  run.started = true;
  if (output_fd >= 0 && ::lseek(output_fd, 0, SEEK_SET) == 0) read_all(output_fd, run.output);
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace batchscope
