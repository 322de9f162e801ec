#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchscope::data {

// One file of CIFAR's binary version: CIFAR-10's data_batch_N.bin and test_batch.bin (a label byte,
// then the image), CIFAR-100's train.bin and test.bin (a coarse and a fine label byte, then the image).
// Each image is 3x32x32 bytes: the red plane, the green, the blue, each row by row.
struct CifarFile {
  int label_bytes = 1;  // 1 for CIFAR-10, 2 for CIFAR-100 (its fine label, the last, is the class)
  int64_t classes = 10;
};

inline constexpr int64_t kCifarImageBytes = 3 * 32 * 32;

struct CifarRecords {
  int64_t count = 0;
  std::vector<uint8_t> pixels;  // count x 3072, in the file's order
  std::vector<uint8_t> labels;  // count classes
};

// Reads a whole file and checks that it is a whole number of records (a truncated or foreign file is
// caught by its size before anything is read) and that every label is below the classes; any problem is
// a UserError naming the file.
CifarRecords read_cifar(const std::string& path, const CifarFile& format);

// Writes the records as a file of that format (tests and tools); a CIFAR-100 record gets coarse label 0.
void write_cifar(const std::string& path, const CifarRecords& records, const CifarFile& format);

}  // namespace batchscope::data
