#include <cstdint>

#include "models/zoo.h"

namespace batchscope::models {

Layer mnist_cnn_plan(int64_t classes) {
  return stack({
      named("conv1", conv(32, 3)),
      named("relu1", relu()),
      named("conv2", conv(64, 3)),
      named("relu2", relu()),
      named("pool", max_pool(2, 2)),
      named("dropout1", dropout(0.25)),
      named("flatten", flatten()),
      named("fc1", linear(128)),
      named("relu3", relu()),
      named("dropout2", dropout(0.5)),
      named("fc2", linear(classes)),
  });
}

}  // namespace batchscope::models
