#include <cstdint>

#include "models/zoo.h"

namespace batchscope::models {
namespace {

constexpr int64_t kAlexNetPooledSide = 6;
constexpr int64_t kAlexNetHidden = 4096;
constexpr double kAlexNetDropout = 0.5;

}  // namespace

Layer alexnet_plan(int64_t classes) {
  return stack({
      named("features", stack({conv(64, 11, 4, 2), relu(), max_pool(3, 2), conv(192, 5, 1, 2), relu(),
                               max_pool(3, 2), conv(384, 3, 1, 1), relu(), conv(256, 3, 1, 1), relu(),
                               conv(256, 3, 1, 1), relu(), max_pool(3, 2)})),
      named("avgpool", adaptive_avg_pool(kAlexNetPooledSide, kAlexNetPooledSide)),
      named("flatten", flatten()),
      named("classifier", stack({dropout(kAlexNetDropout), linear(kAlexNetHidden), relu(),
                                 dropout(kAlexNetDropout), linear(kAlexNetHidden), relu(), linear(classes)})),
  });
}

}  // namespace batchscope::models
