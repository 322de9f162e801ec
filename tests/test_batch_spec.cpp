#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "lib/config/batch_spec.h"

namespace batchscope {
namespace {

using Sizes = std::vector<int64_t>;

// The message of the std::invalid_argument that parse_batch_spec throws, or "" when it accepts.
std::string rejection(const std::string& spec) {
  try {
    parse_batch_spec(spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(BatchSpec, SingleSize) {
  EXPECT_EQ(parse_batch_spec("70"), Sizes{70});
  EXPECT_EQ(parse_batch_spec("1"), Sizes{1});
}

TEST(BatchSpec, InclusiveRange) {
  EXPECT_EQ(parse_batch_spec("1:5"), (Sizes{1, 2, 3, 4, 5}));
  EXPECT_EQ(parse_batch_spec("1:70").size(), 70u);
  EXPECT_EQ(parse_batch_spec("1:70").back(), 70);
  EXPECT_EQ(parse_batch_spec("8:8"), Sizes{8});
}

TEST(BatchSpec, RangeWithStepIncludesToOnlyWhenHit) {
  EXPECT_EQ(parse_batch_spec("1:64:8"), (Sizes{1, 9, 17, 25, 33, 41, 49, 57}));
  EXPECT_EQ(parse_batch_spec("8:64:8"), (Sizes{8, 16, 24, 32, 40, 48, 56, 64}));
  EXPECT_EQ(parse_batch_spec("1:3:5"), Sizes{1});
}

TEST(BatchSpec, ListKeepsTheGivenOrder) {
  EXPECT_EQ(parse_batch_spec("1,8,32"), (Sizes{1, 8, 32}));
  EXPECT_EQ(parse_batch_spec("32,1,8"), (Sizes{32, 1, 8}));
}

TEST(BatchSpec, WhitespaceIsTolerated) {
  EXPECT_EQ(parse_batch_spec(" 70 "), Sizes{70});
  EXPECT_EQ(parse_batch_spec(" 1 : 4 "), (Sizes{1, 2, 3, 4}));
  EXPECT_EQ(parse_batch_spec("1 : 9 : 4"), (Sizes{1, 5, 9}));
  EXPECT_EQ(parse_batch_spec("1, 8,\t32"), (Sizes{1, 8, 32}));
}

TEST(BatchSpec, RejectsEmpty) {
  EXPECT_NE(rejection("").find("empty"), std::string::npos);
  EXPECT_NE(rejection("   ").find("empty"), std::string::npos);
}

TEST(BatchSpec, RejectsSizesBelowOne) {
  EXPECT_NE(rejection("0").find("1 or more"), std::string::npos);
  EXPECT_NE(rejection("-4").find("1 or more"), std::string::npos);
  EXPECT_NE(rejection("0:8").find("1 or more"), std::string::npos);
  EXPECT_NE(rejection("1,0,8").find("1 or more"), std::string::npos);
}

TEST(BatchSpec, RejectsAnInvertedRange) {
  EXPECT_EQ(rejection("70:1"), "70:1 is an inverted range; give FROM:TO with FROM <= TO");
  EXPECT_NE(rejection("64:1:8").find("inverted"), std::string::npos);
}

TEST(BatchSpec, RejectsAStepBelowOne) {
  EXPECT_NE(rejection("1:64:0").find("STEP of 1 or more"), std::string::npos);
  EXPECT_NE(rejection("1:64:-8").find("STEP of 1 or more"), std::string::npos);
}

TEST(BatchSpec, RejectsDuplicatesInAList) {
  EXPECT_EQ(rejection("1,8,8"), "1,8,8 lists 8 twice; give each batch size once");
}

TEST(BatchSpec, RejectsGarbageAndSaysWhatIsAccepted) {
  for (const char* spec : {"abc", "1:", ":8", "1:2:3:4", "1,,8", "1-8", "8x", "1.5", "1 8", "+8", "1,8:16"}) {
    const std::string message = rejection(spec);
    EXPECT_NE(message.find("is not a batch spec"), std::string::npos) << spec << ": " << message;
    EXPECT_NE(message.find("1:64:8"), std::string::npos) << spec << ": " << message;
  }
}

TEST(BatchSpec, RejectsNumbersTooLargeToHold) {
  EXPECT_NE(rejection("99999999999999999999").find("too large for a batch size; the largest accepted is 16777216"),
            std::string::npos);
}

TEST(BatchSpec, RejectsARangeTooLongToSweep) {
  EXPECT_NE(rejection("1:1000000").find("use a larger STEP"), std::string::npos);
  EXPECT_EQ(parse_batch_spec("1:10000000:1000000").size(), 10u);
}

TEST(BatchSpec, GrowsByAFactorAndEndsAtTo) {
  EXPECT_EQ(parse_batch_spec("1:60000:x2").size(), 17u);
  EXPECT_EQ(parse_batch_spec("1:60000:x2").back(), 60000);
  EXPECT_EQ(parse_batch_spec("1:10:x1.5"), (Sizes{1, 2, 3, 5, 8, 10}));
  // A factor so close to 1 that the sizes would take billions of multiplications (found by fuzzing).
  try {
    parse_batch_spec("1:2:x1.0000000001");
    ADD_FAILURE() << "a factor of 1.0000000001 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("x1.0000000001"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("FACTOR further above 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_batch_spec("1:3:x1.0001").size(), 3u);  // close to 1, still quick: every size
  EXPECT_EQ(batch_geometric(3, 3, 2.0), Sizes{3});
  EXPECT_NE(rejection("1:10:x1").find("give a FACTOR above 1"), std::string::npos);
  EXPECT_NE(rejection("1:10:xx").find("is not a batch spec"), std::string::npos);
  EXPECT_NE(rejection("1:max").find("accepted as a sweep's batch only"), std::string::npos);
}

TEST(BatchToMax, ParsesAndExpandsOnceTheMaximumIsKnown) {
  EXPECT_FALSE(parse_batch_to_max("1:70").has_value());
  EXPECT_FALSE(parse_batch_to_max("1,2").has_value());
  EXPECT_EQ(*parse_batch_to_max("1:max"), (BatchToMax{1, 1, 0}));
  EXPECT_EQ(*parse_batch_to_max("8:max:8"), (BatchToMax{8, 8, 0}));
  EXPECT_EQ(*parse_batch_to_max("1:max:x2"), (BatchToMax{1, 1, 2.0}));
  EXPECT_THROW(parse_batch_to_max("0:max"), std::invalid_argument);
  EXPECT_THROW(parse_batch_to_max("1:max:0"), std::invalid_argument);
  EXPECT_EQ(expand_to_max(BatchToMax{1, 1, 0}, 4), (Sizes{1, 2, 3, 4}));
  EXPECT_EQ(expand_to_max(BatchToMax{8, 8, 0}, 30), (Sizes{8, 16, 24, 30}));
  EXPECT_EQ(expand_to_max(BatchToMax{1, 1, 2.0}, 20), (Sizes{1, 2, 4, 8, 16, 20}));
  EXPECT_TRUE(expand_to_max(BatchToMax{8, 1, 0}, 4).empty());
}

TEST(BatchRange, BuildsInclusiveRanges) {
  EXPECT_EQ(batch_range(1, 4, 1), (Sizes{1, 2, 3, 4}));
  EXPECT_EQ(batch_range(1, 64, 8), (Sizes{1, 9, 17, 25, 33, 41, 49, 57}));
  EXPECT_EQ(batch_range(5, 5, 3), Sizes{5});
}

TEST(BatchRange, RejectsInvertedAndEmptyRanges) {
  EXPECT_THROW(batch_range(70, 1, 1), std::invalid_argument);
  EXPECT_THROW(batch_range(1, 70, 0), std::invalid_argument);
  EXPECT_THROW(batch_range(0, 70, 1), std::invalid_argument);
}

}  // namespace
}  // namespace batchscope
