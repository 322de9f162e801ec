#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "data/batch_loader.h"
#include "data/datasets.h"
#include "data/idx.h"
#include "lib/common/errors.h"
#include "tests/data_test_support.h"

namespace batchscope::data {
namespace {

namespace fs = std::filesystem;
using namespace testing_support;

TEST(Idx, RoundTripPlain) {
  TempDir dir;
  write_idx(dir.file("a"), sample_array(), false);
  EXPECT_EQ(read_bytes(dir.file("a")).size(), 4u + 3 * 4 + 12);
  const IdxArray back = read_idx(dir.file("a"));
  EXPECT_EQ(back.dims, sample_array().dims);
  EXPECT_EQ(back.bytes, sample_array().bytes);
}

TEST(Idx, RoundTripGzipRecognisedByContent) {
  TempDir dir;
  write_idx(dir.file("a.gz"), sample_array(), true);
  const auto raw = read_bytes(dir.file("a.gz"));
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(raw[0], 0x1f);
  EXPECT_EQ(raw[1], 0x8b);
  // The name does not matter: a gzip file without .gz is still read through zlib.
  fs::copy_file(dir.file("a.gz"), dir.file("plain-name"));
  for (const char* name : {"a.gz", "plain-name"}) {
    const IdxArray back = read_idx(dir.file(name));
    EXPECT_EQ(back.dims, sample_array().dims) << name;
    EXPECT_EQ(back.bytes, sample_array().bytes) << name;
  }
}

TEST(Idx, OneDimensionalAndEmpty) {
  TempDir dir;
  IdxArray labels{{5}, {0, 1, 2, 3, 9}};
  write_idx(dir.file("labels"), labels, false);
  EXPECT_EQ(read_idx(dir.file("labels")).bytes, labels.bytes);
  IdxArray empty{{0, 28, 28}, {}};
  write_idx(dir.file("empty"), empty, true);
  EXPECT_EQ(read_idx(dir.file("empty")).dims, empty.dims);
}

TEST(Idx, TruncatedFile) {
  TempDir dir;
  write_idx(dir.file("a"), sample_array(), false);
  auto raw = read_bytes(dir.file("a"));
  raw.resize(raw.size() - 2);
  write_bytes(dir.file("a"), raw);
  const std::string message = user_error([&] { read_idx(dir.file("a")); });
  EXPECT_NE(message.find(dir.file("a")), std::string::npos) << message;
  EXPECT_NE(message.find("is truncated: expected 12 data bytes, found 10"), std::string::npos) << message;
  EXPECT_NE(message.find("scripts/get_datasets.sh"), std::string::npos) << message;
}

void write_gzip_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(out);
}

TEST(Idx, TruncatedGzip) {
  TempDir dir;
  write_idx(dir.file("full"), sample_array(), false);
  auto raw = read_bytes(dir.file("full"));
  raw.resize(raw.size() - 5);
  write_gzip_bytes(dir.file("cut.gz"), raw);
  const std::string message = user_error([&] { read_idx(dir.file("cut.gz")); });
  EXPECT_NE(message.find("is truncated: expected 12 data bytes, found 7"), std::string::npos) << message;
}

TEST(Idx, TruncatedHeader) {
  TempDir dir;
  write_bytes(dir.file("a"), {0, 0, 8, 3, 0, 0});
  const std::string message = user_error([&] { read_idx(dir.file("a")); });
  EXPECT_NE(message.find("is truncated: its IDX header ends after 6 bytes of 16"), std::string::npos)
      << message;
}

TEST(Idx, WrongMagic) {
  TempDir dir;
  write_bytes(dir.file("a"), {'h', 'e', 'l', 'l', 'o'});
  const std::string message = user_error([&] { read_idx(dir.file("a")); });
  EXPECT_NE(message.find("is not an IDX file"), std::string::npos) << message;
}

TEST(Idx, WrongTypeByte) {
  TempDir dir;
  write_bytes(dir.file("a"), {0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0});  // one float32
  const std::string message = user_error([&] { read_idx(dir.file("a")); });
  EXPECT_NE(message.find("0x0d"), std::string::npos) << message;
  EXPECT_NE(message.find("only unsigned-byte IDX"), std::string::npos) << message;
}

TEST(Idx, BadDimensionCounts) {
  TempDir dir;
  write_bytes(dir.file("zero"), {0, 0, 8, 0});
  EXPECT_NE(user_error([&] { read_idx(dir.file("zero")); }).find("declares 0 dimensions"), std::string::npos);
  write_bytes(dir.file("five"), {0, 0, 8, 5, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 7});
  EXPECT_NE(user_error([&] { read_idx(dir.file("five")); }).find("declares 5 dimensions"), std::string::npos);
}

TEST(Idx, AbsurdSizeRefusedBeforeAllocating) {
  TempDir dir;
  // 4 x 2^32-1: ~3e38 elements, far past any memory; plain and gzip.
  const std::vector<uint8_t> header = {0,    0,    8,    4,    0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  write_bytes(dir.file("huge"), header);
  EXPECT_NE(user_error([&] { read_idx(dir.file("huge")); }).find("more than 2^34"), std::string::npos);
  // Below the cap but larger than the file: a gzip file is read as it comes, not allocated up front.
  write_gzip_bytes(dir.file("big.gz"), {0, 0, 8, 1, 0xf0, 0, 0, 0, 1, 2, 3});
  EXPECT_NE(user_error([&] { read_idx(dir.file("big.gz")); }).find("expected 4026531840 data bytes, found 3"),
            std::string::npos);
}

TEST(Idx, TrailingBytes) {
  TempDir dir;
  write_idx(dir.file("a"), sample_array(), false);
  auto raw = read_bytes(dir.file("a"));
  raw.push_back(42);
  write_bytes(dir.file("a"), raw);
  EXPECT_NE(user_error([&] { read_idx(dir.file("a")); }).find("has 1 bytes after the 12 data bytes"),
            std::string::npos);
  write_gzip_bytes(dir.file("a.gz"), raw);
  EXPECT_NE(user_error([&] { read_idx(dir.file("a.gz")); }).find("bytes after the 12 data bytes"),
            std::string::npos);
}

TEST(Idx, CorruptGzip) {
  TempDir dir;
  write_bytes(dir.file("a.gz"), {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef, 0, 1, 2});
  const std::string message = user_error([&] { read_idx(dir.file("a.gz")); });
  EXPECT_NE(message.find(dir.file("a.gz")), std::string::npos) << message;
}

TEST(Idx, MissingFile) {
  TempDir dir;
  const std::string message = user_error([&] { read_idx(dir.file("nothing")); });
  EXPECT_NE(message.find(dir.file("nothing") + ": does not exist"), std::string::npos) << message;
  EXPECT_NE(message.find("scripts/get_datasets.sh"), std::string::npos) << message;
}

// A dataset directory like MNIST's: 28x28 images whose pixel (r, c) of image i is (i + r + c) % 256,
// and labels i % 10.

}  // namespace
}  // namespace batchscope::data
