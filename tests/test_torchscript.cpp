// A model given as a TorchScript file: modules compiled here from TorchScript source and saved, as
// torch.jit.script(model).save(path) would, then read by their path wherever a zoo name goes.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/common/errors.h"
#include "lib/config/config.h"
#include "lib/sweep/sweep_runner.h"
#include "lib/training/training.h"
#include "models/registry.h"
#include "models/torchscript.h"
#include "tests/test_support.h"

namespace batchscope {
namespace {

using testing_support::TempDir;

// A module of the given source with its parameters (trained) and buffers, and the `training` flag every
// module saved from Python has.
torch::jit::Module scripted(const std::string& source,
                            const std::vector<std::pair<std::string, torch::Tensor>>& parameters,
                            const std::vector<std::pair<std::string, torch::Tensor>>& buffers = {}) {
  torch::jit::Module m("Net");
  m.register_attribute("training", c10::BoolType::get(), true);
  for (const auto& [name, value] : parameters) m.register_parameter(name, value.clone().requires_grad_(), false);
  for (const auto& [name, value] : buffers) m.register_buffer(name, value.clone());
  m.define(source);
  return m;
}

// 4 features to 3 classes: 2 * 4 * 3 = 24 FLOPs a sample, as the profiler counts a matrix product.
std::string save_linear(const TempDir& dir, const std::string& name = "linear.pt") {
  torch::manual_seed(3);
  const std::string path = dir / name;
  scripted("def forward(self, x):\n  return torch.mm(x, self.w.t())\n", {{"w", torch::randn({3, 4})}}).save(path);
  return path;
}

// A training step computes no gradient for the data: the product that takes it skips its data gradient,
// and one whose input a parameter made (a learned scale first) does not.
TEST(TorchScript, TheDataGradientSkippedIsThatOfProductsTakingTheData) {
  const TempDir dir;
  const std::string plain = save_linear(dir);
  EXPECT_EQ(models::data_gradient_flops(*models::find_model(plain), {4}, 3), 24.0);
  const std::string scaled = dir / "scaled.pt";
  scripted("def forward(self, x):\n  return torch.mm(x * self.s, self.w.t())\n",
           {{"s", torch::ones({4})}, {"w", torch::randn({3, 4})}})
      .save(scaled);
  EXPECT_EQ(models::data_gradient_flops(*models::find_model(scaled), {4}, 3), 0.0);
}

TEST(TorchScript, AFileIsAModelWithItsClassesFlopsAndIdentity) {
  const TempDir dir;
  const std::string path = save_linear(dir);
  EXPECT_TRUE(models::is_model_file_name(path));
  EXPECT_TRUE(models::is_model_file_name("net.ts"));
  EXPECT_FALSE(models::is_model_file_name("vgg16"));
  EXPECT_EQ(models::model_stem(path), "linear");
  EXPECT_EQ(models::model_stem("vgg16"), "vgg16");
  const models::ModelSpec* spec = models::find_model(path);
  ASSERT_NE(spec, nullptr);
  ASSERT_TRUE(spec->file.has_value());
  EXPECT_EQ(spec->file->bytes, std::filesystem::file_size(path));
  EXPECT_NE(spec->file->crc32, 0u);
  EXPECT_TRUE(spec->default_input.empty());
  EXPECT_EQ(spec->classes_of({4}), 3);
  EXPECT_DOUBLE_EQ(spec->forward_flops({4}, 3), 24.0);
  EXPECT_EQ(models::smallest_train_batch(*spec, {4}, 3), 1);
  // Classes other than the output's are refused, saying the output's.
  EXPECT_NE(testing_support::invalid_argument_message([&] { spec->forward_flops({4}, 5); }).find("returns 3 classes"),
            std::string::npos);
  // An input the module cannot take: its forward's failure, in one sentence.
  const std::string bad = testing_support::invalid_argument_message([&] { spec->classes_of({5}); });
  EXPECT_NE(bad.find("forward fails on one sample of 5 ("), std::string::npos) << bad;
  EXPECT_EQ(bad.find('\n'), std::string::npos) << bad;
}

TEST(TorchScript, TrainingStepsTheModulesOwnWeights) {
  const TempDir dir;
  const std::string path = save_linear(dir);
  const models::ModelSpec& spec = models::torchscript_model(path);
  const std::shared_ptr<models::Network> net = spec.build({4}, 3);
  const std::vector<torch::Tensor> parameters = net->parameters();
  ASSERT_EQ(parameters.size(), 1u);
  for (const torch::Tensor& p : parameters) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  torch::manual_seed(0);
  const models::Batch batch = spec.synthetic_batch(8, {4}, 3);
  const torch::Tensor before = net->forward(batch.inputs).detach().clone();
  torch::optim::SGD sgd(parameters, torch::optim::SGDOptions(0.5));
  sgd.zero_grad();
  net->loss(net->forward(batch.inputs), batch.targets).backward();
  sgd.step();
  // The step changed what the module computes: the optimizer's tensors are the module's.
  EXPECT_FALSE(torch::allclose(net->forward(batch.inputs), before));
  // Each build starts from the file's weights.
  EXPECT_TRUE(torch::allclose(spec.build({4}, 3)->forward(batch.inputs), before));
}

// Linear layers around a ReLU, an MLP: TorchScript's graph executor optimizes the graph at the third
// step, and LibTorch 2.6 built with LLVM (Debian 13's) hung there compiling the graph's fused backward
// for the CPU until batchscope turned that fuser off. Eight steps train it.
TEST(TorchScript, AnMlpFileTrainsOnTheCpuPastTheStepTheGraphExecutorOptimizes) {
  const TempDir dir;
  const std::string path = dir / "mlp.pt";
  torch::manual_seed(5);
  scripted(
      "def forward(self, x):\n"
      "  return torch.linear(torch.relu(torch.linear(x, self.w1, self.b1)), self.w2, self.b2)\n",
      {{"w1", torch::randn({128, 256}) * 0.05},
       {"b1", torch::zeros({128})},
       {"w2", torch::randn({10, 128}) * 0.05},
       {"b2", torch::zeros({10})}})
      .save(path);
  const models::ModelSpec* spec = models::find_model(path);
  ASSERT_NE(spec, nullptr);
  const std::shared_ptr<models::Network> net = spec->build({256}, 10);
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1));
  const models::Batch batch = spec->synthetic_batch(16, {256}, 10);
  std::vector<double> losses;
  for (int step = 0; step < 8; ++step) {
    sgd.zero_grad();
    const torch::Tensor loss = net->loss(net->forward(batch.inputs), batch.targets);
    loss.backward();
    sgd.step();
    losses.push_back(loss.item<double>());
  }
  // The same batch each step: its loss falls.
  EXPECT_LT(losses.back(), losses.front());
}

// A module of a file's top module, of its own type, whose forward returns the given expression of x.
torch::jit::Module submodule(const std::string& type, const std::string& forward,
                             const std::vector<std::pair<std::string, torch::Tensor>>& parameters) {
  torch::jit::Module m(type);
  m.register_attribute("training", c10::BoolType::get(), true);
  for (const auto& [name, value] : parameters)
    m.register_parameter(name, value.clone().requires_grad_(), false);
  m.define("def forward(self, x):\n  return " + forward + "\n");
  return m;
}

// A file's convolution and linear layers as GEMMs, from its operators on one sample, by module name: a
// strided, grouped convolution's output pixels and channels per group, a linear layer's features; a
// module that runs twice is no single GEMM and is left out.
TEST(TorchScript, AFilesConvolutionAndLinearLayersAreItsGemms) {
  const TempDir dir;
  torch::manual_seed(2);
  torch::jit::Module net("Net");
  net.register_attribute("training", c10::BoolType::get(), true);
  net.register_module("conv",
                      submodule("Conv", "torch.conv2d(x, self.weight, self.bias, [2, 2], [1, 1], [1, 1], 2)",
                                {{"weight", torch::randn({8, 2, 3, 3})}, {"bias", torch::zeros({8})}}));
  net.register_module("fc", submodule("Fc", "torch.linear(x, self.weight, self.bias)",
                                      {{"weight", torch::randn({5, 128})}, {"bias", torch::zeros({5})}}));
  net.register_module("twice", submodule("Twice", "torch.linear(x, self.weight, self.bias)",
                                         {{"weight", torch::randn({5, 5})}, {"bias", torch::zeros({5})}}));
  net.define(
      "def forward(self, x):\n"
      "  features = torch.flatten(self.conv.forward(x), 1)\n"
      "  return self.twice.forward(self.twice.forward(self.fc.forward(features)))\n");
  const std::string path = dir / "gemms.pt";
  net.save(path);
  const models::ModelSpec* spec = models::find_model(path);
  ASSERT_NE(spec, nullptr);
  ASSERT_TRUE(spec->gemm_layers_of);
  const std::vector<models::GemmLayer> layers = spec->gemm_layers_of({4, 8, 8});
  ASSERT_EQ(layers.size(), 2u);
  const models::GemmLayer& conv = layers[0];
  EXPECT_EQ(conv.name, "conv");
  EXPECT_TRUE(conv.first);
  EXPECT_EQ(conv.groups, 2);
  EXPECT_EQ(conv.in, 2);  // 4 input channels in 2 groups
  EXPECT_EQ(conv.n, 4);   // 8 output channels in 2 groups
  EXPECT_EQ(conv.kernel_area, 9);
  EXPECT_EQ(conv.k, 18);
  EXPECT_EQ(conv.rows, 16);  // 8x8 at stride 2: 4x4
  EXPECT_EQ(conv.input_rows, 64);
  const models::GemmLayer& fc = layers[1];
  EXPECT_EQ(fc.name, "fc");
  EXPECT_FALSE(fc.first);
  EXPECT_EQ(fc.in, 128);
  EXPECT_EQ(fc.k, 128);
  EXPECT_EQ(fc.n, 5);
  EXPECT_EQ(fc.rows, 1);
  EXPECT_EQ(fc.groups, 1);
  // The zoo's layers come from its tables.
  EXPECT_FALSE(models::find_model("mnist_cnn")->gemm_layers_of);
}

TEST(TorchScript, ConvolutionsOfOneAndThreeDimensionsAreGemmsOverTheirPixels) {
  const TempDir dir;
  torch::manual_seed(3);
  const auto layers_of = [&](const std::string& name, const std::string& call, const torch::Tensor& weight,
                             int64_t out, int64_t features, const models::SampleShape& input) {
    torch::jit::Module net("Net");
    net.register_attribute("training", c10::BoolType::get(), true);
    net.register_module("conv", submodule("Conv", call, {{"weight", weight}, {"bias", torch::zeros({out})}}));
    net.register_module("fc",
                        submodule("Fc", "torch.linear(x, self.weight, self.bias)",
                                  {{"weight", torch::randn({5, features})}, {"bias", torch::zeros({5})}}));
    net.define("def forward(self, x):\n  return self.fc.forward(torch.flatten(self.conv.forward(x), 1))\n");
    const std::string path = dir / name;
    net.save(path);
    const models::ModelSpec* spec = models::find_model(path);
    EXPECT_NE(spec, nullptr);
    return spec != nullptr && spec->gemm_layers_of ? spec->gemm_layers_of(input)
                                                   : std::vector<models::GemmLayer>{};
  };
  // A sequence of 16 steps of 4 channels, 6 filters of width 3 at stride 2: 8 output steps.
  const std::vector<models::GemmLayer> one =
      layers_of("conv1d.pt", "torch.conv1d(x, self.weight, self.bias, [2], [1], [1], 1)",
                torch::randn({6, 4, 3}), 6, 48, {4, 16});
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].name, "conv");
  EXPECT_EQ(one[0].rows, 8);
  EXPECT_EQ(one[0].input_rows, 16);
  EXPECT_EQ(one[0].kernel_area, 3);
  EXPECT_EQ(one[0].k, 12);
  EXPECT_EQ(one[0].n, 6);
  EXPECT_EQ(one[1].name, "fc");
  EXPECT_EQ(one[1].k, 48);
  // A clip of 4 frames of 6x6 with 2 channels, 3x3x3 kernels padded: 144 output pixels.
  const std::vector<models::GemmLayer> three =
      layers_of("conv3d.pt", "torch.conv3d(x, self.weight, self.bias, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1)",
                torch::randn({3, 2, 3, 3, 3}), 3, 432, {2, 4, 6, 6});
  ASSERT_EQ(three.size(), 2u);
  EXPECT_EQ(three[0].rows, 144);
  EXPECT_EQ(three[0].input_rows, 144);
  EXPECT_EQ(three[0].kernel_area, 27);
  EXPECT_EQ(three[0].k, 54);
  EXPECT_EQ(three[0].n, 3);
  EXPECT_EQ(three[0].groups, 1);
  // A transposed convolution is no layer of a rate: its GEMM is laid out otherwise.
  const std::vector<models::GemmLayer> transposed = layers_of(
      "transposed.pt", "torch.conv_transpose2d(x, self.weight, self.bias, [2, 2], [0, 0], [0, 0], 1, [1, 1])",
      torch::randn({2, 3, 2, 2}), 3, 3 * 8 * 8, {2, 4, 4});
  ASSERT_EQ(transposed.size(), 1u);
  EXPECT_EQ(transposed[0].name, "fc");
}

TEST(TorchScript, APlainTensorAttributeMovesWithTheNetwork) {
  const TempDir dir;
  const std::string path = dir / "attribute.pt";
  torch::jit::Module m("Net");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("w", torch::ones({4, 3}).requires_grad_(), false);
  // Neither a parameter nor a buffer: what `self.scale = torch.ones(3)` in a Python module becomes.
  m.register_attribute("scale", c10::TensorType::get(), torch::full({3, 3}, 2.0));
  m.define("def forward(self, x):\n  return torch.mm(torch.mm(x, self.w), self.scale)\n");
  m.save(path);
  const models::ModelSpec& spec = models::torchscript_model(path);
  const std::shared_ptr<models::Network> net = spec.build({4}, 3);
  EXPECT_EQ(net->buffers().size(), 1u);
  // Converted as a device move converts: a product of the float attribute with doubles would fail.
  net->to(torch::kFloat64);
  const torch::Tensor out = net->forward(torch::ones({2, 4}, torch::kFloat64));
  EXPECT_EQ(out.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::allclose(out, torch::full({2, 3}, 24.0, torch::kFloat64)));
}

TEST(TorchScript, ABatchNormOfOneValueAChannelTrainsFromBatchTwo) {
  const TempDir dir;
  const std::string path = dir / "norm.pt";
  // As torch.nn.BatchNorm1d scripted: its functional form refuses a single value per channel in training.
  scripted("def forward(self, x):\n"
           "  if self.training:\n"
           "    assert x.size(0) > 1, 'Expected more than 1 value per channel when training'\n"
           "  return torch.batch_norm(x, self.g, self.b, self.mean, self.var, self.training, 0.1, 1e-5, False)\n",
           {{"g", torch::ones({3})}, {"b", torch::zeros({3})}}, {{"mean", torch::zeros({3})}, {"var", torch::ones({3})}})
      .save(path);
  const models::ModelSpec& spec = models::torchscript_model(path);
  EXPECT_EQ(spec.classes_of({3}), 3);
  EXPECT_EQ(models::smallest_train_batch(spec, {3}, 3), 2);
}

TEST(TorchScript, FilesThatAreNoModelsAreRefusedInOneSentence) {
  const TempDir dir;
  const auto message = [](const std::string& path) {
    return testing_support::invalid_argument_message([&] { models::torchscript_model(path); });
  };
  EXPECT_NE(message(dir / "missing.pt").find("there is no file"), std::string::npos);
  EXPECT_NE(message(dir.path().string()).find("is a directory"), std::string::npos);
  EXPECT_NE(message("/dev/zero").find("is not a regular file"), std::string::npos);
  std::ofstream(dir / "text.pt") << "not a model\n";
  const std::string not_torchscript = message(dir / "text.pt");
  EXPECT_NE(not_torchscript.find("is not a TorchScript file"), std::string::npos) << not_torchscript;
  EXPECT_NE(not_torchscript.find("torch.jit.script(model).save(path)"), std::string::npos) << not_torchscript;
  EXPECT_EQ(models::find_model(dir / "text.pt"), nullptr);
  // A forward that returns no [batch, classes] logits.
  const std::string sum_path = dir / "sum.pt";
  scripted("def forward(self, x):\n  return (x * self.w).sum()\n", {{"w", torch::ones({4})}}).save(sum_path);
  const std::string sum = testing_support::invalid_argument_message(
      [&] { models::torchscript_model(sum_path).classes_of({4}); });
  EXPECT_NE(sum.find("returns [] for one sample of 4, not [1, classes] logits"), std::string::npos) << sum;
}

std::string config_error(const std::string& yaml) {
  try {
    parse_sweep_config(yaml, "exp.yaml", {});
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(TorchScript, AnExperimentNamesTheFileAndGivesItsInput) {
  const TempDir dir;
  const std::string path = save_linear(dir);
  const std::string model = "model: " + path + "\nbatch: 1:2\n";
  const SweepConfig sweep = parse_sweep_config(model + "input: [4]\n", "exp.yaml", {});
  const ExperimentConfig& e = sweep.experiments.at(0);
  EXPECT_EQ(e.classes, 3) << "the output's";
  EXPECT_EQ(e.name, "linear_train_fp32");
  ASSERT_TRUE(e.model_file.has_value());
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("model_file").at("bytes"), std::filesystem::file_size(path));
  EXPECT_EQ(j.at("model_file").at("crc32").get<std::string>().size(), 8u);
  const ExperimentConfig back = experiment_from_json(j);
  ASSERT_TRUE(back.model_file.has_value());
  EXPECT_EQ(back.model_file->crc32, e.model_file->crc32);
  EXPECT_EQ(to_json(back), j);
  // Without an input, with other classes, with an input the module cannot take, with a file that is none.
  const std::string no_input = config_error(model);
  EXPECT_NE(no_input.find("exp.yaml:1"), std::string::npos) << no_input;
  EXPECT_NE(no_input.find("is a TorchScript file, whose input shape batchscope cannot know"), std::string::npos);
  EXPECT_NE(no_input.find("add input:"), std::string::npos) << no_input;
  const std::string classes = config_error(model + "input: [4]\nclasses: 5\n");
  EXPECT_NE(classes.find("exp.yaml:4"), std::string::npos) << classes;
  EXPECT_NE(classes.find("give 3"), std::string::npos) << classes;
  const std::string shape = config_error(model + "input: [2, 4]\n");
  EXPECT_NE(shape.find("exp.yaml:3"), std::string::npos) << shape;
  EXPECT_NE(shape.find("forward fails"), std::string::npos) << shape;
  std::ofstream(dir / "text.pt") << "not a model\n";
  const std::string text = config_error("model: " + (dir / "text.pt") + "\nbatch: 1\ninput: [4]\n");
  EXPECT_NE(text.find("exp.yaml:1"), std::string::npos) << text;
  EXPECT_NE(text.find("is not a TorchScript file"), std::string::npos) << text;
}

TEST(TorchScript, ASweepTimesTheFilesModuleAndRecordsItsFile) {
  const TempDir dir;
  const std::string path = save_linear(dir);
  SweepConfig config = parse_sweep_config("model: " + path +
                                              "\nbatch: 1:3\ninput: [4]\nwarmup: 1\nsteps: 2\ndevice: cpu\n",
                                          "exp.yaml", {});
  SweepOptions options;
  options.out_dir = dir / "records";
  std::ostringstream progress;
  const SweepOutcome outcome = run_sweep(resolve_for_machine(config), options, progress);
  int points = 0;
  for (const SweepRecord& record : outcome.records) {
    const Json r = to_json(record);
    if (r["type"] == "run") {
      EXPECT_EQ(r["config"]["experiments"][0]["model"], path);
      EXPECT_TRUE(r["config"]["experiments"][0].contains("model_file"));
    }
    if (r["type"] != "point") continue;
    ++points;
    // A training step counts three times the forward FLOPs of its batch, less the data's gradient through
    // the linear layer that takes it (its whole forward here): twice.
    EXPECT_DOUBLE_EQ(r["flops_per_step"].get<double>(), 2 * 24.0 * r["batch_size"].get<double>()) << r.dump();
  }
  EXPECT_EQ(points, 3);
}

// Token ids to logits per position: an embedding of 7 tokens in 4 values, then a product back to the 7,
// 2 * 4 * 7 = 56 FLOPs a position. The second sends a sequence-first output.
std::string save_token_model(const TempDir& dir, const std::string& name = "lm.pt",
                             bool sequence_first = false) {
  torch::manual_seed(5);
  const std::string path = dir / name;
  const std::string out =
      sequence_first ? "torch.matmul(e, self.w.t()).transpose(0, 1)" : "torch.matmul(e, self.w.t())";
  scripted("def forward(self, x):\n  e = torch.embedding(self.emb, x)\n  return " + out + "\n",
           {{"emb", torch::randn({7, 4})}, {"w", torch::randn({7, 4})}})
      .save(path);
  return path;
}

TEST(TorchScript, AFileOfTokenIdsIsALanguageModel) {
  const TempDir dir;
  const std::string path = save_token_model(dir);
  const models::ModelSpec* spec = models::find_model(path, models::FileInput::Tokens);
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->input_kind, models::InputKind::Tokens);
  EXPECT_EQ(spec->sequence_axis, 0);
  ASSERT_TRUE(spec->file.has_value());
  EXPECT_EQ(spec->file->input, models::FileInput::Tokens);
  EXPECT_EQ(spec->classes_of({5}), 7) << "the vocabulary: the output's last size";
  EXPECT_DOUBLE_EQ(spec->forward_flops({5}, 7), 5 * 56.0);
  torch::manual_seed(0);
  const models::Batch batch = spec->synthetic_batch(3, {5}, 7);
  EXPECT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(batch.inputs.scalar_type(), torch::kLong);
  EXPECT_EQ(batch.targets.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_LT(batch.inputs.max().item<int64_t>(), 7);
  EXPECT_GE(batch.inputs.min().item<int64_t>(), 0);
  // Trained with cross-entropy at every position: the loss is the mean over the 15 positions.
  const std::shared_ptr<models::Network> net = spec->build({5}, 7);
  const torch::Tensor output = net->forward(batch.inputs);
  const torch::Tensor loss = net->loss(output, batch.targets);
  const torch::Tensor expected =
      torch::nn::functional::cross_entropy(output.reshape({15, 7}), batch.targets.reshape(15));
  EXPECT_TRUE(torch::allclose(loss, expected));
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.5));
  sgd.zero_grad();
  loss.backward();
  sgd.step();
  EXPECT_FALSE(torch::allclose(net->forward(batch.inputs), output));
  // The same file read as one of float values: its forward fails, and the fix names input_kind.
  const std::string as_float =
      testing_support::invalid_argument_message([&] { models::torchscript_model(path).classes_of({5}); });
  EXPECT_NE(as_float.find("input_kind: tokens"), std::string::npos) << as_float;
  // Token ids are one sequence: a second size is refused.
  const std::string two = testing_support::invalid_argument_message([&] { spec->classes_of({2, 5}); });
  EXPECT_NE(two.find("the sequence length alone"), std::string::npos) << two;
  // A sequence-first output reads like a batch-first one at batch 1 of 1 token; a batch of 2 tells.
  const std::string first = save_token_model(dir, "first.pt", /*sequence_first=*/true);
  const std::string sequence_first = testing_support::invalid_argument_message(
      [&] { models::torchscript_model(first, models::FileInput::Tokens).classes_of({1}); });
  EXPECT_NE(sequence_first.find("returns [1, 2, 7] for a batch of 2"), std::string::npos) << sequence_first;
  EXPECT_NE(sequence_first.find("the batch first"), std::string::npos) << sequence_first;
  const std::string longer = testing_support::invalid_argument_message(
      [&] { models::torchscript_model(first, models::FileInput::Tokens).classes_of({5}); });
  EXPECT_NE(longer.find("returns [5, 1, 7] for one sample of 5 tokens"), std::string::npos) << longer;
}

TEST(TorchScript, AnExperimentOfTokenIdsGivesTheSequenceLength) {
  const TempDir dir;
  const std::string path = save_token_model(dir);
  const std::string model = "model: " + path + "\nbatch: 1:2\ninput_kind: tokens\n";
  for (const std::string& length : {"seq_len: 5\n", "input: [5]\n"}) {
    const ExperimentConfig e = parse_sweep_config(model + length, "exp.yaml", {}).experiments.at(0);
    EXPECT_EQ(e.input_shape, (std::vector<int64_t>{5})) << length;
    EXPECT_EQ(e.classes, 7);
    ASSERT_TRUE(e.model_file.has_value());
    EXPECT_EQ(e.model_file->input, models::FileInput::Tokens);
    const nlohmann::json j = to_json(e);
    EXPECT_EQ(j.at("model_file").at("input_kind"), "tokens");
    const ExperimentConfig back = experiment_from_json(j);
    ASSERT_TRUE(back.model_file.has_value());
    EXPECT_EQ(back.model_file->input, models::FileInput::Tokens);
    EXPECT_EQ(to_json(back), j);
    ASSERT_NE(experiment_model(back), nullptr);
    EXPECT_EQ(experiment_model(back)->input_kind, models::InputKind::Tokens);
  }
  // A float module's record says nothing of its input, as before.
  const ExperimentConfig linear =
      parse_sweep_config("model: " + save_linear(dir) + "\nbatch: 1\ninput: [4]\n", "exp.yaml", {})
          .experiments.at(0);
  EXPECT_FALSE(to_json(linear).at("model_file").contains("input_kind"));
  // Mistakes: no sequence length, two sizes, an unknown kind, input_kind on a zoo model, the file read as
  // float values, seq_len for a float module, images of a dataset.
  const std::string no_length = config_error(model);
  EXPECT_NE(no_length.find("add seq_len:"), std::string::npos) << no_length;
  const std::string two = config_error(model + "input: [2, 5]\n");
  EXPECT_NE(two.find("exp.yaml:4"), std::string::npos) << two;
  EXPECT_NE(two.find("give one size"), std::string::npos) << two;
  const std::string word = config_error("model: " + path + "\nbatch: 1\ninput_kind: words\nseq_len: 5\n");
  EXPECT_NE(word.find("exp.yaml:3"), std::string::npos) << word;
  EXPECT_NE(word.find("tokens"), std::string::npos) << word;
  const std::string zoo = config_error("model: mnist_cnn\nbatch: 1\ninput_kind: tokens\n");
  EXPECT_NE(zoo.find("exp.yaml:3"), std::string::npos) << zoo;
  EXPECT_NE(zoo.find("applies to TorchScript files only"), std::string::npos) << zoo;
  // A name that is neither a file nor the zoo's is said to be unknown, whatever else is given.
  const std::string unknown = config_error("model: nosuch\nbatch: 1\ninput_kind: tokens\n");
  EXPECT_NE(unknown.find("is not a known model"), std::string::npos) << unknown;
  const std::string as_float = config_error("model: " + path + "\nbatch: 1\ninput: [5]\n");
  EXPECT_NE(as_float.find("give input_kind: tokens"), std::string::npos) << as_float;
  const std::string float_length = config_error("model: " + save_linear(dir) + "\nbatch: 1\nseq_len: 4\n");
  EXPECT_NE(float_length.find("add input_kind: tokens"), std::string::npos) << float_length;
  const std::string images = config_error(model + "data: mnist\n");
  EXPECT_NE(images.find("takes token sequences"), std::string::npos) << images;
}

TEST(TorchScript, ASweepOfTokenIdsCountsItsFlopsPerSequence) {
  const TempDir dir;
  const std::string path = save_token_model(dir);
  for (const std::string phase : {"train", "infer"}) {
    SweepConfig config =
        parse_sweep_config("model: " + path + "\ninput_kind: tokens\nseq_len: 5\nphase: " + phase +
                               "\nbatch: 1:3\nwarmup: 1\nsteps: 2\ndevice: cpu\n",
                           "exp.yaml", {});
    SweepOptions options;
    options.out_dir = dir / phase;
    std::ostringstream progress;
    const SweepOutcome outcome = run_sweep(resolve_for_machine(config), options, progress);
    int points = 0;
    for (const SweepRecord& record : outcome.records) {
      const Json r = to_json(record);
      if (r["type"] != "point") continue;
      ++points;
      const double passes = phase == "train" ? 3 : 1;
      EXPECT_DOUBLE_EQ(r["flops_per_step"].get<double>(), passes * 5 * 56.0 * r["batch_size"].get<double>())
          << r.dump();
    }
    EXPECT_EQ(points, 3) << phase;
  }
}

TEST(TorchScript, ACheckpointOfAFileModelNeedsTheFileItWasTrainedFrom) {
  const TempDir dir;
  const std::string path = save_linear(dir);
  const models::ModelSpec& spec = models::torchscript_model(path);
  const auto checkpoint = [&](const std::string& crc) {
    const std::string info = dir / ("checkpoint_" + crc + ".json");
    std::ofstream(info) << nlohmann::json{{"model", path},
                                          {"data", {{"directory", dir.path().string()}}},
                                          {"model_file", {{"bytes", spec.file->bytes}, {"crc32", crc}}}}
                               .dump();
    return info;
  };
  EXPECT_EQ(read_checkpoint_info(checkpoint(models::crc32_text(spec.file->crc32))).model, path);
  const std::string other = checkpoint(models::crc32_text(spec.file->crc32 ^ 1u));
  try {
    read_checkpoint_info(other);
    ADD_FAILURE() << "a checkpoint of another file's code was accepted";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(other), std::string::npos) << message;
    EXPECT_NE(message.find("restore the TorchScript file it was trained from"), std::string::npos) << message;
  }
  EXPECT_THROW(read_checkpoint_info(checkpoint("xyz")), UserError);
  EXPECT_EQ(models::crc32_from_text("0000000g"), std::nullopt);
  EXPECT_EQ(models::crc32_from_text(models::crc32_text(0x0badcafeu)), 0x0badcafeu);
}

// Token ids and an attention mask to (logits [batch, 3],), as a Hugging Face sequence classifier traced
// with torchscript=True: an embedding of 20 token ids, the mask's positions summed, one product of 4 to
// 3 (24 FLOPs a sequence).
std::string save_sequence_classifier(const TempDir& dir) {
  torch::manual_seed(5);
  const std::string path = dir / "classifier.pt";
  scripted(
      "def forward(self, input_ids, attention_mask):\n"
      "  h = torch.embedding(self.word_embeddings, input_ids) * attention_mask.unsqueeze(-1)\n"
      "  return (torch.mm(h.sum(1), self.w.t()), h)\n",
      {{"word_embeddings", torch::randn({20, 4})}, {"w", torch::randn({3, 4})}})
      .save(path);
  return path;
}

TEST(TorchScript, ASequenceClassifierWithAnAttentionMaskTakesTheVocabGiven) {
  const TempDir dir;
  const std::string path = save_sequence_classifier(dir);
  // Its output does not tell its token ids: refused without a vocab, naming the embedding's rows.
  const std::string no_vocab = testing_support::invalid_argument_message(
      [&] { models::torchscript_model(path, models::FileInput::Tokens).classes_of({5}); });
  EXPECT_NE(no_vocab.find("one vector of 3 logits per sequence"), std::string::npos) << no_vocab;
  EXPECT_NE(no_vocab.find("give vocab: N"), std::string::npos) << no_vocab;
  EXPECT_NE(no_vocab.find("word_embeddings has 20 rows"), std::string::npos) << no_vocab;
  const std::string too_many = testing_support::invalid_argument_message(
      [&] { models::torchscript_model(path, models::FileInput::Tokens, 21).classes_of({5}); });
  EXPECT_NE(too_many.find("fails on token id 20"), std::string::npos) << too_many;

  const models::ModelSpec* spec = models::find_model(path, models::FileInput::Tokens, 20);
  ASSERT_NE(spec, nullptr);
  ASSERT_TRUE(spec->file.has_value());
  EXPECT_EQ(spec->file->vocab, 20);
  EXPECT_EQ(spec->file->arguments, (std::vector<models::FilledArgument>{{"attention_mask", "ones"}}));
  EXPECT_EQ(spec->classes_of({5}), 3);
  EXPECT_DOUBLE_EQ(spec->forward_flops({5}, 3), 24.0);
  torch::manual_seed(0);
  const models::Batch batch = spec->synthetic_batch(64, {5}, 3);
  EXPECT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{64, 5}));
  EXPECT_EQ(batch.targets.sizes(), (std::vector<int64_t>{64})) << "one class a sequence";
  EXPECT_EQ(batch.inputs.max().item<int64_t>(), 19) << "token ids up to the vocab";
  EXPECT_LT(batch.targets.max().item<int64_t>(), 3);
  // The mask is ones: the output is the classifier of each sequence's summed embeddings. A smaller batch
  // after a larger one takes the first rows of the mask kept.
  const std::shared_ptr<models::Network> net = spec->build({5}, 3);
  torch::Tensor embeddings, weights;
  for (const auto& p : net->named_parameters()) (p.key() == "w" ? weights : embeddings) = p.value().detach();
  for (const int64_t rows : {64, 2}) {
    const torch::Tensor ids = batch.inputs.narrow(0, 0, rows);
    const torch::Tensor output = net->forward(ids);
    EXPECT_TRUE(
        torch::allclose(output, torch::mm(torch::embedding(embeddings, ids).sum(1), weights.t()), 1e-5, 1e-5))
        << rows;
  }
  const torch::Tensor output = net->forward(batch.inputs);
  const torch::Tensor loss = net->loss(output, batch.targets);
  EXPECT_TRUE(torch::allclose(loss, torch::nn::functional::cross_entropy(output, batch.targets)));
  loss.backward();
  for (const torch::Tensor& p : net->parameters()) EXPECT_TRUE(p.grad().defined());
}

TEST(TorchScript, TheExperimentRecordSaysWhatTheForwardIsGivenAfterItsInput) {
  const TempDir dir;
  const std::string path = dir / "bert_like.pt";
  scripted(
      "def forward(self, input_ids, attention_mask, token_type_ids, position_ids, "
      "head_mask: Optional[Tensor] = None):\n"
      "  ids = input_ids + token_type_ids + position_ids * 0\n"
      "  return torch.embedding(self.e, ids) * attention_mask.unsqueeze(-1)\n",
      {{"e", torch::randn({6, 6})}})
      .save(path);
  const ExperimentConfig e =
      parse_sweep_config("model: " + path + "\nbatch: 1:2\ninput_kind: tokens\nseq_len: 4\n", "exp.yaml", {})
          .experiments.at(0);
  ASSERT_TRUE(e.model_file.has_value());
  // Up to the last required argument: the head mask, with a default, is left to the module.
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("model_file").at("arguments"),
            nlohmann::json::parse(R"([{"name": "attention_mask", "given": "ones"},
                                      {"name": "token_type_ids", "given": "zeros"},
                                      {"name": "position_ids", "given": "positions"}])"));
  EXPECT_EQ(to_json(experiment_from_json(j)), j);
  EXPECT_EQ(e.classes, 6);
  // A float module without arguments after its input says none.
  const ExperimentConfig linear =
      parse_sweep_config("model: " + save_linear(dir) + "\nbatch: 1\ninput: [4]\n", "exp.yaml", {})
          .experiments.at(0);
  EXPECT_FALSE(to_json(linear).at("model_file").contains("arguments"));
}

TEST(TorchScript, TheForwardsOtherArgumentsAreFilledOrRefused) {
  const TempDir dir;
  // A token model of the given forward over an embedding of 6 ids, saved as `name`.
  const auto token_model = [&](const std::string& name, const std::string& forward, const torch::Tensor& e) {
    const std::string path = dir / name;
    scripted(forward, {{"e", e}}).save(path);
    return &models::torchscript_model(path, models::FileInput::Tokens);
  };
  const auto refusal = [&](const std::string& name, const std::string& arguments) {
    const models::ModelSpec* spec = token_model(
        name, "def forward(self, " + arguments + "):\n  return torch.embedding(self.e, input_ids)\n",
        torch::randn({6, 6}));
    return testing_support::invalid_argument_message([&] { spec->classes_of({4}); });
  };
  // A dict's "logits", and an argument with a default left to it.
  EXPECT_EQ(token_model("dict.pt",
                        "def forward(self, x, mask: Optional[Tensor] = None):\n"
                        "  return {'hidden': x.float(), 'logits': torch.embedding(self.e, x)}\n",
                        torch::randn({6, 6}))
                ->classes_of({4}),
            6);
  // A required argument that is neither a mask nor token types.
  const std::string unfilled = refusal("labels.pt", "input_ids, token_type_ids, labels");
  EXPECT_NE(unfilled.find("takes input_ids, token_type_ids and labels"), std::string::npos) << unfilled;
  EXPECT_NE(unfilled.find("give labels a default"), std::string::npos) << unfilled;
  // A padding mask, whose ones would mean padding, is not filled; nor a head mask, of the heads' shape.
  const std::string padded = refusal("padding.pt", "input_ids, key_padding_mask");
  EXPECT_NE(padded.find("not key_padding_mask"), std::string::npos) << padded;
  const std::string headed = refusal("head.pt", "input_ids, head_mask");
  EXPECT_NE(headed.find("not head_mask"), std::string::npos) << headed;
  // Positions 0, 1, ... in each row: the output is the embedding of each id plus its position.
  const models::ModelSpec* positioned =
      token_model("positions.pt",
                  "def forward(self, input_ids, position_ids, "
                  "head_mask: Optional[Tensor] = None):\n"
                  "  return torch.embedding(self.e, input_ids + position_ids)\n",
                  torch::eye(6));
  EXPECT_EQ(positioned->classes_of({4}), 6);
  const std::shared_ptr<models::Network> net = positioned->build({4}, 6);
  for (const int64_t rows : {3, 1}) {
    const torch::Tensor ids = torch::ones({rows, 4}, torch::kLong);
    EXPECT_TRUE(torch::equal(net->forward(ids).argmax(-1), torch::arange(1, 5).expand({rows, 4}))) << rows;
  }
  // A float module of 4 features to 3 classes whose forward is `source`: why it is refused.
  const auto float_refusal = [&](const std::string& name, const std::string& source) {
    const std::string path = dir / name;
    scripted(source, {{"w", torch::randn({4, 3})}}).save(path);
    return testing_support::invalid_argument_message(
        [&] { models::torchscript_model(path).classes_of({4}); });
  };
  // A float module takes one tensor; one with a mask may be of token ids, wherever the mask stands.
  const std::string as_float = float_refusal(
      "masked.pt", "def forward(self, x, attention_mask):\n  return torch.mm(x * attention_mask, self.w)\n");
  EXPECT_NE(as_float.find("give the arguments after x defaults"), std::string::npos) << as_float;
  EXPECT_NE(as_float.find("--input-kind tokens"), std::string::npos) << as_float;
  const std::string later_mask = float_refusal(
      "later.pt",
      "def forward(self, x, y, attention_mask):\n  return torch.mm(x * y * attention_mask, self.w)\n");
  EXPECT_NE(later_mask.find("takes x, y and attention_mask"), std::string::npos) << later_mask;
  EXPECT_NE(later_mask.find("--input-kind tokens"), std::string::npos) << later_mask;
  // A tuple that does not begin with a tensor holds no logits.
  const std::string tuple = dir / "tuple.pt";
  scripted("def forward(self, x):\n  return (1, torch.mm(x, self.w))\n", {{"w", torch::randn({4, 3})}})
      .save(tuple);
  const std::string none =
      testing_support::invalid_argument_message([&] { models::torchscript_model(tuple).classes_of({4}); });
  EXPECT_NE(none.find("with no logits in it"), std::string::npos) << none;
}

TEST(TorchScript, AnExperimentGivesASequenceClassifiersVocab) {
  const TempDir dir;
  const std::string path = save_sequence_classifier(dir);
  const std::string model = "model: " + path + "\nbatch: 1:2\ninput_kind: tokens\nseq_len: 5\n";
  const ExperimentConfig e = parse_sweep_config(model + "vocab: 20\n", "exp.yaml", {}).experiments.at(0);
  EXPECT_EQ(e.classes, 3);
  ASSERT_TRUE(e.model_file.has_value());
  EXPECT_EQ(e.model_file->vocab, 20);
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("model_file").at("vocab"), 20);
  const ExperimentConfig back = experiment_from_json(j);
  EXPECT_EQ(to_json(back), j);
  ASSERT_NE(experiment_model(back), nullptr);
  EXPECT_EQ(experiment_model(back)->file->vocab, 20);
  SweepOverrides cli;
  cli.vocab = 10;
  EXPECT_EQ(parse_sweep_config(model + "vocab: 20\n", "exp.yaml", cli).experiments.at(0).model_file->vocab,
            10);
  // A language model's record says nothing of a vocab not given.
  const ExperimentConfig lm =
      parse_sweep_config("model: " + save_token_model(dir) + "\nbatch: 1\ninput_kind: tokens\nseq_len: 5\n",
                         "exp.yaml", {})
          .experiments.at(0);
  EXPECT_FALSE(to_json(lm).at("model_file").contains("vocab"));
  // Mistakes: no vocab, one the embedding does not take, a vocab for float values or for the zoo.
  const std::string none = config_error(model);
  EXPECT_NE(none.find("exp.yaml:1"), std::string::npos) << none;
  EXPECT_NE(none.find("give vocab: N"), std::string::npos) << none;
  const std::string large = config_error(model + "vocab: 100\n");
  EXPECT_NE(large.find("exp.yaml:5"), std::string::npos) << large;
  EXPECT_NE(large.find("fails on token id 99"), std::string::npos) << large;
  const std::string as_float =
      config_error("model: " + save_linear(dir) + "\nbatch: 1\ninput: [4]\nvocab: 5\n");
  EXPECT_NE(as_float.find("exp.yaml:4"), std::string::npos) << as_float;
  EXPECT_NE(as_float.find("add input_kind: tokens"), std::string::npos) << as_float;
  const std::string zoo = config_error("model: lstm_lm\nbatch: 1\nvocab: 5\n");
  EXPECT_NE(zoo.find("exp.yaml:3"), std::string::npos) << zoo;
  EXPECT_NE(zoo.find("applies to TorchScript files only"), std::string::npos) << zoo;
  const std::string zero = config_error(model + "vocab: 0\n");
  EXPECT_NE(zero.find("exp.yaml:5"), std::string::npos) << zero;
}

}  // namespace
}  // namespace batchscope
