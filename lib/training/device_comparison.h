#pragma once

#include <string>
#include <vector>

#include "lib/training/training.h"

namespace batchscope {

// One quantity of one epoch, as trained on the two devices of a comparison.
struct AgreementRow {
  int epoch = 0;
  std::string quantity;  // train_loss, train_accuracy, test_loss, test_accuracy
  double first = 0, second = 0;
  int digits = 0;  // agreeing_significant_digits(first, second)
};

struct DeviceComparison {
  std::string first_device, second_device;  // resolved
  Precision precision = Precision::FP32;    // both runs' (train --precision)
  TrainingOutcome first, second;
  std::vector<AgreementRow> rows;
  int min_digits = 0;
  std::string jsonl_path;  // compare.jsonl
  // Where one run trained fewer epochs (it diverged, and a diverged run ends): which, and that only the
  // epochs both trained are compared; empty where both trained alike.
  std::string unequal;
};

// Sets the two runs' epochs side by side (c.first, c.second): fills rows, min_digits and, where one run
// trained fewer epochs, unequal; returns a "comparison" record per epoch both trained.
std::vector<Json> compare_epochs(DeviceComparison& c);

// Trains the same configuration on two devices, into <out_dir>/<device> (cuda:0 -> cuda_0; the second of
// two equal devices gets a suffix "_2"), and compares the epochs' losses and accuracies. Writes
// <out_dir>/compare.jsonl: a "run" record, one "comparison" record per epoch and "end". Every output
// directory is checked before anything is trained.
DeviceComparison compare_devices(const TrainingOptions& options, const std::string& first_device,
                                 const std::string& second_device);

// The comparison as a table, one line per epoch and quantity, and a closing verdict.
std::string format_comparison_table(const DeviceComparison& comparison);

// How many significant digits a and b share: the largest n in 1..16 for which both, rounded to n
// significant decimal digits (as printf's %.{n-1}e rounds their exact binary values), read the same,
// or 0 when none does (different signs, zero against non-zero, NaN). Equal values give 17: 17 digits
// tell any two different doubles apart. E.g. 0.123456 and 0.123499 share 4; 0.1499 and 0.1501 share 3.
int agreeing_significant_digits(double a, double b);

}  // namespace batchscope
