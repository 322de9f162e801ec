#pragma once

// Helpers of the dataset tests: temporary directories, raw bytes, and the message of a UserError.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/idx.h"
#include "lib/common/errors.h"

namespace batchscope::data::testing_support {

namespace fs = std::filesystem;

// The message of the UserError that body throws, or a test failure when it throws none.
template <typename Body>
std::string user_error(Body body) {
  try {
    body();
  } catch (const UserError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no UserError was thrown";
  return "";
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "batchscope-data-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline IdxArray sample_array() {
  IdxArray array;
  array.dims = {3, 2, 2};
  for (int i = 0; i < 12; ++i) array.bytes.push_back(static_cast<uint8_t>(i * 20));
  return array;
}

}  // namespace batchscope::data::testing_support
