#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <sstream>
#include <vector>

#include "lib/sweep/machine_check.h"
#include "lib/sweep/sweep_runner.h"
#include "lib/timing/foreach_optimizer.h"
#include "lib/timing/optimizer.h"
#include "lib/timing/step_runner.h"
#include "tests/test_support.h"

using namespace batchscope;

namespace {

using MakeOptimizer =
    std::function<std::unique_ptr<torch::optim::Optimizer>(const std::vector<torch::Tensor>&, bool foreach)>;

// Two layers, the same for a seed.
torch::nn::Sequential small_model() {
  torch::manual_seed(11);
  return torch::nn::Sequential(torch::nn::Linear(6, 5), torch::nn::ReLU(), torch::nn::Linear(5, 3));
}

void train_steps(torch::nn::Sequential& model, torch::optim::Optimizer& optimizer, int steps,
                 int64_t first_batch) {
  for (int i = 0; i < steps; ++i) {
    torch::manual_seed(static_cast<uint64_t>(first_batch + i));
    const torch::Tensor x = torch::randn({8, 6});
    const torch::Tensor y = torch::randint(0, 3, {8});
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    optimizer.step();
  }
}

std::vector<torch::Tensor> weights(torch::nn::Sequential& model) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

// Bit for bit where `exact`, else to float's rounding (Adam's division and square root).
void expect_same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, bool exact) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (exact) {
      EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
    } else {
      EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 1e-8)) << "parameter " << i;
    }
  }
}

struct Case {
  const char* name;
  MakeOptimizer make;
  bool exact;
};

std::vector<Case> cases() {
  return {
      {"sgd",
       [](const auto& p, bool f) -> std::unique_ptr<torch::optim::Optimizer> {
         torch::optim::SGDOptions o(0.1);
         if (f) return std::make_unique<ForeachSGD>(p, o);
         return std::make_unique<torch::optim::SGD>(p, o);
       },
       true},
      {"momentum with weight decay",
       [](const auto& p, bool f) -> std::unique_ptr<torch::optim::Optimizer> {
         auto o = torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3);
         if (f) return std::make_unique<ForeachSGD>(p, o);
         return std::make_unique<torch::optim::SGD>(p, o);
       },
       true},
      {"nesterov with dampening 0",
       [](const auto& p, bool f) -> std::unique_ptr<torch::optim::Optimizer> {
         auto o = torch::optim::SGDOptions(0.05).momentum(0.8).nesterov(true);
         if (f) return std::make_unique<ForeachSGD>(p, o);
         return std::make_unique<torch::optim::SGD>(p, o);
       },
       true},
      {"adam with weight decay",
       [](const auto& p, bool f) -> std::unique_ptr<torch::optim::Optimizer> {
         auto o = torch::optim::AdamOptions(1e-2).weight_decay(1e-3);
         if (f) return std::make_unique<ForeachAdam>(p, o);
         return std::make_unique<torch::optim::Adam>(p, o);
       },
       false},
      {"adamw with its default decay",
       [](const auto& p, bool f) -> std::unique_ptr<torch::optim::Optimizer> {
         auto o = torch::optim::AdamWOptions(1e-2).betas(std::make_tuple(0.8, 0.99));
         if (f) return std::make_unique<ForeachAdamW>(p, o);
         return std::make_unique<torch::optim::AdamW>(p, o);
       },
       false},
      {"adamw without decay",
       [](const auto& p, bool f) -> std::unique_ptr<torch::optim::Optimizer> {
         auto o = torch::optim::AdamWOptions(1e-2).weight_decay(0);
         if (f) return std::make_unique<ForeachAdamW>(p, o);
         return std::make_unique<torch::optim::AdamW>(p, o);
       },
       false},
  };
}

}  // namespace

// The multi-tensor step is LibTorch's loop step, in the same order: the same weights after five steps.
TEST(ForeachOptimizer, StepsAsLibTorchsOwnOptimizerDoes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    torch::nn::Sequential loop_model = small_model(), foreach_model = small_model();
    auto loop = c.make(loop_model->parameters(), false);
    auto foreach = c.make(foreach_model->parameters(), true);
    train_steps(loop_model, *loop, 5, 0);
    train_steps(foreach_model, *foreach, 5, 0);
    expect_same(weights(loop_model), weights(foreach_model), c.exact);
  }
}

// The state is filed where LibTorch's optimizer looks for it: saved from the multi-tensor optimizer and
// loaded into LibTorch's own, the momentum buffers and Adam's moments carry on (without them the next
// steps would differ), and the other way round.
TEST(ForeachOptimizer, ItsStateIsLibTorchsAndSurvivesSaveAndLoad) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    for (const bool from_foreach : {true, false}) {
      torch::nn::Sequential reference = small_model(), resumed = small_model();
      auto reference_optimizer = c.make(reference->parameters(), from_foreach);
      train_steps(reference, *reference_optimizer, 3, 0);
      // The resumed model takes the reference's weights and optimizer state at step 3.
      {
        torch::NoGradGuard no_grad;
        for (std::size_t i = 0; i < reference->parameters().size(); ++i)
          resumed->parameters()[i].copy_(reference->parameters()[i]);
      }
      std::ostringstream bytes;
      {
        torch::serialize::OutputArchive archive;
        reference_optimizer->save(archive);
        archive.save_to(bytes);
      }
      auto resumed_optimizer = c.make(resumed->parameters(), !from_foreach);
      {
        std::istringstream in(bytes.str());
        torch::serialize::InputArchive archive;
        archive.load_from(in);
        resumed_optimizer->load(archive);
      }
      train_steps(reference, *reference_optimizer, 2, 3);
      train_steps(resumed, *resumed_optimizer, 2, 3);
      expect_same(weights(reference), weights(resumed), c.exact);
    }
  }
}

TEST(ForeachOptimizer, AParameterWithoutAGradientIsLeftAsItIs) {
  torch::nn::Sequential model = small_model();
  ForeachSGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const std::vector<torch::Tensor> before = weights(model);
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({4, 6});
  sgd.zero_grad();
  model->forward(x).sum().backward();
  model->parameters()[0].mutable_grad().reset();  // the first layer's weight
  sgd.step();
  const std::vector<torch::Tensor> after = weights(model);
  EXPECT_TRUE(torch::equal(after[0], before[0]));
  EXPECT_FALSE(torch::equal(after[1], before[1]));
  EXPECT_EQ(sgd.state().size(), 3u);
}

// A sweep decides auto where the device is known (the loop on the CPU) and says in its run record
// which step ran; forced on, the CPU sweep runs the multi-tensor step, to the same losses bit for bit.
TEST(ForeachOptimizer, ASweepRecordsWhichStepRanAndForcedOnItTrainsTheSame) {
  std::vector<double> losses[2];
  for (const bool on : {false, true}) {
    ExperimentConfig e = testing_support::tiny_mnist_training("mnist_foreach");
    e.optimizer.kind = OptimizerKind::Momentum;
    if (on) e.optimizer.foreach = true;
    const SweepConfig resolved = resolve_for_machine(SweepConfig{"test", {e}});
    EXPECT_EQ(resolved.experiments[0].optimizer.foreach, std::optional<bool>(on));
    Workload w(resolved.experiments[0], torch::Device("cpu"));
    EXPECT_EQ(dynamic_cast<ForeachSGD*>(w.optimizer()) != nullptr, on);

    const testing_support::TempDir dir;
    SweepOptions options;
    options.out_dir = dir / "records";
    options.measure_energy = false;
    std::ostringstream progress;
    const SweepOutcome outcome = run_sweep(resolved, options, progress);
    for (const SweepRecord& r : outcome.records) {
      if (const auto* step = std::get_if<StepRecord>(&r)) losses[on].push_back(step->loss.value_or(-1));
      if (const auto* run = std::get_if<RunRecord>(&r)) {
        const Json& optimizer = run->config.at("experiments").at(0).at("optimizer");
        EXPECT_EQ(optimizer.contains("foreach"), on) << optimizer.dump();
      }
    }
  }
  ASSERT_EQ(losses[0].size(), 6u);
  EXPECT_EQ(losses[0], losses[1]);
}

// Each kind of the config is built as LibTorch's optimizer of that kind, or its multi-tensor form, with
// the config's settings (AdamW's decay among them).
TEST(ForeachOptimizer, TheConfigsKindIsTheOptimizerBuilt) {
  torch::nn::Sequential model = small_model();
  OptimizerConfig o;
  o.kind = OptimizerKind::AdamW;
  o.weight_decay = kAdamWWeightDecay;
  o.foreach = false;
  const auto loop = make_optimizer(o, model->parameters());
  auto* adamw = dynamic_cast<torch::optim::AdamW*>(loop.get());
  ASSERT_NE(adamw, nullptr);
  EXPECT_EQ(dynamic_cast<ForeachAdamW*>(loop.get()), nullptr);
  const auto& options = static_cast<const torch::optim::AdamWOptions&>(adamw->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(options.weight_decay(), 0.01);
  EXPECT_DOUBLE_EQ(options.lr(), o.lr);
  o.foreach = true;
  EXPECT_NE(dynamic_cast<ForeachAdamW*>(make_optimizer(o, model->parameters()).get()), nullptr);
  o.kind = OptimizerKind::Adam;
  EXPECT_NE(dynamic_cast<ForeachAdam*>(make_optimizer(o, model->parameters()).get()), nullptr);
  o.foreach = false;
  const auto adam = make_optimizer(o, model->parameters());
  EXPECT_NE(dynamic_cast<torch::optim::Adam*>(adam.get()), nullptr);
  EXPECT_EQ(dynamic_cast<torch::optim::AdamW*>(adam.get()), nullptr);
}
