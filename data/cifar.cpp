#include "data/cifar.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "data/idx.h"
#include "lib/common/errors.h"

namespace batchscope::data {
namespace {

[[noreturn]] void refuse_cifar(const std::string& path, const std::string& problem,
                               const std::string& fix = kFetchAgain) {
  throw UserError(located(path, 0, problem, fix));
}

}  // namespace

CifarRecords read_cifar(const std::string& path, const CifarFile& format) {
  require_dataset_file(path);
  std::error_code error;
  const uint64_t size = std::filesystem::file_size(path, error);
  if (error) refuse_cifar(path, "could not be read (" + error.message() + ")", "check the disk and the file");

  const uint64_t record = static_cast<uint64_t>(format.label_bytes + kCifarImageBytes);
  if (size == 0) refuse_cifar(path, "is empty");
  if (size % record != 0) {
    refuse_cifar(path, "holds " + std::to_string(size) + " bytes, which is not a whole number of " +
                           std::to_string(record) +
                           "-byte CIFAR records (it is truncated, or of another format)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) refuse_cifar(path, "cannot be opened", "check its permissions");
  std::vector<uint8_t> bytes(size);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size)
    refuse_cifar(path, "could not be read whole", "check the disk and the file");

  CifarRecords records;
  records.count = static_cast<int64_t>(size / record);
  records.pixels.resize(static_cast<size_t>(records.count * kCifarImageBytes));
  records.labels.resize(static_cast<size_t>(records.count));
  for (int64_t i = 0; i < records.count; ++i) {
    const uint8_t* at = bytes.data() + i * record;
    const uint8_t label = at[format.label_bytes - 1];
    if (label >= format.classes) {
      refuse_cifar(path, "holds label " + std::to_string(label) + " in record " + std::to_string(i) +
                             ", where labels are 0 to " + std::to_string(format.classes - 1) +
                             " (is it a file of the other CIFAR?)");
    }
    records.labels[i] = label;
    std::copy(at + format.label_bytes, at + record, records.pixels.begin() + i * kCifarImageBytes);
  }
  return records;
}

void write_cifar(const std::string& path, const CifarRecords& records, const CifarFile& format) {
  TORCH_CHECK(records.pixels.size() == static_cast<size_t>(records.count * kCifarImageBytes) &&
                  records.labels.size() == static_cast<size_t>(records.count),
              "write_cifar: ", records.count, " records need ", records.count * kCifarImageBytes,
              " pixels and as many labels");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) refuse_cifar(path, "cannot be written", "check that its directory exists and is writable");
  for (int64_t i = 0; i < records.count; ++i) {
    if (format.label_bytes == 2) out.put(0);
    out.put(static_cast<char>(records.labels[i]));
    out.write(reinterpret_cast<const char*>(records.pixels.data() + i * kCifarImageBytes), kCifarImageBytes);
  }
  out.close();
  if (!out) refuse_cifar(path, "could not be written completely", "check the disk");
}

}  // namespace batchscope::data
