#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/cifar.h"

namespace batchscope::data {

// What is known of a dataset before its files are read: one row of a table.
struct DatasetKind {
  enum class Format { Idx, Cifar };
  std::string name;            // "mnist", "fashion-mnist", "cifar10", "cifar100"
  std::string title;           // "MNIST", "CIFAR-10": how its sentences name it
  std::vector<int64_t> image;  // one image: [channels, height, width]
  int64_t classes = 10;
  // Per channel, of pixel / 255: the usual normalisation the dataset is trained with.
  std::vector<double> mean;
  std::vector<double> deviation;
  int64_t train_images = 0;  // in the full dataset: an epoch
  Format format = Format::Idx;
  std::vector<std::string> train_files;  // IDX: images then labels (each may end in .gz)
  std::vector<std::string> test_files;
  CifarFile cifar;  // Cifar: its records' layout
};

// Every dataset batchscope reads, in the order sentences list them.
const std::vector<DatasetKind>& dataset_kinds();
// The row of a known name; another name is a bug (TORCH_CHECK).
const DatasetKind& dataset_kind(const std::string& name);
bool is_dataset_name(const std::string& name);
// "mnist, fashion-mnist, cifar10 or cifar100", for sentences that list them.
std::string dataset_names();
// The dataset name a mistyped one was meant for ("mnsit", "CIFAR-10", "fashion_mnist"): the nearest
// within 2 edits, case and '_' for '-' aside; empty where none is that near.
std::string nearest_dataset_name(const std::string& word);

// A labelled image set in memory on the host: images as float32 [N, channels, height, width], normalised
// with the dataset's mean and standard deviation per channel, and labels as int64 [N].
struct Dataset {
  std::string name;  // a DatasetKind's name
  torch::Tensor images;
  torch::Tensor labels;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct DatasetSplits {
  Dataset train;  // 60,000 images in the full MNIST datasets, 50,000 in CIFAR's
  Dataset test;   // 10,000
};

// What a config's or command's `data:` names: a dataset's name (looked up in $BATCHSCOPE_DATA/<name>,
// else data/<name> under the working directory), or a directory holding the files of one. Throws
// UserError (naming the directory, the expected file names, and scripts/get_datasets.sh) when files are
// missing.
struct DatasetLocation {
  std::string name;       // a DatasetKind's name
  std::string directory;  // where its files are
  const DatasetKind& kind() const { return dataset_kind(name); }
};
DatasetLocation locate_dataset(const std::string& spec);

// The kind of dataset a spec names, without reading anything but the directory's listing: a name's
// own, or a directory's by the files it holds (CIFAR-10's or CIFAR-100's binary files; else IDX files,
// of Fashion-MNIST where the directory's name says "fashion", of MNIST otherwise). Never throws.
const DatasetKind& kind_of_data(const std::string& spec);

// True for the specs that name real data rather than "synthetic".
bool is_real_data(const std::string& spec);

// How many training images the files a spec names hold, read from the labels file (IDX) or the files'
// sizes (CIFAR), without the images: the size of an epoch there. nullopt for synthetic data, or where the
// files are missing or damaged (a reader refuses them when it trains).
std::optional<int64_t> training_images_in(const std::string& spec);

// Reads the location's training and test files and checks them: IDX images of the kind's size, as many
// labels as images, every label below the kind's classes; CIFAR files of whole records.
DatasetSplits load_dataset(const DatasetLocation& location);

}  // namespace batchscope::data
