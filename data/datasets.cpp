#include "data/datasets.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>

#include "data/idx.h"
#include "lib/common/errors.h"

namespace batchscope::data {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSide = 28;
constexpr int kClasses = 10;
const std::array<std::string, 4> kFileNames = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

std::string expected_files() {
  return kFileNames[0] + ", " + kFileNames[1] + ", " + kFileNames[2] + " and " + kFileNames[3] +
         " (each may end in .gz)";
}

// The file's plain name if it is there, else its .gz name, else an empty string.
std::string find_file(const std::string& directory, const std::string& name) {
  const fs::path plain = fs::path(directory) / name;
  std::error_code error;
  if (fs::is_regular_file(plain, error)) return plain.string();
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

Dataset load_split(const DatasetLocation& location, const std::string& images_name,
                   const std::string& labels_name) {
  const std::string images_path = find_file(location.directory, images_name);
  const std::string labels_path = find_file(location.directory, labels_name);
  for (const auto& [path, name] :
       {std::pair{images_path, images_name}, std::pair{labels_path, labels_name}}) {
    if (path.empty()) {
      throw UserError(located((fs::path(location.directory) / name).string(), 0,
                              "does not exist (nor its .gz)", "run scripts/get_datasets.sh to fetch it"));
    }
  }

  IdxArray images = read_idx(images_path);
  if (images.dims.size() != 3 || images.dims[1] != kSide || images.dims[2] != kSide) {
    throw UserError(located(
        images_path, 0,
        "holds an array of " + dims_text(images.dims) + " where " + location.name + " images are Nx28x28",
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
  if (*worst >= kClasses) {
    throw UserError(located(labels_path, 0,
                            "holds label " + std::to_string(*worst) + " at index " +
                                std::to_string(worst - labels.bytes.begin()) + ", where labels are 0 to 9",
                            kFetchAgain));
  }

  Dataset dataset;
  dataset.name = location.name;
  // from_blob borrows the bytes; the conversion to float copies them before the vector goes.
  dataset.images = torch::from_blob(images.bytes.data(), {count, 1, kSide, kSide}, torch::kUInt8)
                       .to(torch::kFloat32)
                       .div_(255.0)
                       .sub_(dataset_mean(location.name))
                       .div_(dataset_std(location.name));
  dataset.labels = torch::from_blob(labels.bytes.data(), {count}, torch::kUInt8).to(torch::kInt64);
  return dataset;
}

}  // namespace

DatasetLocation locate_dataset(const std::string& spec) {
  DatasetLocation location;
  if (spec == "mnist" || spec == "fashion-mnist") {
    location.name = spec;
    const char* root = std::getenv("BATCHSCOPE_DATA");
    location.directory = (fs::path(root != nullptr && *root != '\0' ? root : "data") / spec).string();
  } else {
    location.directory = spec;
    fs::path last = fs::path(spec).lexically_normal();
    if (last.filename().empty()) last = last.parent_path();
    location.name = last.filename().string().find("fashion") != std::string::npos ? "fashion-mnist" : "mnist";
  }

  std::error_code error;
  if (!fs::is_directory(location.directory, error)) {
    throw UserError(located(location.directory, 0,
                            "no such directory for the " + location.name + " files " + expected_files(),
                            "run scripts/get_datasets.sh to fetch them, or put the files there"));
  }
  std::vector<std::string> missing;
  for (const auto& name : kFileNames) {
    if (find_file(location.directory, name).empty()) missing.push_back(name);
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i) list += (i == 0 ? "" : ", ") + missing[i];
    throw UserError(located(location.directory, 0,
                            "lacks " + list + " of the " + location.name + " files " + expected_files(),
                            "run scripts/get_datasets.sh to fetch them, or put the files there"));
  }
  return location;
}

bool is_real_data(const std::string& spec) { return spec != "synthetic"; }

DatasetSplits load_dataset(const DatasetLocation& location) {
  DatasetSplits splits;
  splits.train = load_split(location, kFileNames[0], kFileNames[1]);
  splits.test = load_split(location, kFileNames[2], kFileNames[3]);
  return splits;
}

double dataset_mean(const std::string& name) {
  TORCH_CHECK(name == "mnist" || name == "fashion-mnist", "dataset_mean: unknown dataset ", name);
  return name == "fashion-mnist" ? 0.2860 : 0.1307;
}

double dataset_std(const std::string& name) {
  TORCH_CHECK(name == "mnist" || name == "fashion-mnist", "dataset_std: unknown dataset ", name);
  return name == "fashion-mnist" ? 0.3530 : 0.3081;
}

}  // namespace batchscope::data
