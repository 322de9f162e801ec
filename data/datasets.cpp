#include "data/datasets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "data/idx.h"
#include "lib/common/errors.h"
#include "lib/common/words.h"

namespace batchscope::data {
namespace {

namespace fs = std::filesystem;

using Format = DatasetKind::Format;

const std::vector<std::string> kIdxTrain = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
const std::vector<std::string> kIdxTest = {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

std::vector<std::string> all_files(const DatasetKind& kind) {
  std::vector<std::string> files = kind.train_files;
  files.insert(files.end(), kind.test_files.begin(), kind.test_files.end());
  return files;
}

std::string expected_files(const DatasetKind& kind) {
  return listed(all_files(kind)) + (kind.format == Format::Idx ? " (each may end in .gz)" : "");
}

// The file's plain name if it is there, else (IDX only) its .gz name, else an empty string.
std::string find_file(const std::string& directory, const std::string& name, Format format) {
  const fs::path plain = fs::path(directory) / name;
  std::error_code error;
  if (fs::is_regular_file(plain, error)) return plain.string();
  if (format != Format::Idx) return "";
  fs::path gz = plain;
  gz += ".gz";
  if (fs::is_regular_file(gz, error)) return gz.string();
  return "";
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i == 0 ? "" : "x") + std::to_string(dims[i]);
  return text;
}

// Bytes [N, C, H, W] to float, normalised as the kind is trained; the bytes are copied before they go.
Dataset make_dataset(const DatasetKind& kind, std::vector<uint8_t>& pixels, std::vector<uint8_t>& labels) {
  const auto count = static_cast<int64_t>(labels.size());
  std::vector<int64_t> shape = {count};
  shape.insert(shape.end(), kind.image.begin(), kind.image.end());
  const auto channels = kind.image[0];
  const auto per_channel = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Tensor mean =
      torch::tensor(kind.mean, per_channel).to(torch::kFloat32).view({1, channels, 1, 1});
  const torch::Tensor deviation =
      torch::tensor(kind.deviation, per_channel).to(torch::kFloat32).view({1, channels, 1, 1});
  Dataset dataset;
  dataset.name = kind.name;
  dataset.images = torch::from_blob(pixels.data(), shape, torch::kUInt8)
                       .to(torch::kFloat32)
                       .div_(255.0)
                       .sub_(mean)
                       .div_(deviation);
  dataset.labels = torch::from_blob(labels.data(), {count}, torch::kUInt8).to(torch::kInt64);
  return dataset;
}

Dataset load_idx_split(const DatasetLocation& location, const std::vector<std::string>& names) {
  const DatasetKind& kind = location.kind();
  const std::string images_path = find_file(location.directory, names[0], kind.format);
  const std::string labels_path = find_file(location.directory, names[1], kind.format);
  for (const auto& [path, name] : {std::pair{images_path, names[0]}, std::pair{labels_path, names[1]}}) {
    if (path.empty()) {
      throw UserError(located((fs::path(location.directory) / name).string(), 0,
                              "does not exist (nor its .gz)", "run scripts/get_datasets.sh to fetch it"));
    }
  }

  IdxArray images = read_idx(images_path);
  const int64_t side = kind.image[1];
  if (images.dims.size() != 3 || images.dims[1] != side || images.dims[2] != kind.image[2]) {
    throw UserError(located(images_path, 0,
                            "holds an array of " + dims_text(images.dims) + " where " + kind.title +
                                " images are Nx" + dims_text({kind.image[1], kind.image[2]}),
                            kFetchAgain));
  }
  IdxArray labels = read_idx(labels_path);
  if (labels.dims.size() != 1) {
    throw UserError(located(labels_path, 0,
                            "holds an array of " + dims_text(labels.dims) + " where labels are one list",
                            kFetchAgain));
  }
  const int64_t count = images.dims[0];
  if (labels.dims[0] != count) {
    throw UserError(located(labels_path, 0,
                            "holds " + std::to_string(labels.dims[0]) + " labels for the " +
                                std::to_string(count) + " images of " + images_path,
                            "fetch both files again with scripts/get_datasets.sh"));
  }
  if (count == 0) throw UserError(located(images_path, 0, "holds no images", kFetchAgain));
  const auto worst = std::max_element(labels.bytes.begin(), labels.bytes.end());
  if (*worst >= kind.classes) {
    throw UserError(located(labels_path, 0,
                            "holds label " + std::to_string(*worst) + " at index " +
                                std::to_string(worst - labels.bytes.begin()) + ", where labels are 0 to " +
                                std::to_string(kind.classes - 1),
                            kFetchAgain));
  }
  return make_dataset(kind, images.bytes, labels.bytes);
}

// The records of every file, one after another (CIFAR-10's training split is five files).
Dataset load_cifar_split(const DatasetLocation& location, const std::vector<std::string>& names) {
  const DatasetKind& kind = location.kind();
  std::vector<uint8_t> pixels, labels;
  for (const std::string& name : names) {
    CifarRecords records = read_cifar((fs::path(location.directory) / name).string(), kind.cifar);
    pixels.insert(pixels.end(), records.pixels.begin(), records.pixels.end());
    labels.insert(labels.end(), records.labels.begin(), records.labels.end());
  }
  return make_dataset(kind, pixels, labels);
}

Dataset load_split(const DatasetLocation& location, const std::vector<std::string>& names) {
  return location.kind().format == Format::Idx ? load_idx_split(location, names)
                                               : load_cifar_split(location, names);
}

bool holds_any(const std::string& directory, const DatasetKind& kind) {
  for (const std::string& name : all_files(kind))
    if (!find_file(directory, name, kind.format).empty()) return true;
  return false;
}

}  // namespace

const std::vector<DatasetKind>& dataset_kinds() {
  static const std::vector<DatasetKind> kinds = [] {
    const CifarFile cifar10{1, 10};
    const CifarFile cifar100{2, 100};
    return std::vector<DatasetKind>{
        {"mnist", "MNIST", {1, 28, 28}, 10, {0.1307}, {0.3081}, 60000, Format::Idx, kIdxTrain, kIdxTest, {}},
        {"fashion-mnist",
         "Fashion-MNIST",
         {1, 28, 28},
         10,
         {0.2860},
         {0.3530},
         60000,
         Format::Idx,
         kIdxTrain,
         kIdxTest,
         {}},
        // The per-channel statistics of the training images, as torchvision's recipes give them.
        {"cifar10",
         "CIFAR-10",
         {3, 32, 32},
         10,
         {0.4914, 0.4822, 0.4465},
         {0.2470, 0.2435, 0.2616},
         50000,
         Format::Cifar,
         {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"},
         {"test_batch.bin"},
         cifar10},
        {"cifar100",
         "CIFAR-100",
         {3, 32, 32},
         100,
         {0.5071, 0.4865, 0.4409},
         {0.2673, 0.2564, 0.2762},
         50000,
         Format::Cifar,
         {"train.bin"},
         {"test.bin"},
         cifar100},
    };
  }();
  return kinds;
}

bool is_dataset_name(const std::string& name) {
  const auto& kinds = dataset_kinds();
  return std::any_of(kinds.begin(), kinds.end(), [&](const DatasetKind& k) { return k.name == name; });
}

const DatasetKind& dataset_kind(const std::string& name) {
  for (const DatasetKind& kind : dataset_kinds())
    if (kind.name == name) return kind;
  TORCH_CHECK(false, "dataset_kind: unknown dataset ", name);
}

std::string dataset_names() {
  std::vector<std::string> names;
  for (const DatasetKind& kind : dataset_kinds()) names.push_back(kind.name);
  std::string text = listed(names);
  const auto last = text.rfind(" and ");
  return text.replace(last, 5, " or ");
}

std::string nearest_dataset_name(const std::string& word) {
  std::string plain = lowercase(word);  // "CIFAR-10" and "Fashion_MNIST" are written as the names are
  std::replace(plain.begin(), plain.end(), '_', '-');
  std::vector<std::string> names;
  for (const DatasetKind& kind : dataset_kinds()) names.push_back(kind.name);
  return nearest_word(plain, names, 3);
}

const DatasetKind& kind_of_data(const std::string& spec) {
  if (is_dataset_name(spec)) return dataset_kind(spec);
  for (const char* name : {"cifar10", "cifar100"}) {
    if (holds_any(spec, dataset_kind(name))) return dataset_kind(name);
  }
  // Fashion-MNIST's files are named as MNIST's: its directory's name says which, in any case
  // ("Fashion-MNIST"), or the name of the one above torchvision's "raw" ("FashionMNIST/raw").
  fs::path directory = fs::path(spec).lexically_normal();
  if (directory.filename().empty()) directory = directory.parent_path();
  if (lowercase(directory.filename().string()) == "raw") directory = directory.parent_path();
  return dataset_kind(lowercase(directory.filename().string()).find("fashion") != std::string::npos
                          ? "fashion-mnist"
                          : "mnist");
}

DatasetLocation locate_dataset(const std::string& spec) {
  DatasetLocation location;
  location.name = kind_of_data(spec).name;
  if (is_dataset_name(spec)) {
    const char* root = std::getenv("BATCHSCOPE_DATA");
    location.directory = (fs::path(root != nullptr && *root != '\0' ? root : "data") / spec).string();
  } else {
    location.directory = spec;
  }
  const DatasetKind& kind = location.kind();

  std::error_code error;
  const std::string nearest = is_dataset_name(spec) ? "" : nearest_dataset_name(spec);
  if (!nearest.empty() && !fs::exists(spec, error)) {
    throw UserError(
        located(spec, 0, "is not a dataset (" + dataset_names() + ") or a directory of one's files",
                "did you mean " + nearest + "? scripts/get_datasets.sh " + nearest + " fetches it"));
  }
  if (!fs::is_directory(location.directory, error)) {
    const char* root = std::getenv("BATCHSCOPE_DATA");
    const bool from_variable = is_dataset_name(spec) && root != nullptr && *root != '\0';
    throw UserError(
        located(location.directory, 0,
                "no such directory for the " + kind.title + " files " + expected_files(kind) +
                    (from_variable ? " (BATCHSCOPE_DATA=" + std::string(root) + " chose it)" : ""),
                "run scripts/get_datasets.sh " + kind.name + " to fetch them, or put the files there" +
                    (from_variable ? ", or unset BATCHSCOPE_DATA to look in data/" : "")));
  }
  std::vector<std::string> missing;
  for (const auto& name : all_files(kind)) {
    if (find_file(location.directory, name, kind.format).empty()) missing.push_back(name);
  }
  if (!missing.empty()) {
    throw UserError(
        located(location.directory, 0,
                "lacks " + listed(missing) + " of the " + kind.title + " files " + expected_files(kind),
                "run scripts/get_datasets.sh " + kind.name + " to fetch them, or put the files there"));
  }
  return location;
}

bool is_real_data(const std::string& spec) { return spec != "synthetic"; }

std::optional<int64_t> training_images_in(const std::string& spec) {
  if (!is_real_data(spec)) return std::nullopt;
  try {
    const DatasetLocation location = locate_dataset(spec);
    const DatasetKind& kind = location.kind();
    if (kind.format == Format::Idx) {
      const IdxArray labels = read_idx(find_file(location.directory, kind.train_files[1], kind.format));
      if (labels.dims.size() != 1) return std::nullopt;
      return labels.dims[0];
    }
    const int64_t record = kind.cifar.label_bytes + kCifarImageBytes;
    int64_t images = 0;
    for (const std::string& name : kind.train_files) {
      const auto bytes = static_cast<int64_t>(fs::file_size(fs::path(location.directory) / name));
      if (bytes % record != 0) return std::nullopt;
      images += bytes / record;
    }
    return images;
  } catch (const std::exception&) {
    return std::nullopt;  // missing or damaged: no epoch to tell
  }
}

DatasetSplits load_dataset(const DatasetLocation& location) {
  DatasetSplits splits;
  splits.train = load_split(location, location.kind().train_files);
  splits.test = load_split(location, location.kind().test_files);
  return splits;
}

}  // namespace batchscope::data
