#pragma once
// What every unit test may use: a temporary directory that goes away with its owner, whatever the test's
// outcome, a check of the sentence a UserError gives the user, not only of its type, and a tiny training
// experiment.

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>

#include "lib/common/errors.h"
#include "lib/config/config.h"

namespace batchscope::testing_support {

// mnist_cnn training on the CPU at batch 2 and 4, one warm-up and three timed steps each: a sweep of it
// takes a fraction of a second.
inline ExperimentConfig tiny_mnist_training(const std::string& name) {
  ExperimentConfig e;
  e.name = name;
  e.model = "mnist_cnn";
  e.input_shape = {1, 28, 28};
  e.classes = 10;
  e.batch_sizes = {2, 4};
  e.warmup_steps = 1;
  e.timed_steps = 3;
  e.device = "cpu";
  return e;
}

// A fresh directory under the system's temporary directory, named after the running test and unique in
// this process, removed (with everything in it) when the object goes, so a failing test leaks nothing.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string test = info == nullptr ? "none" : std::string(info->test_suite_name()) + "." + info->name();
    // A parameterised test's names hold slashes (Instance/Suite.Case/param): one directory, not a tree.
    std::replace(test.begin(), test.end(), '/', '_');
    path_ = std::filesystem::temp_directory_path() /
            ("batchscope-" + test + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A path inside it, as text.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The message of the std::invalid_argument `call` throws, or "" when it throws none.
inline std::string invalid_argument_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

// Passes when `f` throws a UserError whose sentence contains every fragment; says what it said otherwise.
inline ::testing::AssertionResult refuses_with(const std::function<void()>& f,
                                               std::initializer_list<std::string> fragments) {
  try {
    f();
  } catch (const UserError& e) {
    const std::string said = e.what();
    for (const std::string& part : fragments) {
      if (said.find(part) == std::string::npos)
        return ::testing::AssertionFailure() << "the sentence lacks \"" << part << "\": " << said;
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& other) {
    return ::testing::AssertionFailure() << "threw something else than a UserError: " << other.what();
  }
  return ::testing::AssertionFailure() << "nothing was refused";
}

// The whole file as it is on disk.
inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `text` written to `path` as gzip -9 would.
inline void write_gzip(const std::string& path, const std::string& text) {
  gzFile out = gzopen(path.c_str(), "wb9");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
}

}  // namespace batchscope::testing_support
