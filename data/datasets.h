#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace batchscope::data {

// A labelled image set in memory on the host: images as float32 [N, 1, 28, 28], normalised with the
// dataset's usual mean and standard deviation, and labels as int64 [N].
struct Dataset {
  std::string name;  // "mnist" or "fashion-mnist"
  torch::Tensor images;
  torch::Tensor labels;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct DatasetSplits {
  Dataset train;  // 60,000 images in the full datasets
  Dataset test;   // 10,000
};

// What a config's or command's `data:` names: "mnist" or "fashion-mnist" (looked up in
// $BATCHSCOPE_DATA/<name>, else data/<name> under the working directory), or a directory holding the
// four IDX files of either. Throws UserError (naming the directory and the expected file names, and
// scripts/get_datasets.sh) when the files are missing.
struct DatasetLocation {
  std::string name;       // "mnist" or "fashion-mnist"
  std::string directory;  // where its IDX files are
};
DatasetLocation locate_dataset(const std::string& spec);

// True for the specs that name real data rather than "synthetic".
bool is_real_data(const std::string& spec);

// Reads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte (each also as .gz) from the location, checks that the images are 28x28,
// that images and labels agree in count and that labels are 0..9.
DatasetSplits load_dataset(const DatasetLocation& location);

// The normalisation the dataset is trained with: (pixel / 255 - mean) / std. Only for "mnist" and
// "fashion-mnist"; another name is a bug (TORCH_CHECK).
double dataset_mean(const std::string& name);
double dataset_std(const std::string& name);

}  // namespace batchscope::data
