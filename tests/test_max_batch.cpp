#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "lib/common/errors.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/gpu_memory_cap.h"
#include "lib/records/records.h"
#include "lib/records/run_store.h"
#include "lib/sweep/batch_maximum.h"
#include "lib/sweep/kept_search.h"
#include "lib/sweep/max_batch.h"
#include "lib/timing/step_runner.h"
#include "tests/test_support.h"

using namespace batchscope;

namespace {

constexpr int64_t kMiB = 1024 * 1024;

// A device on which `capacity` samples fit for one step and `repeated_capacity` for several in a row.
struct FakeDevice {
  int64_t capacity = 0;
  int64_t repeated_capacity = 0;
  std::vector<std::pair<int64_t, int>> calls;

  ProbeOutcome operator()(int64_t batch_size, int steps) {
    calls.emplace_back(batch_size, steps);
    ProbeOutcome outcome;
    outcome.fits = batch_size <= (steps > 1 ? repeated_capacity : capacity);
    if (outcome.fits) {
      outcome.peak_memory_bytes = batch_size * 1000;
    } else {
      outcome.error = "fake out of memory at " + std::to_string(batch_size);
    }
    return outcome;
  }
};

MaxBatchResult search(FakeDevice& device, const MaxBatchOptions& options = {}) {
  return find_max_batch([&](int64_t b, int steps) { return device(b, steps); }, options, {});
}

int bit_length(int64_t k) {
  int bits = 0;
  for (; k > 0; k >>= 1) ++bits;
  return bits;
}

// mnist_cnn on its 1x28x28 input and 10 classes, on the CPU, under this experiment name.
ExperimentConfig mnist_on_cpu(const std::string& name) {
  ExperimentConfig e;
  e.name = name;
  e.model = "mnist_cnn";
  e.input_shape = {1, 28, 28};
  e.classes = 10;
  e.device = "cpu";
  return e;
}

// Every CPU memory test leaves the process without a limit, whatever it asserted.
class CpuMemory : public ::testing::Test {
 protected:
  void SetUp() override { cpu_memory::install(); }
  void TearDown() override { cpu_memory::set_limit(std::nullopt); }
};

TEST(FindMaxBatch, FindsTheCapacityInLogarithmicallyManyTries) {
  for (int64_t k : {1, 2, 3, 7, 64, 100, 1000, 65535}) {
    SCOPED_TRACE("capacity " + std::to_string(k));
    FakeDevice device{k, k, {}};
    const MaxBatchResult result = search(device);
    ASSERT_TRUE(result.max_batch.has_value());
    EXPECT_EQ(*result.max_batch, k);
    EXPECT_EQ(result.first_failure, k + 1);
    EXPECT_FALSE(result.hit_upper_bound);
    EXPECT_EQ(result.error, "fake out of memory at " + std::to_string(k + 1));
    EXPECT_LE(result.tries.size(), static_cast<std::size_t>(2 * bit_length(k) + 3));
    ASSERT_EQ(result.tries.size(), device.calls.size());
    std::set<std::pair<int64_t, int>> seen;
    for (const MaxBatchTry& t : result.tries) {
      EXPECT_EQ(t.fits, t.batch_size <= k) << t.batch_size;
      if (t.fits) {
        EXPECT_EQ(t.peak_memory_bytes, t.batch_size * 1000);
      } else {
        EXPECT_FALSE(t.error.empty());
      }
      EXPECT_TRUE(seen.emplace(t.batch_size, t.steps).second) << "tried twice: " << t.batch_size;
    }
    const MaxBatchTry& last = result.tries.back();
    EXPECT_EQ(last.stage, TryStage::Confirm);
    EXPECT_EQ(last.batch_size, k);
    EXPECT_EQ(last.steps, 3);
    EXPECT_TRUE(last.fits);
    EXPECT_EQ(result.peak_memory_bytes, k * 1000);
  }
}

TEST(FindMaxBatch, NothingFitsWhenBatchSizeOneFails) {
  FakeDevice device{0, 0, {}};
  const MaxBatchResult result = search(device);
  EXPECT_FALSE(result.max_batch.has_value());
  EXPECT_EQ(result.first_failure, 1);
  EXPECT_EQ(result.error, "fake out of memory at 1");
  ASSERT_EQ(result.tries.size(), 1u);
  EXPECT_FALSE(result.tries[0].fits);
}

// A model that cannot run a batch of 1 (batch norm in training): no try below the smallest size, by growth,
// bisection or the confirmation's walk down; where the smallest does not fit, nothing does.
TEST(FindMaxBatch, NeverTriesBelowTheSmallestSize) {
  for (const auto& [capacity, repeated, start] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {0, 0, 2}, {1, 1, 8}, {100, 100, 1}, {7, 2, 1}, {5, 1, 4}, {3, 3, 16}}) {
    SCOPED_TRACE("capacity " + std::to_string(capacity) + ", repeated " + std::to_string(repeated) +
                 ", start " + std::to_string(start));
    FakeDevice device{capacity, repeated, {}};
    MaxBatchOptions options;
    options.smallest = 2;
    options.start = start;
    const MaxBatchResult result = search(device, options);
    for (const auto& [b, steps] : device.calls) EXPECT_GE(b, 2) << "tried " << b;
    const std::set<std::pair<int64_t, int>> distinct(device.calls.begin(), device.calls.end());
    EXPECT_EQ(distinct.size(), device.calls.size()) << "a try made twice";
    EXPECT_EQ(result.smallest, 2);
    if (repeated >= 2) {
      EXPECT_EQ(result.max_batch, repeated);
    } else {
      EXPECT_FALSE(result.max_batch.has_value());
      EXPECT_EQ(result.stopped_by, "nothing fits");
    }
  }
  // A range wholly below the smallest size: nothing fits, and nothing is tried.
  FakeDevice device{10, 10, {}};
  MaxBatchOptions below;
  below.smallest = 2;
  below.upper_bound = 1;
  const MaxBatchResult result = search(device, below);
  EXPECT_FALSE(result.max_batch.has_value());
  EXPECT_TRUE(device.calls.empty());
  // A batch that runs one step at 1 and not three: batch 1 is not tried again with the same steps.
  FakeDevice single{1, 0, {}};
  search(single);
  const std::set<std::pair<int64_t, int>> distinct(single.calls.begin(), single.calls.end());
  EXPECT_EQ(distinct.size(), single.calls.size());
}

TEST(FindMaxBatch, StopsAtTheUpperBound) {
  for (int64_t k : {100, 101, 100000}) {
    FakeDevice device{k, k, {}};
    MaxBatchOptions options;
    options.upper_bound = 100;
    const MaxBatchResult result = search(device, options);
    EXPECT_EQ(result.max_batch, 100);
    EXPECT_TRUE(result.hit_upper_bound);
    EXPECT_FALSE(result.first_failure.has_value());
    for (const MaxBatchTry& t : result.tries) EXPECT_LE(t.batch_size, 100);
    // 1, 2, ..., 64, then the bound itself, then its confirmation.
    EXPECT_EQ(result.tries.size(), 9u);
  }
  FakeDevice exact{65536, 65536, {}};
  EXPECT_TRUE(search(exact).hit_upper_bound);
  EXPECT_EQ(search(exact).max_batch, 65536);
}

TEST(FindMaxBatch, StartsAnywhereBelowOrAboveTheAnswer) {
  for (int64_t start : {3, 48, 1000}) {
    for (int64_t k : {1, 7, 100}) {
      FakeDevice device{k, k, {}};
      MaxBatchOptions options;
      options.start = start;
      const MaxBatchResult result = search(device, options);
      EXPECT_EQ(result.max_batch, k) << "start " << start;
      EXPECT_EQ(result.tries.front().batch_size, start);
    }
  }
  FakeDevice none{0, 0, {}};
  MaxBatchOptions options;
  options.start = 20;
  EXPECT_FALSE(search(none, options).max_batch.has_value());
}

TEST(FindMaxBatch, AnAnswerThatFailsItsConfirmationIsNotReported) {
  for (int64_t k : {7, 64, 1000}) {
    for (int64_t margin : {int64_t{1}, int64_t{3}, k / 2}) {
      SCOPED_TRACE("capacity " + std::to_string(k) + ", repeated " + std::to_string(k - margin));
      FakeDevice device{k, k - margin, {}};
      const MaxBatchResult result = search(device);
      EXPECT_EQ(result.max_batch, k - margin);
      EXPECT_EQ(result.first_failure, k - margin + 1);
      bool confirmed = false;
      bool failed_confirmation = false;
      for (const MaxBatchTry& t : result.tries) {
        if (t.stage == TryStage::Confirm && !t.fits) failed_confirmation = true;
        if (t.stage == TryStage::Confirm && t.fits && t.batch_size == k - margin) confirmed = true;
        // After the first failed confirmation every try runs the confirmation's steps.
        if (failed_confirmation) EXPECT_EQ(t.steps, 3) << t.batch_size;
      }
      EXPECT_TRUE(confirmed);
      EXPECT_TRUE(failed_confirmation);
      EXPECT_EQ(result.peak_memory_bytes, (k - margin) * 1000);
      // Growing and bisecting to k, then down in doubling strides and bisecting again: logarithmic in
      // both, never a walk down one size at a time.
      EXPECT_LE(result.tries.size(),
                static_cast<std::size_t>(2 * bit_length(k) + 2 * bit_length(margin) + 4));
    }
  }
  // As on a GPU with 141 GiB: VGG16 ran 1855 samples for one step but not three in a row, nor 1854 down
  // to 1849. The search that walked down one size at a time took 12 tries (46 s) from 1855 to 1849 and
  // was stopped at its time limit there; here the answer lies 355 sizes further down.
  FakeDevice fragmented{1855, 1500, {}};
  const MaxBatchResult far_below = search(fragmented);
  EXPECT_EQ(far_below.max_batch, 1500);
  EXPECT_EQ(far_below.first_failure, 1501);
  EXPECT_EQ(far_below.stopped_by, "exact");
  EXPECT_LE(far_below.tries.size(), 45u);
  FakeDevice single_step_only{5, 0, {}};
  const MaxBatchResult result = search(single_step_only);
  EXPECT_FALSE(result.max_batch.has_value());
}

// What decides a search's course: each try's size, stage, steps and outcome.
std::vector<std::tuple<int64_t, TryStage, int, bool>> course(const std::vector<MaxBatchTry>& tries) {
  std::vector<std::tuple<int64_t, TryStage, int, bool>> out;
  for (const MaxBatchTry& t : tries) out.emplace_back(t.batch_size, t.stage, t.steps, t.fits);
  return out;
}

TEST(FindMaxBatch, AStoppedSearchGoesOnFromItsTriesAsIfNeverStopped) {
  // Plain, a confirmation that fails far below (as VGG16 on a GPU), the upper bound, nothing fitting.
  const std::vector<std::pair<int64_t, int64_t>> devices = {{37, 37}, {1855, 1500}, {65536, 65536}, {5, 0}};
  for (const auto& [capacity, repeated] : devices) {
    FakeDevice whole{capacity, repeated, {}};
    const MaxBatchResult uninterrupted = search(whole);
    const std::size_t total = uninterrupted.tries.size();
    ASSERT_GE(total, 2u);
    for (std::size_t stop_after = 0; stop_after <= total; ++stop_after) {
      SCOPED_TRACE("capacity " + std::to_string(capacity) + "/" + std::to_string(repeated) +
                   ", stopped after " + std::to_string(stop_after) + " of " + std::to_string(total) +
                   " tries");
      FakeDevice first{capacity, repeated, {}};
      SearchSession stopping;
      stopping.stop_requested = [&] { return first.calls.size() >= stop_after; };
      std::vector<MaxBatchTry> written;
      const auto keep = [&](const MaxBatchTry& t) { written.push_back(t); };
      if (stop_after < total) {
        try {
          find_max_batch([&](int64_t b, int steps) { return first(b, steps); }, {}, keep, stopping);
          ADD_FAILURE() << "the search did not stop";
        } catch (const MaxBatchStopped& stopped) {
          EXPECT_EQ(stopped.tries, static_cast<int>(stop_after));
          EXPECT_EQ(stopped.earlier_tries, 0);
        }
      } else {
        find_max_batch([&](int64_t b, int steps) { return first(b, steps); }, {}, keep, stopping);
      }
      ASSERT_EQ(written.size(), stop_after);

      FakeDevice second{capacity, repeated, {}};
      SearchSession resuming;
      resuming.earlier_tries = written;
      std::vector<MaxBatchTry> reported;
      const MaxBatchResult resumed =
          find_max_batch([&](int64_t b, int steps) { return second(b, steps); }, {},
                         [&](const MaxBatchTry& t) { reported.push_back(t); }, resuming);
      EXPECT_EQ(course(resumed.tries), course(uninterrupted.tries));
      EXPECT_EQ(resumed.max_batch, uninterrupted.max_batch);
      EXPECT_EQ(resumed.first_failure, uninterrupted.first_failure);
      EXPECT_EQ(resumed.stopped_by, uninterrupted.stopped_by);
      EXPECT_EQ(resumed.peak_memory_bytes, uninterrupted.peak_memory_bytes);
      EXPECT_EQ(resumed.earlier_tries, static_cast<int>(stop_after));
      // The earlier tries are not run again, and are reported as earlier ones.
      EXPECT_EQ(second.calls.size(), total - stop_after);
      ASSERT_EQ(reported.size(), total);
      for (std::size_t i = 0; i < total; ++i) EXPECT_EQ(reported[i].earlier, i < stop_after) << i;
    }
  }
}

TEST(FindMaxBatch, EarlierTriesThatAreNotThisSearchsAreRefusedBeforeAnyTryRuns) {
  FakeDevice whole{100, 60, {}};
  const std::vector<MaxBatchTry> tries = search(whole).tries;
  ASSERT_GT(tries.size(), 8u);
  const auto resume_with = [](const std::vector<MaxBatchTry>& earlier, const MaxBatchOptions& options) {
    FakeDevice device{100, 60, {}};
    SearchSession session;
    session.earlier_tries = earlier;
    try {
      find_max_batch([&](int64_t b, int steps) { return device(b, steps); }, options, {}, session);
    } catch (const EarlierTriesDiffer& differ) {
      EXPECT_TRUE(device.calls.empty()) << "a try ran before the earlier ones were all read back";
      return static_cast<long>(differ.index);
    }
    return -1L;
  };
  std::vector<MaxBatchTry> other_size(tries.begin(), tries.begin() + 6);
  other_size[4].batch_size += 1;
  EXPECT_EQ(resume_with(other_size, {}), 4);
  std::vector<MaxBatchTry> other_steps(tries.begin(), tries.begin() + 6);
  other_steps[2].steps = 2;
  EXPECT_EQ(resume_with(other_steps, {}), 2);
  // Another outcome changes the course after it: the next try is not the one written.
  std::vector<MaxBatchTry> other_outcome(tries.begin(), tries.begin() + 6);
  other_outcome[3].fits = !other_outcome[3].fits;
  EXPECT_EQ(resume_with(other_outcome, {}), 4);
  MaxBatchOptions other_start;
  other_start.start = 2;
  EXPECT_EQ(resume_with(tries, other_start), 0);
  // Tries beyond the search's end were some other search's.
  std::vector<MaxBatchTry> too_many = tries;
  too_many.push_back(tries.back());
  EXPECT_EQ(resume_with(too_many, {}), static_cast<long>(tries.size()));
  EXPECT_EQ(resume_with(tries, {}), -1);
}

TEST(FindMaxBatch, OnlyOutOfMemoryMeansDoesNotFit) {
  const auto probe = [](int64_t batch_size, int) -> ProbeOutcome {
    if (batch_size >= 16) throw std::runtime_error("a shape mismatch");
    return {true, "", std::nullopt};
  };
  EXPECT_THROW(find_max_batch(probe, {}, {}), std::runtime_error);
}

TEST(FindMaxBatch, ReportsEveryTryAsItEnds) {
  FakeDevice device{37, 37, {}};
  std::vector<int64_t> reported;
  const MaxBatchResult result =
      find_max_batch([&](int64_t b, int steps) { return device(b, steps); }, {},
                     [&](const MaxBatchTry& t) { reported.push_back(t.batch_size); });
  ASSERT_EQ(reported.size(), result.tries.size());
  for (std::size_t i = 0; i < reported.size(); ++i) EXPECT_EQ(reported[i], result.tries[i].batch_size);
  const Json j = to_json(result);
  EXPECT_EQ(j["max_batch"], 37);
  EXPECT_EQ(j["first_failure"], 38);
  EXPECT_EQ(j["tries"], result.tries.size());
  EXPECT_EQ(to_json(result.tries.back())["stage"], "confirm");
}

TEST(FindMaxBatch, GranularityStopsOnItsMultiplesAndSaysSo) {
  FakeDevice device{1000, 1000, {}};
  MaxBatchOptions options;
  options.granularity = 8;
  const MaxBatchResult exact = [&] { FakeDevice d{1000, 1000, {}}; return search(d); }();
  const MaxBatchResult result = search(device, options);
  ASSERT_TRUE(result.max_batch.has_value());
  EXPECT_EQ(result.stopped_by, "granularity");
  EXPECT_LE(*result.first_failure - *result.max_batch, 8);
  EXPECT_LE(*result.max_batch, 1000);
  EXPECT_GT(*result.first_failure, 1000);
  EXPECT_LT(result.tries.size(), exact.tries.size());
  for (const MaxBatchTry& t : result.tries) {
    if (t.stage == TryStage::Bisect) EXPECT_EQ(t.batch_size % 8, 0) << t.batch_size;
  }
  EXPECT_EQ(exact.stopped_by, "exact");
}

TEST(FindMaxBatch, ToleranceStopsWithinItsShareOfTheFailure) {
  FakeDevice device{1000, 1000, {}};
  MaxBatchOptions options;
  options.tolerance = 0.05;
  const MaxBatchResult result = search(device, options);
  ASSERT_TRUE(result.max_batch.has_value());
  EXPECT_EQ(result.stopped_by, "tolerance");
  EXPECT_LE(*result.first_failure - *result.max_batch, 0.05 * *result.first_failure);
  EXPECT_GE(*result.max_batch, 950);
}

TEST(FindMaxBatch, TheTryLimitStopsTheSearchAndTheAnswerIsStillConfirmed) {
  FakeDevice device{1000, 1000, {}};
  MaxBatchOptions options;
  options.max_tries = 6;  // grows 1..32 and stops: six tries, then the confirmation
  const MaxBatchResult result = search(device, options);
  ASSERT_TRUE(result.max_batch.has_value());
  EXPECT_EQ(result.stopped_by, "try limit");
  EXPECT_EQ(*result.max_batch, 32);
  EXPECT_EQ(result.tries.size(), 7u);
  EXPECT_EQ(result.tries.back().stage, TryStage::Confirm);
  options.max_tries = 14;  // grows to 1024 (11 tries), fails, bisects 3 times
  FakeDevice again{1000, 1000, {}};
  const MaxBatchResult bisected = search(again, options);
  EXPECT_EQ(bisected.stopped_by, "try limit");
  EXPECT_EQ(bisected.tries.size(), 15u);
  EXPECT_LE(*bisected.max_batch, 1000);
  EXPECT_GE(*bisected.max_batch, 512);
}

TEST_F(CpuMemory, AMarginLeavesThatShareOfTheLimitFree) {
  ExperimentConfig e = mnist_on_cpu("mnist_margin");
  MaxBatchOptions options;
  options.cpu_memory_limit = 48 * kMiB;
  const MaxBatchResult full = run_max_batch(e, torch::Device("cpu"), options, {});
  options.margin = 0.5;
  const MaxBatchResult half = run_max_batch(e, torch::Device("cpu"), options, {});
  ASSERT_TRUE(full.max_batch && half.max_batch);
  EXPECT_LT(*half.max_batch, *full.max_batch);
  EXPECT_EQ(half.cpu_memory_limit, 24 * kMiB);
  EXPECT_EQ(half.margin, 0.5);
  ASSERT_TRUE(half.peak_memory_bytes.has_value());
  EXPECT_LE(*half.peak_memory_bytes, 24 * kMiB);
  EXPECT_FALSE(cpu_memory::limit().has_value());
}

TEST(FindMaxBatch, RefusesOptionsThatCannotWork) {
  FakeDevice device{10, 10, {}};
  MaxBatchOptions options;
  options.start = 0;
  EXPECT_THROW(search(device, options), std::invalid_argument);
  options = {};
  options.upper_bound = 0;
  EXPECT_THROW(search(device, options), std::invalid_argument);
  options = {};
  options.confirm_steps = 0;
  EXPECT_THROW(search(device, options), std::invalid_argument);
  options = {};
  options.granularity = 0;
  EXPECT_THROW(search(device, options), std::invalid_argument);
  options = {};
  options.tolerance = 1.0;
  EXPECT_THROW(search(device, options), std::invalid_argument);
  options = {};
  options.max_tries = 1;
  EXPECT_THROW(search(device, options), std::invalid_argument);
  options = {};
  options.margin = 0.95;
  EXPECT_THROW(search(device, options), std::invalid_argument);
  EXPECT_TRUE(device.calls.empty());
}

TEST(ParseMemorySize, ReadsBytesAndUnits) {
  EXPECT_EQ(parse_memory_size("123"), 123);
  EXPECT_EQ(parse_memory_size("123B"), 123);
  EXPECT_EQ(parse_memory_size("512MiB"), 512 * kMiB);
  EXPECT_EQ(parse_memory_size("8GiB"), 8LL << 30);
  EXPECT_EQ(parse_memory_size("8gib"), 8LL << 30);
  EXPECT_EQ(parse_memory_size("2GB"), 2000000000);
  EXPECT_EQ(parse_memory_size("1.5G"), 3LL << 29);
  EXPECT_EQ(parse_memory_size("64K"), 65536);
  EXPECT_EQ(parse_memory_size("10KB"), 10000);
  EXPECT_EQ(parse_memory_size("1 Ti"), 1LL << 40);
  EXPECT_EQ(parse_memory_size("0.5 MiB"), 512 * 1024);
}

TEST(ParseMemorySize, RefusesWithASentence) {
  for (const char* bad :
       {"", "abc", "-1", "1.5", "12XB", "0", "0GiB", "1.2.3G", "GiB", "1e9", "99999999999TB"}) {
    try {
      parse_memory_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("e.g. 512MiB"), std::string::npos) << e.what();
    }
  }
}

TEST(FormatMemorySize, UsesBinaryUnits) {
  EXPECT_EQ(format_memory_size(512), "512 B");
  EXPECT_EQ(format_memory_size(16 * kMiB), "16.0 MiB");
  EXPECT_EQ(format_memory_size(3LL << 29), "1.50 GiB");
  EXPECT_EQ(format_memory_size(300 * kMiB), "300 MiB");
}

TEST_F(CpuMemory, CountsTensorsAndFreesThemBack) {
  cpu_memory::set_limit(64 * kMiB);
  const int64_t before = cpu_memory::current_bytes();
  cpu_memory::reset_peak();
  {
    torch::Tensor t = torch::ones({4 * kMiB}, torch::kFloat);  // 16 MiB
    EXPECT_EQ(cpu_memory::current_bytes(), before + 16 * kMiB);
    EXPECT_FLOAT_EQ(t.sum().item<float>(), 4.0f * kMiB);
  }
  EXPECT_EQ(cpu_memory::current_bytes(), before);
  EXPECT_GE(cpu_memory::peak_bytes(), before + 16 * kMiB);
  cpu_memory::reset_peak();
  EXPECT_EQ(cpu_memory::peak_bytes(), before);
}

TEST_F(CpuMemory, AnAllocationAboveTheLimitIsOutOfMemory) {
  cpu_memory::set_limit(64 * kMiB);
  const int64_t before = cpu_memory::current_bytes();
  try {
    torch::Tensor t = torch::empty({32 * kMiB}, torch::kFloat);  // 128 MiB
    ADD_FAILURE() << "a 128 MiB tensor was allocated under a 64 MiB limit";
  } catch (const std::exception& e) {
    EXPECT_TRUE(is_out_of_memory(e)) << e.what();
    EXPECT_NE(dynamic_cast<const c10::OutOfMemoryError*>(&e), nullptr);
    EXPECT_EQ(short_error_message(e).rfind("CPU out of memory: tried to allocate 128 MiB", 0), 0u)
        << short_error_message(e);
  }
  EXPECT_EQ(cpu_memory::current_bytes(), before);
  cpu_memory::set_limit(std::nullopt);
  torch::Tensor t = torch::empty({32 * kMiB}, torch::kFloat);
  EXPECT_EQ(cpu_memory::current_bytes(), before + 128 * kMiB);
}

TEST_F(CpuMemory, ScopedLimitPutsThePreviousLimitBack) {
  cpu_memory::set_limit(100 * kMiB);
  {
    cpu_memory::ScopedLimit scoped(10 * kMiB);
    EXPECT_EQ(cpu_memory::limit(), 10 * kMiB);
  }
  EXPECT_EQ(cpu_memory::limit(), 100 * kMiB);
}

// oneDNN takes its scratch memory through the allocator's raw interface, which a wrapper must keep.
TEST_F(CpuMemory, ConvolutionsRunUnderTheCountingAllocator) {
  const int64_t before = cpu_memory::current_bytes();
  {
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 16, 3));
    torch::Tensor x = torch::randn({8, 3, 32, 32}, torch::requires_grad());
    conv->forward(x).sum().backward();
    EXPECT_EQ(x.grad().sizes(), x.sizes());
    EXPECT_GT(cpu_memory::peak_bytes(), before);
  }
  EXPECT_EQ(cpu_memory::current_bytes(), before);
}

TEST_F(CpuMemory, RunMaxBatchFindsAConfirmedSizeForMnistUnderALimit) {
  ExperimentConfig e = mnist_on_cpu("mnist_maxbatch");
  MaxBatchOptions options;
  options.cpu_memory_limit = 48 * kMiB;
  const MaxBatchResult result = run_max_batch(e, torch::Device("cpu"), options, {});
  ASSERT_TRUE(result.max_batch.has_value()) << result.error;
  const int64_t found = *result.max_batch;
  EXPECT_GE(found, 1);
  EXPECT_FALSE(result.hit_upper_bound);
  EXPECT_EQ(result.cpu_memory_limit, 48 * kMiB);
  EXPECT_EQ(result.first_failure, found + 1);
  EXPECT_NE(result.error.find("CPU out of memory"), std::string::npos) << result.error;
  const MaxBatchTry& last = result.tries.back();
  EXPECT_TRUE(last.fits && last.stage == TryStage::Confirm && last.batch_size == found && last.steps == 3);
  ASSERT_TRUE(result.peak_memory_bytes.has_value());
  EXPECT_LE(*result.peak_memory_bytes, 48 * kMiB);
  bool next_failed = false;
  for (const MaxBatchTry& t : result.tries) {
    if (t.batch_size == found + 1 && !t.fits) next_failed = true;
  }
  EXPECT_TRUE(next_failed);
  EXPECT_FALSE(cpu_memory::limit().has_value());
}

TEST_F(CpuMemory, RunMaxBatchSaysWhenTheModelAloneDoesNotFit) {
  ExperimentConfig e = mnist_on_cpu("mnist_tiny_limit");
  MaxBatchOptions options;
  options.cpu_memory_limit = 64 * 1024;
  const MaxBatchResult result = run_max_batch(e, torch::Device("cpu"), options, {});
  EXPECT_FALSE(result.max_batch.has_value());
  EXPECT_TRUE(result.tries.empty());
  EXPECT_NE(result.error.find("the model alone does not fit"), std::string::npos) << result.error;
  EXPECT_EQ(result.stopped_by, "nothing fits");
  options.margin = 0.1;
  EXPECT_EQ(run_max_batch(e, torch::Device("cpu"), options, {}).margin, 0.1);
}

// ResNet-18 on 3x32x32 trains from 2 samples (its last batch norm sees a 1x1 plane): the search never runs
// a batch of 1, and says where it could not go lower.
TEST_F(CpuMemory, RunMaxBatchNeverTriesBelowTheSmallestBatchTheModelTrains) {
  ExperimentConfig e = mnist_on_cpu("resnet18_small");
  e.model = "resnet18";
  e.input_shape = {3, 32, 32};
  int64_t weights = 0;
  {
    Workload model(e, torch::Device("cpu"));
    for (const torch::Tensor& p : model.network().parameters()) weights += p.nbytes();
  }
  // Room for the model and not for its gradients: a step of 2 does not fit, and a search that bisected
  // below it would run a batch of 1 (a c10::Error, not out of memory).
  MaxBatchOptions options;
  options.start = 2;
  options.cpu_memory_limit = cpu_memory::current_bytes() + weights + (4 << 20);
  std::vector<int64_t> tried;
  const MaxBatchResult result = run_max_batch(e, torch::Device("cpu"), options,
                                              [&](const MaxBatchTry& t) { tried.push_back(t.batch_size); });
  EXPECT_EQ(tried, (std::vector<int64_t>{2}));
  EXPECT_FALSE(result.max_batch.has_value());
  EXPECT_EQ(result.smallest, 2);
}

TEST(RunMaxBatch, RefusesACpuMemoryLimitOnCuda) {
  ExperimentConfig e = mnist_on_cpu("mnist_on_cuda");
  MaxBatchOptions options;
  options.cpu_memory_limit = kMiB;
  EXPECT_THROW(run_max_batch(e, torch::Device("cuda:0"), options, {}), std::invalid_argument);
}

// A sweep's options writing to dir.
SweepOptions sweep_into(const std::filesystem::path& dir) {
  SweepOptions sweep;
  sweep.out_dir = dir.string();
  sweep.command_line = "batchscope sweep (test)";
  return sweep;
}

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A sweep with batch: 1:max that is resumed keeps the sizes of its run record rather than searching
// again (a new search could answer differently and the resume would be refused); a fresh one searches.
TEST_F(CpuMemory, ResolvingToMaxReusesTheSizesOfAResumedSweep) {
  ExperimentConfig e = mnist_on_cpu("tomax");
  e.batch_to_max = BatchToMax{1, 1, 2.0};
  const SweepConfig config{"test", {e}};

  const testing_support::TempDir temp;
  const std::filesystem::path& dir = temp.path();
  ExperimentConfig earlier = e;
  earlier.batch_sizes = {1, 2, 4, 8};
  const Json run = {{"type", "run"}, {"config", {{"experiments", {Json(to_json(earlier))}}}}};
  std::ofstream(dir / "steps.jsonl") << run.dump() << "\n";

  cpu_memory::set_limit(int64_t{1} << 20);  // a search now would find nothing and throw
  EXPECT_EQ(resolve_batch_maximum(config, sweep_into(dir)).experiments[0].batch_sizes,
            (std::vector<int64_t>{1, 2, 4, 8}));

  // A record of that name that this program could not have written is not reused: the sizes are
  // searched anew (here: nothing fits, said in a sentence), and the resume refuses the log after.
  Json odd = run;
  odd["config"]["experiments"][0]["precision"] = "fp64";
  std::ofstream(dir / "steps.jsonl") << odd.dump() << "\n";
  EXPECT_TRUE(testing_support::refuses_with([&] { resolve_batch_maximum(config, sweep_into(dir)); },
                                            {"not even batch size 1 runs a full step on cpu"}));

  std::filesystem::remove(dir / "steps.jsonl");
  EXPECT_TRUE(testing_support::refuses_with([&] { resolve_batch_maximum(config, sweep_into(dir)); },
                                            {"not even batch size 1 runs a full step on cpu"}));
  cpu_memory::set_limit(int64_t{48} << 20);
  const std::vector<int64_t> fresh =
      resolve_batch_maximum(config, sweep_into(dir)).experiments[0].batch_sizes;
  ASSERT_GE(fresh.size(), 3u);
  EXPECT_EQ(fresh[0], 1);
  EXPECT_EQ(fresh[1], 2);
}

// batch: 64:max where fewer than 64 fit: refused at the batch key with the size that fits, not a sweep of
// no batch size.
TEST_F(CpuMemory, ARangeToMaxThatStartsAboveWhatFitsIsRefused) {
  ExperimentConfig e = mnist_on_cpu("tomax_above");
  e.batch_to_max = BatchToMax{64, 1, 2.0};
  const testing_support::TempDir temp;
  cpu_memory::set_limit(int64_t{32} << 20);
  EXPECT_TRUE(testing_support::refuses_with(
      [&] {
        resolve_batch_maximum(SweepConfig{"test", {e}}, sweep_into(temp.path()));
      },
      {"the largest batch size that fits on cpu is", "below the range's start 64", "start the range at"}));
}

// A sweep's search for its largest batch size (batch: 1:max) is kept in OUT/maxbatch/EXPERIMENT.jsonl.
// One stopped between two tries goes on from them without running them again, to the sizes of a search
// that was never stopped; one that ended gives its answer to the next session without a try.
TEST_F(CpuMemory, ASweepsSearchForItsLargestBatchGoesOnFromItsTries) {
  ExperimentConfig e = mnist_on_cpu("tomax");
  e.batch_to_max = BatchToMax{1, 1, 2.0};
  const SweepConfig config{"test", {e}};
  cpu_memory::set_limit(int64_t{48} << 20);

  const testing_support::TempDir whole_dir;
  const std::vector<int64_t> whole =
      resolve_batch_maximum(config, sweep_into(whole_dir.path())).experiments[0].batch_sizes;
  const std::vector<std::string> whole_log = lines_of(search_log_path(whole_dir.path().string(), "tomax"));
  ASSERT_GE(whole_log.size(), 6u);  // the opening, 4 tries or more, the result
  EXPECT_EQ(Json::parse(whole_log.front())["type"], "maxbatch_search");
  EXPECT_EQ(Json::parse(whole_log.back())["type"], "maxbatch");

  // Asked to stop before the first try: the opening is kept, and MaxBatchStopped says so.
  const testing_support::TempDir dir;
  const std::string path = search_log_path(dir.path().string(), "tomax");
  std::atomic<bool> stop{true};
  SweepOptions stopping = sweep_into(dir.path());
  stopping.stop_requested = &stop;
  EXPECT_THROW(resolve_batch_maximum(config, stopping), MaxBatchStopped);
  ASSERT_EQ(lines_of(path).size(), 1u);

  // The whole search's first two tries, as a session stopped after them would have left them.
  {
    std::ofstream cut(path, std::ios::trunc);
    for (std::size_t i = 0; i < 3; ++i) cut << whole_log[i] << "\n";
  }
  const std::vector<int64_t> resumed =
      resolve_batch_maximum(config, sweep_into(dir.path())).experiments[0].batch_sizes;
  EXPECT_EQ(resumed, whole);
  const std::vector<std::string> log = lines_of(path);
  ASSERT_EQ(log.size(), whole_log.size() + 1);  // one more opening
  const Json reopened = Json::parse(log[3]);
  EXPECT_EQ(reopened["type"], "maxbatch_search");
  EXPECT_EQ(reopened["resumed_tries"], 2);
  for (std::size_t i = 4; i + 1 < log.size(); ++i) {
    EXPECT_EQ(Json::parse(log[i])["type"], "maxbatch_try") << log[i];
    EXPECT_EQ(Json::parse(log[i])["batch_size"], Json::parse(whole_log[i - 1])["batch_size"]) << log[i];
  }
  EXPECT_EQ(Json::parse(log.back())["result"]["earlier_tries"], 2);

  // Ended: the next session takes its answer without a try (one would stop at once).
  EXPECT_EQ(resolve_batch_maximum(config, stopping).experiments[0].batch_sizes, whole);
  EXPECT_EQ(lines_of(path), log);

  // A stopped search of other options is left as it is, and a new one starts after it.
  {
    std::ofstream cut(path, std::ios::app);
    for (std::size_t i = 0; i < 3; ++i) cut << whole_log[i] << "\n";
  }
  ExperimentConfig other = e;
  other.classes = 12;
  const std::vector<int64_t> anew =
      resolve_batch_maximum(SweepConfig{"test", {other}}, sweep_into(dir.path())).experiments[0].batch_sizes;
  EXPECT_FALSE(anew.empty());
  const std::vector<std::string> after = lines_of(path);
  ASSERT_GT(after.size(), log.size() + 4);
  EXPECT_EQ(after[log.size() + 2], whole_log[2]);
  EXPECT_FALSE(Json::parse(after[log.size() + 3]).contains("resumed_tries"));
  EXPECT_EQ(Json::parse(after[log.size() + 3])["config"]["classes"], 12);

  // While another sweep holds the directory, no search starts there.
  const testing_support::TempDir busy;
  const OutputDirectoryLock held(busy.path().string());
  EXPECT_TRUE(testing_support::refuses_with([&] { resolve_batch_maximum(config, sweep_into(busy.path())); },
                                            {"is being written by another batchscope sweep right now"}));
  EXPECT_FALSE(std::filesystem::exists(search_log_path(busy.path().string(), "tomax")));
}

// A cap on a GPU's memory (--memory-limit there) is the device's share the caching allocator may take:
// what fits on a GPU of that much memory. One past the device's memory is refused in a sentence.
TEST(GpuMemoryCap, IsTheAllocatorsShareOfTheDevicesMemory) {
  const int64_t gib = int64_t{1} << 30;
  EXPECT_DOUBLE_EQ(gpu::cap_fraction(16 * gib, 64 * gib), 0.25);
  EXPECT_DOUBLE_EQ(gpu::cap_fraction(64 * gib, 64 * gib), 1.0);
  try {
    gpu::cap_fraction(160 * gib, 140 * gib);
    ADD_FAILURE() << "a cap above the device's memory was taken";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "160 GiB is more than the GPU's 140 GiB");
  }
  EXPECT_THROW(gpu::cap_fraction(0, 64 * gib), std::invalid_argument);
}

// A stopped search on a GPU under one cap is not the search asked for under another, nor without one:
// the cap decides every try. Under the same cap it goes on.
TEST(GpuMemoryCap, IsPartOfAKeptSearchsOptions) {
  ExperimentConfig e = mnist_on_cpu("capped");
  e.device = "cuda:0";
  MaxBatchOptions capped;
  capped.gpu_memory_limit = int64_t{1} << 30;
  const testing_support::TempDir dir;
  const std::string path = (dir.path() / "search.jsonl").string();
  MaxBatchTry first;
  first.batch_size = 1;
  first.steps = 1;
  first.fits = true;
  std::ofstream(path) << search_opening_record(e, capped, "maxbatch", 0).dump() << "\n"
                      << search_try_record(e, first).dump() << "\n";
  EXPECT_EQ(find_earlier_search(path, e, capped, "maxbatch", true).state, EarlierSearch::State::Stopped);
  MaxBatchOptions other = capped;
  other.gpu_memory_limit = int64_t{2} << 30;
  const EarlierSearch different = find_earlier_search(path, e, other, "maxbatch", true);
  EXPECT_EQ(different.state, EarlierSearch::State::Different);
  EXPECT_NE(different.why.find("gpu_memory_limit_bytes"), std::string::npos) << different.why;
  EXPECT_EQ(find_earlier_search(path, e, MaxBatchOptions{}, "maxbatch", true).state,
            EarlierSearch::State::Different);
}

}  // namespace
