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

void write_split(const fs::path& dir, const std::string& prefix, int count, bool gzip) {
  IdxArray images{{count, 28, 28}, {}};
  IdxArray labels{{count}, {}};
  for (int i = 0; i < count; ++i) {
    for (int r = 0; r < 28; ++r) {
      for (int c = 0; c < 28; ++c) images.bytes.push_back(static_cast<uint8_t>((i + r + c) % 256));
    }
    labels.bytes.push_back(static_cast<uint8_t>(i % 10));
  }
  const std::string ext = gzip ? ".gz" : "";
  write_idx((dir / (prefix + "-images-idx3-ubyte" + ext)).string(), images, gzip);
  write_idx((dir / (prefix + "-labels-idx1-ubyte" + ext)).string(), labels, gzip);
}

fs::path make_dataset_dir(const TempDir& root, const std::string& name) {
  const fs::path dir = root.path() / name;
  fs::create_directories(dir);
  write_split(dir, "train", 100, false);
  write_split(dir, "t10k", 20, true);
  return dir;
}

TEST(Datasets, LoadsShapesTypesAndNormalisation) {
  TempDir root;
  const fs::path dir = make_dataset_dir(root, "digits");
  const DatasetLocation location = locate_dataset(dir.string());
  EXPECT_EQ(location.name, "mnist");
  EXPECT_EQ(location.directory, dir.string());
  const DatasetSplits splits = load_dataset(location);

  EXPECT_EQ(splits.train.name, "mnist");
  EXPECT_EQ(splits.train.size(), 100);
  EXPECT_EQ(splits.test.size(), 20);
  EXPECT_EQ(splits.train.images.sizes(), torch::IntArrayRef({100, 1, 28, 28}));
  EXPECT_EQ(splits.test.images.sizes(), torch::IntArrayRef({20, 1, 28, 28}));
  EXPECT_EQ(splits.train.images.scalar_type(), torch::kFloat32);
  EXPECT_EQ(splits.train.labels.scalar_type(), torch::kInt64);
  EXPECT_EQ(splits.train.labels.sizes(), torch::IntArrayRef({100}));

  // Image 7, row 3, column 5 holds 15; image 90, row 27, column 27 holds 144.
  EXPECT_NEAR(splits.train.images[7][0][3][5].item<float>(), (15 / 255.0 - 0.1307) / 0.3081, 1e-5);
  EXPECT_NEAR(splits.train.images[90][0][27][27].item<float>(), (144 / 255.0 - 0.1307) / 0.3081, 1e-5);
  EXPECT_NEAR(splits.test.images[0][0][0][0].item<float>(), -0.1307 / 0.3081, 1e-5);
  EXPECT_EQ(splits.train.labels[37].item<int64_t>(), 7);
  EXPECT_EQ(splits.test.labels[19].item<int64_t>(), 9);
}

TEST(Datasets, FashionNameAndNormalisationFromDirectoryName) {
  TempDir root;
  const fs::path dir = make_dataset_dir(root, "my-fashion-set");
  const DatasetLocation location = locate_dataset(dir.string() + "/");
  EXPECT_EQ(location.name, "fashion-mnist");
  const DatasetSplits splits = load_dataset(location);
  EXPECT_EQ(splits.test.name, "fashion-mnist");
  EXPECT_NEAR(splits.train.images[7][0][3][5].item<float>(), (15 / 255.0 - 0.2860) / 0.3530, 1e-5);
  EXPECT_EQ(dataset_kind("fashion-mnist").mean, std::vector<double>{0.2860});
  EXPECT_EQ(dataset_kind("mnist").deviation, std::vector<double>{0.3081});
}

TEST(Datasets, LabelOutOfRange) {
  TempDir root;
  const fs::path dir = make_dataset_dir(root, "digits");
  IdxArray labels{{100}, std::vector<uint8_t>(100, 3)};
  labels.bytes[42] = 12;
  write_idx((dir / "train-labels-idx1-ubyte").string(), labels, false);
  const std::string message = user_error([&] { load_dataset(locate_dataset(dir.string())); });
  EXPECT_NE(message.find("train-labels-idx1-ubyte: holds label 12 at index 42"), std::string::npos)
      << message;
}

TEST(Datasets, CountMismatch) {
  TempDir root;
  const fs::path dir = make_dataset_dir(root, "digits");
  write_idx((dir / "train-labels-idx1-ubyte").string(), IdxArray{{99}, std::vector<uint8_t>(99, 1)}, false);
  const std::string message = user_error([&] { load_dataset(locate_dataset(dir.string())); });
  EXPECT_NE(message.find("holds 99 labels for the 100 images"), std::string::npos) << message;
}

TEST(Datasets, WrongImageSize) {
  TempDir root;
  const fs::path dir = make_dataset_dir(root, "digits");
  write_idx((dir / "train-images-idx3-ubyte").string(), IdxArray{{100, 32, 32}, std::vector<uint8_t>(102400)},
            false);
  const std::string message = user_error([&] { load_dataset(locate_dataset(dir.string())); });
  EXPECT_NE(message.find("100x32x32"), std::string::npos) << message;
}

TEST(Datasets, PlainFilePreferredOverGzip) {
  TempDir root;
  const fs::path dir = make_dataset_dir(root, "digits");
  // A damaged .gz next to a good plain file is never opened.
  write_bytes((dir / "train-images-idx3-ubyte.gz").string(), {0x1f, 0x8b, 0});
  EXPECT_EQ(load_dataset(locate_dataset(dir.string())).train.size(), 100);
}

TEST(Datasets, MissingFilesListed) {
  TempDir root;
  const fs::path dir = make_dataset_dir(root, "digits");
  fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
  const std::string message = user_error([&] { locate_dataset(dir.string()); });
  EXPECT_NE(message.find(dir.string() + ": lacks t10k-labels-idx1-ubyte of the MNIST files"),
            std::string::npos)
      << message;
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           ".gz", "get_datasets.sh"}) {
    EXPECT_NE(message.find(name), std::string::npos) << name << " in " << message;
  }
}

TEST(Datasets, MissingDirectory) {
  TempDir root;
  const std::string message = user_error([&] { locate_dataset(root.file("absent")); });
  EXPECT_NE(message.find(root.file("absent") + ": no such directory"), std::string::npos) << message;
  EXPECT_NE(message.find("t10k-images-idx3-ubyte"), std::string::npos) << message;
  EXPECT_NE(message.find("scripts/get_datasets.sh"), std::string::npos) << message;
}

TEST(Datasets, AMistypedNameIsAnsweredWithTheDatasetItWasMeantFor) {
  EXPECT_EQ(nearest_dataset_name("mnsit"), "mnist");
  EXPECT_EQ(nearest_dataset_name("CIFAR-10"), "cifar10");
  EXPECT_EQ(nearest_dataset_name("Fashion_MNIST"), "fashion-mnist");
  EXPECT_EQ(nearest_dataset_name("cifar100"), "cifar100");
  EXPECT_EQ(nearest_dataset_name("imagenet"), "");
  EXPECT_EQ(nearest_dataset_name("data/my_digits"), "");
  const std::string message = user_error([&] { locate_dataset("mnsit"); });
  EXPECT_NE(
      message.find("mnsit: is not a dataset (mnist, fashion-mnist, cifar10 or cifar100) or a directory"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("did you mean mnist? scripts/get_datasets.sh mnist fetches it"), std::string::npos)
      << message;
  // A directory of that name is read as one.
  TempDir root;
  fs::create_directories(root.file("mnsit"));
  const fs::path before = fs::current_path();
  fs::current_path(root.path());
  const std::string in_directory = user_error([&] { locate_dataset("mnsit"); });
  fs::current_path(before);
  EXPECT_NE(in_directory.find("mnsit: lacks "), std::string::npos) << in_directory;
}

// A CIFAR file of `count` records whose pixel (channel c, row r, column x) of record i is
// (first + 3i + 50c + r + x) mod 256, labelled (first + i) mod classes.
CifarRecords cifar_records(int64_t count, int first, int64_t classes) {
  CifarRecords records;
  records.count = count;
  for (int64_t i = 0; i < count; ++i) {
    for (int c = 0; c < 3; ++c)
      for (int r = 0; r < 32; ++r)
        for (int x = 0; x < 32; ++x)
          records.pixels.push_back(static_cast<uint8_t>((first + 3 * i + 50 * c + r + x) % 256));
    records.labels.push_back(static_cast<uint8_t>((first + i) % classes));
  }
  return records;
}

fs::path make_cifar10_dir(const TempDir& root, const std::string& name) {
  const fs::path dir = root.path() / name;
  fs::create_directories(dir);
  for (int f = 1; f <= 5; ++f) {
    write_cifar((dir / ("data_batch_" + std::to_string(f) + ".bin")).string(), cifar_records(4, 10 * f, 10),
                CifarFile{1, 10});
  }
  write_cifar((dir / "test_batch.bin").string(), cifar_records(3, 0, 10), CifarFile{1, 10});
  return dir;
}

TEST(Cifar, TenReadsItsFiveTrainingFilesInOrderAndNormalisesEachChannel) {
  TempDir root;
  const fs::path dir = make_cifar10_dir(root, "downloaded");
  const DatasetLocation location = locate_dataset(dir.string());
  EXPECT_EQ(location.name, "cifar10");
  const DatasetSplits splits = load_dataset(location);
  EXPECT_EQ(splits.train.name, "cifar10");
  EXPECT_EQ(splits.train.images.sizes(), torch::IntArrayRef({20, 3, 32, 32}));
  EXPECT_EQ(splits.test.images.sizes(), torch::IntArrayRef({3, 3, 32, 32}));
  const DatasetKind& kind = dataset_kind("cifar10");
  // File 3's record 2 is sample 4 * 2 + 2: its first is 30, so channel 2, row 5, column 7 holds 148.
  for (int c = 0; c < 3; ++c) {
    const double pixel = (30 + 3 * 2 + 50 * c + 5 + 7) % 256;
    EXPECT_NEAR(splits.train.images[10][c][5][7].item<float>(),
                (pixel / 255 - kind.mean[c]) / kind.deviation[c], 1e-5)
        << "channel " << c;
  }
  std::vector<int64_t> labels(splits.train.labels.data_ptr<int64_t>(),
                              splits.train.labels.data_ptr<int64_t>() + 20);
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(splits.test.labels[2].item<int64_t>(), 2);
}

TEST(Cifar, HundredTakesEachRecordsFineLabel) {
  TempDir root;
  const fs::path dir = root.path() / "c100";
  fs::create_directories(dir);
  // Two records, coarse labels 3 and 19, fine labels 57 and 99.
  std::vector<uint8_t> bytes;
  for (const auto& [coarse, fine] : {std::pair{3, 57}, std::pair{19, 99}}) {
    bytes.push_back(static_cast<uint8_t>(coarse));
    bytes.push_back(static_cast<uint8_t>(fine));
    bytes.insert(bytes.end(), kCifarImageBytes, static_cast<uint8_t>(fine));
  }
  write_bytes((dir / "train.bin").string(), bytes);
  write_cifar((dir / "test.bin").string(), cifar_records(1, 42, 100), CifarFile{2, 100});
  const DatasetLocation location = locate_dataset(dir.string());
  EXPECT_EQ(location.name, "cifar100");
  EXPECT_EQ(location.kind().classes, 100);
  const DatasetSplits splits = load_dataset(location);
  EXPECT_EQ(splits.train.labels[0].item<int64_t>(), 57);
  EXPECT_EQ(splits.train.labels[1].item<int64_t>(), 99);
  EXPECT_EQ(splits.test.labels[0].item<int64_t>(), 42);
  const DatasetKind& kind = dataset_kind("cifar100");
  EXPECT_NEAR(splits.train.images[1][1][31][31].item<float>(),
              (99 / 255.0 - kind.mean[1]) / kind.deviation[1], 1e-5);
}

TEST(Cifar, RefusesAFileOfPartRecordsAndALabelBeyondItsClasses) {
  TempDir root;
  const fs::path dir = make_cifar10_dir(root, "cifar");
  std::vector<uint8_t> cut(3073 * 2 + 5, 1);
  write_bytes((dir / "data_batch_4.bin").string(), cut);
  std::string message = user_error([&] { load_dataset(locate_dataset(dir.string())); });
  EXPECT_NE(message.find("data_batch_4.bin: holds 6151 bytes, which is not a whole number of 3073-byte CIFAR "
                         "records"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("get_datasets.sh"), std::string::npos) << message;

  CifarRecords records = cifar_records(3, 0, 10);
  records.labels[1] = 10;
  write_cifar((dir / "data_batch_4.bin").string(), records, CifarFile{1, 10});
  message = user_error([&] { load_dataset(locate_dataset(dir.string())); });
  EXPECT_NE(message.find("data_batch_4.bin: holds label 10 in record 1, where labels are 0 to 9"),
            std::string::npos)
      << message;
  write_bytes((dir / "data_batch_4.bin").string(), {});
  message = user_error([&] { load_dataset(locate_dataset(dir.string())); });
  EXPECT_NE(message.find("data_batch_4.bin: is empty"), std::string::npos) << message;
}

TEST(Cifar, MissingFilesAreListedWithTheCommandThatFetchesThem) {
  TempDir root;
  const fs::path dir = make_cifar10_dir(root, "cifar");
  fs::remove(dir / "data_batch_2.bin");
  fs::remove(dir / "test_batch.bin");
  const std::string message = user_error([&] { locate_dataset(dir.string()); });
  EXPECT_NE(message.find(dir.string() + ": lacks data_batch_2.bin and test_batch.bin of the CIFAR-10 files"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("run scripts/get_datasets.sh cifar10"), std::string::npos) << message;
}

TEST(Datasets, KindsByNameAndByTheFilesADirectoryHolds) {
  EXPECT_EQ(dataset_names(), "mnist, fashion-mnist, cifar10 or cifar100");
  EXPECT_TRUE(is_dataset_name("cifar100"));
  EXPECT_FALSE(is_dataset_name("imagenet"));
  EXPECT_EQ(kind_of_data("cifar100").image, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(kind_of_data("cifar100").classes, 100);
  // Fashion-MNIST by its directory's name in any case, or the one above torchvision's raw/.
  for (const char* fashion :
       {"/x/fashion-mnist", "/x/Fashion-MNIST/", "/x/FashionMNIST/raw", "fashion_mnist"})
    EXPECT_EQ(kind_of_data(fashion).name, "fashion-mnist") << fashion;
  for (const char* digits : {"/x/MNIST/raw", "/home/fashion-lab/mnist", "/x/mnist"})
    EXPECT_EQ(kind_of_data(digits).name, "mnist") << digits;
  EXPECT_EQ(kind_of_data("mnist").train_images, 60000);
  EXPECT_EQ(kind_of_data("cifar10").train_images, 50000);
  // A directory that is not there is read by its name, as before any file is looked at.
  EXPECT_EQ(kind_of_data("/nowhere/fashion").name, "fashion-mnist");
  EXPECT_EQ(kind_of_data("/nowhere/cifar10").name, "mnist");
  TempDir root;
  EXPECT_EQ(kind_of_data(make_cifar10_dir(root, "fashion").string()).name, "cifar10");
  for (const DatasetKind& kind : dataset_kinds()) {
    EXPECT_EQ(kind.mean.size(), static_cast<size_t>(kind.image[0])) << kind.name;
    EXPECT_EQ(kind.deviation.size(), static_cast<size_t>(kind.image[0])) << kind.name;
  }
}

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

TEST(Datasets, LocateByNameUnderBatchscopeData) {
  TempDir root;
  make_dataset_dir(root, "fashion-mnist");
  ScopedEnv env("BATCHSCOPE_DATA", root.path().c_str());
  const DatasetLocation location = locate_dataset("fashion-mnist");
  EXPECT_EQ(location.name, "fashion-mnist");
  EXPECT_EQ(location.directory, (root.path() / "fashion-mnist").string());
  const std::string message = user_error([] { locate_dataset("mnist"); });
  EXPECT_NE(message.find((root.path() / "mnist").string()), std::string::npos) << message;
  make_cifar10_dir(root, "cifar10");
  EXPECT_EQ(locate_dataset("cifar10").directory, (root.path() / "cifar10").string());
  EXPECT_EQ(load_dataset(locate_dataset("cifar10")).train.size(), 20);
}

TEST(Datasets, LocateByNameUnderWorkingDirectory) {
  ScopedEnv env("BATCHSCOPE_DATA", nullptr);
  TempDir root;
  make_dataset_dir(root, "data/mnist");
  const fs::path previous = fs::current_path();
  fs::current_path(root.path());
  DatasetLocation location;
  EXPECT_NO_THROW(location = locate_dataset("mnist"));
  fs::current_path(previous);
  EXPECT_EQ(location.name, "mnist");
  EXPECT_EQ(location.directory, "data/mnist");
}

TEST(Datasets, RealOrSynthetic) {
  EXPECT_FALSE(is_real_data("synthetic"));
  EXPECT_TRUE(is_real_data("mnist"));
  EXPECT_TRUE(is_real_data("fashion-mnist"));
  EXPECT_TRUE(is_real_data("/some/dir"));
}

// n images whose pixels all hold their index, labelled with their index, so a batch shows which
// images it holds and whether images and labels stayed paired.
Dataset indexed_dataset(int64_t n) {
  Dataset dataset;
  dataset.name = "mnist";
  dataset.labels = torch::arange(n, torch::kInt64);
  dataset.images = dataset.labels.to(torch::kFloat32).view({n, 1, 1, 1}).expand({n, 1, 28, 28}).contiguous();
  return dataset;
}

std::vector<int64_t> epoch_order(BatchLoader& loader, int64_t epoch, std::vector<int64_t>* sizes = nullptr) {
  loader.start_epoch(epoch);
  std::vector<int64_t> order;
  Batch batch;
  while (loader.next(batch)) {
    EXPECT_EQ(batch.images.sizes().slice(1), torch::IntArrayRef({1, 28, 28}));
    EXPECT_TRUE(torch::equal(batch.images.amax({1, 2, 3}), batch.labels.to(torch::kFloat32)));
    EXPECT_TRUE(torch::equal(batch.images.amin({1, 2, 3}), batch.labels.to(torch::kFloat32)));
    if (sizes != nullptr) sizes->push_back(batch.labels.size(0));
    for (int64_t i = 0; i < batch.labels.size(0); ++i) order.push_back(batch.labels[i].item<int64_t>());
  }
  return order;
}

TEST(BatchLoader, EachImageOncePerEpochWithPartialLastBatch) {
  const Dataset dataset = indexed_dataset(23);
  BatchLoader loader(dataset, 5, 7, true, torch::kCPU);
  EXPECT_EQ(loader.batches_per_epoch(), 5);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> sizes;
    std::vector<int64_t> order = epoch_order(loader, epoch, &sizes);
    EXPECT_EQ(sizes, std::vector<int64_t>({5, 5, 5, 5, 3}));
    std::sort(order.begin(), order.end());
    std::vector<int64_t> all(23);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(order, all);
  }
}

TEST(BatchLoader, SeededOrderRepeatsAndChangesPerEpoch) {
  const Dataset dataset = indexed_dataset(50);
  BatchLoader first(dataset, 8, 1234, true, torch::kCPU);
  BatchLoader second(dataset, 8, 1234, true, torch::kCPU);
  BatchLoader other_seed(dataset, 8, 99, true, torch::kCPU);
  const auto epoch0 = epoch_order(first, 0);
  EXPECT_EQ(epoch0, epoch_order(second, 0));
  EXPECT_EQ(epoch0, epoch_order(first, 0));
  EXPECT_NE(epoch0, epoch_order(first, 1));
  EXPECT_NE(epoch0, epoch_order(other_seed, 0));
  std::vector<int64_t> in_order(50);
  std::iota(in_order.begin(), in_order.end(), 0);
  EXPECT_NE(epoch0, in_order);
  // seed + epoch: seed 1234 in epoch 1 is seed 1235 in epoch 0.
  BatchLoader next_seed(dataset, 8, 1235, true, torch::kCPU);
  EXPECT_EQ(epoch_order(first, 1), epoch_order(next_seed, 0));
}

TEST(BatchLoader, LeavesGlobalGeneratorAlone) {
  const Dataset dataset = indexed_dataset(50);
  torch::manual_seed(5);
  const torch::Tensor expected = torch::rand({4});
  torch::manual_seed(5);
  BatchLoader loader(dataset, 8, 3, true, torch::kCPU);
  epoch_order(loader, 4);
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}

TEST(BatchLoader, InOrderWithoutShuffle) {
  const Dataset dataset = indexed_dataset(10);
  BatchLoader loader(dataset, 4, 3, false, torch::kCPU);
  std::vector<int64_t> in_order(10);
  std::iota(in_order.begin(), in_order.end(), 0);
  EXPECT_EQ(epoch_order(loader, 0), in_order);
  EXPECT_EQ(epoch_order(loader, 5), in_order);
}

TEST(BatchLoader, DropLast) {
  const Dataset dataset = indexed_dataset(23);
  BatchLoader loader(dataset, 5, 0, true, torch::kCPU, /*drop_last=*/true);
  EXPECT_EQ(loader.batches_per_epoch(), 4);
  std::vector<int64_t> sizes;
  const auto order = epoch_order(loader, 0, &sizes);
  EXPECT_EQ(sizes, std::vector<int64_t>({5, 5, 5, 5}));
  EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 20u);

  BatchLoader whole(dataset, 23, 0, true, torch::kCPU, /*drop_last=*/true);
  EXPECT_EQ(whole.batches_per_epoch(), 1);
  EXPECT_EQ(epoch_order(whole, 0).size(), 23u);
}

TEST(BatchLoader, BatchSizeOutOfRange) {
  const Dataset dataset = indexed_dataset(23);
  const std::string message = user_error([&] { BatchLoader(dataset, 24, 0, true, torch::kCPU); });
  EXPECT_NE(message.find("batch size 24 is larger than the 23 images of mnist"), std::string::npos)
      << message;
  EXPECT_FALSE(user_error([&] { BatchLoader(dataset, 0, 0, true, torch::kCPU); }).empty());
}

TEST(BatchLoader, ToDeviceOnCpuKeepsTheTensors) {
  const Dataset dataset = indexed_dataset(12);
  BatchLoader loader(dataset, 5, 0, true, torch::kCPU);
  EXPECT_EQ(loader.batch_size(), 5);
  EXPECT_TRUE(loader.device().is_cpu());
  Batch host;
  ASSERT_TRUE(loader.next_host_batch(host));
  const Batch device = loader.to_device(host);
  EXPECT_EQ(device.images.data_ptr(), host.images.data_ptr());
  EXPECT_EQ(device.labels.data_ptr(), host.labels.data_ptr());
  // A batch is a copy: changing it leaves the dataset as it was.
  host.images.fill_(-1);
  EXPECT_EQ(dataset.images.min().item<float>(), 0.0f);
}

}  // namespace
}  // namespace batchscope::data
