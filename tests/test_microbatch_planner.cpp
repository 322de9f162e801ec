#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "lib/microbatch/microbatch_planner.h"

using namespace batchscope;

namespace {

using Sizes = std::vector<int64_t>;

// A table with time f(s) at every size 1..max_size.
CostTable table_from(const std::string& name, int64_t max_size, const std::function<double(int64_t)>& f) {
  CostTable table{name, {}};
  for (int64_t s = 1; s <= max_size; ++s) table.ms[s] = f(s);
  return table;
}

struct BruteForce {
  bool possible = false;
  double best_ms = std::numeric_limits<double>::infinity();
  size_t fewest_pieces = 0;  // among the splits with the best time
};

// Tries every composition of `batch` into sizes the policy allows and the table measures.
BruteForce enumerate_splits(const CostTable& costs, int64_t batch, MicroBatchPolicy policy) {
  Sizes allowed;
  for (const int64_t s : candidate_sizes(policy, batch)) {
    if (costs.ms.count(s)) allowed.push_back(s);
  }
  BruteForce result;
  std::function<void(int64_t, double, size_t)> extend = [&](int64_t left, double ms, size_t pieces) {
    if (left == 0) {
      if (!result.possible || ms < result.best_ms ||
          (ms == result.best_ms && pieces < result.fewest_pieces)) {
        result = {true, ms, pieces};
      }
      return;
    }
    for (const int64_t s : allowed) {
      if (s <= left) extend(left - s, ms + costs.ms.at(s), pieces + 1);
    }
  };
  extend(batch, 0, 0);
  return result;
}

// The plan's own invariants: sizes allowed and measured, largest first, adding up, times consistent.
void expect_consistent(const SplitPlan& plan, const CostTable& costs, int64_t batch,
                       MicroBatchPolicy policy) {
  const Sizes allowed = candidate_sizes(policy, batch);
  double sum_ms = 0;
  for (const int64_t s : plan.split) {
    EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), s)) << s;
    ASSERT_TRUE(costs.ms.count(s)) << s;
    sum_ms += costs.ms.at(s);
  }
  EXPECT_TRUE(std::is_sorted(plan.split.rbegin(), plan.split.rend()));
  EXPECT_EQ(std::accumulate(plan.split.begin(), plan.split.end(), int64_t{0}), batch);
  EXPECT_NEAR(plan.predicted_ms, sum_ms, 1e-9 * std::max(1.0, sum_ms));
  EXPECT_EQ(plan.name, costs.name);
}

const MicroBatchPolicy kPolicies[] = {MicroBatchPolicy::Undivided, MicroBatchPolicy::PowerOfTwo,
                                      MicroBatchPolicy::All};

}  // namespace

TEST(MicroBatchPolicy, NamesRoundTrip) {
  for (const auto policy : kPolicies) EXPECT_EQ(policy_from_string(to_string(policy)), policy);
  EXPECT_EQ(to_string(MicroBatchPolicy::PowerOfTwo), "powerOfTwo");
  EXPECT_EQ(policy_from_string("power_of_two"), MicroBatchPolicy::PowerOfTwo);
  EXPECT_EQ(policy_from_string("POWEROFTWO"), MicroBatchPolicy::PowerOfTwo);
  EXPECT_EQ(policy_from_string("Power_Of_Two"), MicroBatchPolicy::PowerOfTwo);
  EXPECT_FALSE(policy_from_string("powers"));
  EXPECT_FALSE(policy_from_string(""));
}

TEST(CandidateSizes, EachPolicy) {
  EXPECT_EQ(candidate_sizes(MicroBatchPolicy::Undivided, 100), Sizes({100}));
  EXPECT_EQ(candidate_sizes(MicroBatchPolicy::PowerOfTwo, 256), Sizes({1, 2, 4, 8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(candidate_sizes(MicroBatchPolicy::PowerOfTwo, 100), Sizes({1, 2, 4, 8, 16, 32, 64, 100}));
  EXPECT_EQ(candidate_sizes(MicroBatchPolicy::PowerOfTwo, 1), Sizes({1}));
  EXPECT_EQ(candidate_sizes(MicroBatchPolicy::PowerOfTwo, 3), Sizes({1, 2, 3}));
  EXPECT_EQ(candidate_sizes(MicroBatchPolicy::All, 5), Sizes({1, 2, 3, 4, 5}));
  const Sizes huge = candidate_sizes(MicroBatchPolicy::PowerOfTwo, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(huge.size(), 64u);  // 2^0..2^62 and the batch itself, without overflowing
}

TEST(CandidateSizes, RejectsEmptyBatch) {
  for (const auto policy : kPolicies) {
    EXPECT_THROW(candidate_sizes(policy, 0), std::invalid_argument);
    EXPECT_THROW(candidate_sizes(policy, -4), std::invalid_argument);
  }
}

TEST(PlanSplit, KeepsBatchWhenUndividedIsCheapest) {
  // A fixed cost per launch makes every split dearer than one call.
  const CostTable costs = table_from("conv1", 64, [](int64_t s) { return 2.0 + 0.1 * s; });
  for (const auto policy : kPolicies) {
    const SplitPlan plan = plan_split(costs, 64, policy);
    EXPECT_EQ(plan.split, Sizes({64})) << to_string(policy);
    EXPECT_DOUBLE_EQ(plan.predicted_ms, 2.0 + 6.4);
    EXPECT_DOUBLE_EQ(plan.undivided_ms, 2.0 + 6.4);
  }
}

TEST(PlanSplit, FindsSweetSpot) {
  // Sizes above 32 fall back to a slow algorithm; a small launch cost makes 32 the best size.
  const CostTable costs =
      table_from("conv2", 256, [](int64_t s) { return 0.05 + 0.1 * s + (s > 32 ? 50.0 : 0.0); });
  for (const auto policy : {MicroBatchPolicy::PowerOfTwo, MicroBatchPolicy::All}) {
    const SplitPlan plan = plan_split(costs, 256, policy);
    EXPECT_EQ(plan.split, Sizes(8, 32)) << to_string(policy);
    EXPECT_NEAR(plan.predicted_ms, 8 * (0.05 + 3.2), 1e-9);
    EXPECT_NEAR(plan.undivided_ms, 0.05 + 25.6 + 50.0, 1e-9);
    expect_consistent(plan, costs, 256, policy);
  }
}

TEST(PlanSplit, PowerOfTwoCombinesSizesForOddBatch) {
  const CostTable costs =
      table_from("conv3", 100, [](int64_t s) { return s == 100 ? 100.0 : 1.0 + 0.1 * s; });
  const SplitPlan plan = plan_split(costs, 100, MicroBatchPolicy::PowerOfTwo);
  EXPECT_EQ(plan.split, Sizes({64, 32, 4}));
  EXPECT_NEAR(plan.predicted_ms, 3 * 1.0 + 10.0, 1e-9);
  EXPECT_DOUBLE_EQ(plan.undivided_ms, 100.0);
}

TEST(PlanSplit, UndividedPolicyAlwaysKeepsBatch) {
  // Even where smaller sizes would be far cheaper.
  const CostTable costs = table_from("conv4", 48, [](int64_t s) { return s == 48 ? 90.0 : 0.01; });
  const SplitPlan plan = plan_split(costs, 48, MicroBatchPolicy::Undivided);
  EXPECT_EQ(plan.split, Sizes({48}));
  EXPECT_EQ(plan.predicted_ms, plan.undivided_ms);
  EXPECT_DOUBLE_EQ(plan.predicted_ms, 90.0);
}

TEST(PlanSplit, TiesPreferFewerMicroBatches) {
  // Time proportional to size: every split of 8 costs the same.
  const CostTable linear = table_from("linear", 8, [](int64_t s) { return 0.1 * s; });
  for (const auto policy : kPolicies) EXPECT_EQ(plan_split(linear, 8, policy).split, Sizes({8}));

  const CostTable no_whole{"no_whole", {{1, 0.5}, {2, 1.0}, {4, 2.0}}};
  EXPECT_EQ(plan_split(no_whole, 8, MicroBatchPolicy::PowerOfTwo).split, Sizes({4, 4}));
  EXPECT_EQ(plan_split(no_whole, 7, MicroBatchPolicy::All).split, Sizes({4, 2, 1}));

  // 4+1+1 and 3+3 both take 4 ms: the larger first size must not win over the fewer micro-batches.
  const CostTable uneven{"uneven", {{1, 1.0}, {3, 2.0}, {4, 2.0}}};
  EXPECT_EQ(plan_split(uneven, 6, MicroBatchPolicy::All).split, Sizes({3, 3}));
}

TEST(PlanSplit, UsesOnlyMeasuredAllowedSizes) {
  // 16 is beyond the batch and 3 is not a power of two: neither may be used, however cheap.
  const CostTable costs{"sparse", {{1, 5.0}, {3, 0.0}, {4, 1.0}, {16, 0.0}}};
  const SplitPlan plan = plan_split(costs, 10, MicroBatchPolicy::PowerOfTwo);
  EXPECT_EQ(plan.split, Sizes({4, 4, 1, 1}));
  EXPECT_DOUBLE_EQ(plan.predicted_ms, 12.0);
  EXPECT_EQ(plan.undivided_ms, 0.0);  // 10 was not measured

  const CostTable odd{"odd", {{3, 1.0}, {5, 1.0}}};
  EXPECT_EQ(plan_split(odd, 11, MicroBatchPolicy::All).split, Sizes({5, 3, 3}));
}

TEST(PlanSplit, ImpossibleSplitNamesLayerBatchAndPolicy) {
  const CostTable costs{"layer4.conv2", {{32, 1.0}, {64, 2.0}}};
  try {
    plan_split(costs, 100, MicroBatchPolicy::PowerOfTwo);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("layer4.conv2"), std::string::npos) << message;
    EXPECT_NE(message.find("100"), std::string::npos) << message;
    EXPECT_NE(message.find("powerOfTwo"), std::string::npos) << message;
  }
  EXPECT_THROW(plan_split(costs, 96, MicroBatchPolicy::Undivided), std::invalid_argument);
  EXPECT_THROW(plan_split(CostTable{"empty", {}}, 4, MicroBatchPolicy::All), std::invalid_argument);
  EXPECT_THROW(plan_split(costs, 0, MicroBatchPolicy::All), std::invalid_argument);
}

TEST(PlanSplit, RejectsBadTimes) {
  for (const double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    const CostTable costs{"bad", {{1, 1.0}, {2, bad}, {4, 3.0}}};
    EXPECT_THROW(plan_split(costs, 4, MicroBatchPolicy::All), c10::Error)
        << bad;  // a fault, not a user's mistake
  }
}

TEST(PlanSplit, MatchesExhaustiveSearch) {
  std::mt19937 rng(20180912);
  std::uniform_real_distribution<double> real_ms(0.1, 10.0);
  std::uniform_int_distribution<int> whole_ms(1, 3);  // small integers give many exact ties
  std::bernoulli_distribution measured(0.7);
  int impossible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const bool integer_times = trial % 2 == 0;
    const int64_t batch = 1 + trial % 12;
    CostTable costs{"random" + std::to_string(trial), {}};
    for (int64_t s = 1; s <= batch + 2; ++s) {
      if (measured(rng)) costs.ms[s] = integer_times ? whole_ms(rng) : real_ms(rng);
    }
    for (const auto policy : kPolicies) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " policy " + to_string(policy));
      const BruteForce expected = enumerate_splits(costs, batch, policy);
      if (!expected.possible) {
        ++impossible;
        EXPECT_THROW(plan_split(costs, batch, policy), std::invalid_argument);
        continue;
      }
      const SplitPlan plan = plan_split(costs, batch, policy);
      expect_consistent(plan, costs, batch, policy);
      EXPECT_NEAR(plan.predicted_ms, expected.best_ms, 1e-9 * expected.best_ms);
      if (integer_times) {
        EXPECT_EQ(plan.split.size(), expected.fewest_pieces);
      }
    }
  }
  EXPECT_GT(impossible, 0);  // the random tables also exercise the failure path
}

TEST(PlanSplit, LargeBatchWithAllSizes) {
  // Convex times per sample: equal micro-batches of the cheapest size per sample win.
  const auto f = [](int64_t s) { return 1.0 + 0.01 * s + 1e-5 * s * s; };
  const CostTable costs = table_from("big", 4096, f);
  const SplitPlan plan = plan_split(costs, 4096, MicroBatchPolicy::All);
  expect_consistent(plan, costs, 4096, MicroBatchPolicy::All);
  // Time per sample 1/s + 0.01 + 1e-5 s is least at s = sqrt(1e5) ~ 316; 4096 = 13 parts of ~315.
  EXPECT_EQ(plan.split.size(), 13u);
  EXPECT_LE(plan.split.front() - plan.split.back(), 1);
}
