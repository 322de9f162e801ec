#pragma once

#include <cstdint>

#include "models/layer_plan.h"

namespace batchscope::models {

// Every architecture of the zoo as a plan for `classes` outputs. The registry builds networks and counts
// FLOPs from these, so both always describe the same layers.

// Configurations D (16) and E (19) of Simonyan & Zisserman, laid out as torchvision's VGG without batch norm.
Layer vgg_plan(int depth, int64_t classes);
// AlexNet as torchvision's (the one-GPU variant of Krizhevsky et al. 2012 with 64-192-384-256-256 filters).
Layer alexnet_plan(int64_t classes);
// ResNet as torchvision's: depth 18 with basic blocks, depth 50 with bottlenecks (v1.5: the stride on the
// 3x3 convolution).
Layer resnet_plan(int depth, int64_t classes);
// MobileNet v1 (Howard et al. 2017), width 1.0.
Layer mobilenet_v1_plan(int64_t classes);
// MobileNetV2 (Sandler et al. 2018) as torchvision's, width 1.0.
Layer mobilenet_v2_plan(int64_t classes);
// The classic Keras MNIST example network.
Layer mnist_cnn_plan(int64_t classes);

}  // namespace batchscope::models
