#include "data/idx.h"

#include <c10/util/Exception.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "lib/common/errors.h"

namespace batchscope::data {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;
constexpr int kMaxDims = 4;
// MNIST's largest file holds 4.7e7 bytes; a header asking for more than 2^34 is corrupt, and refusing
// it keeps a damaged file from making us allocate memory we do not have.
constexpr uint64_t kMaxElements = uint64_t{1} << 34;

[[noreturn]] void fail(const std::string& path, const std::string& problem,
                       const std::string& fix = kFetchAgain) {
  throw UserError(located(path, 0, problem, fix));
}

// Reads a file plain or through zlib, so that the IDX parsing below need not care which.
class ByteReader {
 public:
  ByteReader(const std::string& path, bool gzip) : path_(path), gzip_(gzip) {
    if (gzip_) {
      gz_ = gzopen(path.c_str(), "rb");
      if (gz_ == nullptr) fail(path, "cannot be opened", "check its permissions");
    } else {
      plain_.open(path, std::ios::binary);
      if (!plain_) fail(path, "cannot be opened", "check its permissions");
    }
  }
  ~ByteReader() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  // Reads up to size bytes; fewer only at the end of the data.
  size_t read(uint8_t* out, size_t size) {
    if (!gzip_) {
      plain_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(size));
      if (plain_.bad()) fail(path_, "could not be read", "check the disk and the file");
      return static_cast<size_t>(plain_.gcount());
    }
    size_t done = 0;
    while (done < size) {
      const auto chunk = static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30));
      const int got = gzread(gz_, out + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(gz_, &code);
        fail(path_, std::string("is not a valid gzip file (zlib: ") + message + ")");
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  std::string path_;
  bool gzip_;
  gzFile gz_ = nullptr;
  std::ifstream plain_;
};

bool starts_like_gzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 2> magic{};
  in.read(reinterpret_cast<char*>(magic.data()), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace

void require_dataset_file(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status))
    fail(path, "does not exist", "run scripts/get_datasets.sh to fetch it");
  if (!std::filesystem::is_regular_file(status)) fail(path, "is not a regular file", "give the file itself");
}

IdxArray read_idx(const std::string& path) {
  require_dataset_file(path);
  std::error_code error;

  const bool gzip = starts_like_gzip(path);
  ByteReader reader(path, gzip);

  std::array<uint8_t, 4> magic{};
  const size_t magic_read = reader.read(magic.data(), magic.size());
  if (magic_read < 2 || magic[0] != 0 || magic[1] != 0) {
    fail(path, "is not an IDX file (which starts with 00 00 08 and its number of dimensions)");
  }
  if (magic_read < magic.size()) {
    fail(path, "is truncated: its IDX header ends after " + std::to_string(magic_read) + " bytes");
  }
  if (magic[2] != kUnsignedByteType) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02x", magic[2]);
    fail(
        path,
        std::string("has IDX element type ") + type + ", but only unsigned-byte IDX (type 0x08) is supported",
        "use the MNIST or Fashion-MNIST files that scripts/get_datasets.sh fetches");
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > kMaxDims) {
    fail(path,
         "declares " + std::to_string(ndims) + " dimensions in its IDX header, where 1 to 4 are supported");
  }

  std::vector<uint8_t> raw_dims(4 * static_cast<size_t>(ndims));
  const size_t dims_read = reader.read(raw_dims.data(), raw_dims.size());
  const size_t header_size = magic.size() + raw_dims.size();
  if (dims_read < raw_dims.size()) {
    fail(path, "is truncated: its IDX header ends after " + std::to_string(magic.size() + dims_read) +
                   " bytes of " + std::to_string(header_size));
  }

  IdxArray array;
  uint64_t elements = 1;
  for (int d = 0; d < ndims; ++d) {
    const uint8_t* b = raw_dims.data() + 4 * d;
    const uint64_t dim = (uint64_t{b[0]} << 24) | (uint64_t{b[1]} << 16) | (uint64_t{b[2]} << 8) | b[3];
    array.dims.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && elements > kMaxElements / dim) {
      fail(path, "declares more than 2^34 elements in its IDX header, which no dataset here has");
    }
    elements *= dim;
  }

  if (!gzip) {
    // The size on disk tells a truncated or padded plain file before anything is allocated.
    const uint64_t file_size = std::filesystem::file_size(path, error);
    if (error) fail(path, "could not be read (" + error.message() + ")", "check the disk and the file");
    const uint64_t found = file_size - header_size;
    if (found < elements) {
      fail(path, "is truncated: expected " + std::to_string(elements) + " data bytes, found " +
                     std::to_string(found));
    }
    if (found > elements) {
      fail(path, "has " + std::to_string(found - elements) + " bytes after the " + std::to_string(elements) +
                     " data bytes its IDX header declares");
    }
  }

  // A gzip file's length is known only by reading it: grow the buffer as data arrives, so that a
  // corrupt header cannot make us allocate more than the file really holds.
  constexpr size_t kChunk = size_t{1} << 24;
  size_t filled = 0;
  while (filled < elements) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(elements - filled, kChunk));
    array.bytes.resize(filled + want);
    const size_t got = reader.read(array.bytes.data() + filled, want);
    filled += got;
    if (got < want) break;
  }
  array.bytes.resize(filled);
  if (filled < elements) {
    fail(path, "is truncated: expected " + std::to_string(elements) + " data bytes, found " +
                   std::to_string(filled));
  }
  uint8_t extra = 0;
  if (reader.read(&extra, 1) != 0) {
    fail(path, "has bytes after the " + std::to_string(elements) + " data bytes its IDX header declares");
  }
  return array;
}

void write_idx(const std::string& path, const IdxArray& array, bool gzip) {
  TORCH_CHECK(!array.dims.empty() && array.dims.size() <= kMaxDims, "write_idx: 1 to 4 dimensions, got ",
              array.dims.size());
  std::vector<uint8_t> header = {0, 0, kUnsignedByteType, static_cast<uint8_t>(array.dims.size())};
  uint64_t elements = 1;
  for (const int64_t dim : array.dims) {
    TORCH_CHECK(dim >= 0 && dim <= std::numeric_limits<uint32_t>::max(), "write_idx: dimension ", dim,
                " does not fit IDX");
    const auto d = static_cast<uint32_t>(dim);
    header.insert(header.end(), {static_cast<uint8_t>(d >> 24), static_cast<uint8_t>(d >> 16),
                                 static_cast<uint8_t>(d >> 8), static_cast<uint8_t>(d)});
    elements *= static_cast<uint64_t>(dim);
  }
  TORCH_CHECK(elements == array.bytes.size(), "write_idx: dimensions give ", elements,
              " elements but there are ", array.bytes.size(), " bytes");

  const std::string fix = "check that its directory exists and is writable";
  if (gzip) {
    gzFile out = gzopen(path.c_str(), "wb");
    if (out == nullptr) fail(path, "cannot be written", fix);
    bool ok =
        gzwrite(out, header.data(), static_cast<unsigned>(header.size())) == static_cast<int>(header.size());
    for (size_t done = 0; ok && done < array.bytes.size();) {
      const auto chunk = static_cast<unsigned>(std::min<size_t>(array.bytes.size() - done, 1u << 30));
      ok = gzwrite(out, array.bytes.data() + done, chunk) == static_cast<int>(chunk);
      done += chunk;
    }
    if (gzclose(out) != Z_OK || !ok) fail(path, "could not be written completely", fix);
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot be written", fix);
  out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(array.bytes.data()),
            static_cast<std::streamsize>(array.bytes.size()));
  out.close();
  if (!out) fail(path, "could not be written completely", fix);
}

}  // namespace batchscope::data
