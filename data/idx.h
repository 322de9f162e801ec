#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchscope::data {

// The fix a damaged or missing dataset file's error gives.
inline constexpr char kFetchAgain[] = "run scripts/get_datasets.sh to fetch it again";

// Refuses (a UserError naming it) a dataset file that is not there or is not a regular file.
void require_dataset_file(const std::string& path);

// An IDX file of unsigned bytes (type 0x08), the format of MNIST and Fashion-MNIST: its dimensions
// and its data in row-major order.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

// Reads an IDX file, plain or gzip-compressed (recognised by its first bytes, whatever its name).
// Checks the magic number, the element type, the dimensions and that the data is exactly as long as
// they say; any problem (missing, truncated, not IDX, trailing bytes) is a UserError naming the file.
IdxArray read_idx(const std::string& path);

// Writes an IDX file of unsigned bytes, gzip-compressed when gzip is true (tests and tools).
void write_idx(const std::string& path, const IdxArray& array, bool gzip);

}  // namespace batchscope::data
