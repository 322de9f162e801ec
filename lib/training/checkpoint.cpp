#include <ATen/Context.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>

#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/common/limits.h"
#include "lib/common/words.h"
#include "lib/config/config_names.h"
#include "lib/timing/step_runner.h"
#include "lib/training/training_parts.h"
#include "models/registry.h"

// Checkpoint files: the weights of each epoch, the latest, checkpoint.json that says how to rebuild the
// model, and the state a run goes on from; each written beside and renamed into place.

namespace fs = std::filesystem;

namespace batchscope {
namespace training_parts {
namespace {

// Renames a file written beside into place, its data on the disk first and the rename after it: a reader
// sees the old file or the new one, never half of one, and after a crash of the machine the name holds
// the whole of one of them (the epoch record that names it is synced after).
void put_in_place(const fs::path& partial, const fs::path& path) {
  sync_file(partial.string());
  fs::rename(partial, path);
  sync_directory(path.parent_path().string());
}

void save_weights(torch::nn::Module& model, const fs::path& path) {
  const fs::path partial = path.string() + ".partial";
  torch::serialize::OutputArchive archive;
  model.save(archive);
  archive.save_to(partial.string());
  put_in_place(partial, path);
}

void write_text(const fs::path& path, const std::string& text) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial);
    out << text;
    if (!out)
      throw UserError(located(partial.string(), 0, "cannot be written", "check the disk and permissions"));
  }
  put_in_place(partial, path);
}

at::Generator default_generator(const torch::Device& device) {
  return at::globalContext().defaultGenerator(device);
}

torch::Tensor generator_state(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

GeneratorStates capture_generators(const TrainerState& state) {
  GeneratorStates g;
  g.cpu = generator_state(default_generator(torch::kCPU));
  if (state.device.is_cuda()) g.device = generator_state(default_generator(state.device));
  if (state.masks) g.masks = generator_state(*state.masks);
  return g;
}

void restore_generators(const TrainerState& state, const GeneratorStates& g) {
  set_generator_state(default_generator(torch::kCPU), g.cpu);
  if (state.device.is_cuda()) set_generator_state(default_generator(state.device), g.device);
  if (state.masks) set_generator_state(*state.masks, g.masks);
}

KeptGenerators::KeptGenerators(const TrainerState& state) : state_(state), kept_(capture_generators(state)) {}

KeptGenerators::~KeptGenerators() { restore_generators(state_, kept_); }

std::string resume_state_name(int epoch) { return "resume_epoch" + std::to_string(epoch) + ".pt"; }

std::string write_resume_state(const std::string& dir, int epoch, const TrainerState& state) {
  torch::serialize::OutputArchive archive;
  // The optimizer's own archive as bytes, so that reading puts its tensors on the device and the
  // generators' states stay on the host.
  torch::serialize::OutputArchive optimizer;
  state.optimizer->save(optimizer);
  std::ostringstream bytes;
  optimizer.save_to(bytes);
  const std::string text = bytes.str();
  torch::Tensor packed = torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::memcpy(packed.data_ptr(), text.data(), text.size());
  archive.write("optimizer", packed);
  archive.write("epoch", torch::tensor(static_cast<int64_t>(epoch)));
  const GeneratorStates generators = capture_generators(state);
  archive.write("cpu_generator", generators.cpu);
  if (generators.device.defined()) archive.write("device_generator", generators.device);
  if (generators.masks.defined()) archive.write("mask_generator", generators.masks);
  if (state.scaler != nullptr) {
    const LossScaler::State scaler = state.scaler->save();
    archive.write("loss_scale", scaler.scale.cpu());
    archive.write("loss_scale_growth_tracker", scaler.growth_tracker.cpu());
  }
  const fs::path path = fs::path(dir) / resume_state_name(epoch);
  const fs::path partial = path.string() + ".partial";
  archive.save_to(partial.string());
  put_in_place(partial, path);
  return path.string();
}

void read_resume_state(const std::string& path, const TrainerState& state) {
  const auto refuse = [&](const std::string& problem) {
    throw UserError(located(path, 0, problem, "pass --force to train again from the first epoch"));
  };
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) refuse("is missing, so the run cannot go on from its last epoch");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::Tensor packed;
    GeneratorStates generators;
    LossScaler::State scaler;
    archive.read("optimizer", packed);
    archive.read("cpu_generator", generators.cpu);
    if (state.device.is_cuda()) archive.read("device_generator", generators.device);
    if (state.masks) archive.read("mask_generator", generators.masks);
    if (state.scaler != nullptr) {
      archive.read("loss_scale", scaler.scale);
      archive.read("loss_scale_growth_tracker", scaler.growth_tracker);
      if (scaler.scale.numel() != 1 || scaler.growth_tracker.numel() != 1) refuse("holds no loss scale");
    }
    if (packed.scalar_type() != torch::kUInt8 || packed.dim() != 1) refuse("holds no optimizer state");
    const std::string text(static_cast<const char*>(packed.data_ptr()),
                           static_cast<std::size_t>(packed.numel()));
    std::istringstream bytes(text);
    torch::serialize::InputArchive optimizer;
    optimizer.load_from(bytes, state.device);
    state.optimizer->load(optimizer);
    restore_generators(state, generators);
    if (state.scaler != nullptr) state.scaler->restore(scaler);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& bad) {
    refuse("is not a readable resume state (" + printable(short_error_message(bad)) + ")");
  }
}

void load_weights(models::Network& model, const std::string& path, const std::string& model_name,
                  const torch::Device& device) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, device);
    model.load(archive);
  } catch (const std::exception& bad) {
    throw UserError(located(
        path, 0,
        "is not a readable " + model_name + " checkpoint (" + printable(short_error_message(bad)) + ")",
        "train again or give another checkpoint"));
  }
}

// checkpoint_epochN.pt, then checkpoint.pt and checkpoint.json for the latest; returns the first.
std::string write_checkpoint(torch::nn::Module& model, const std::string& dir, int epoch, Json info) {
  const fs::path weights = fs::path(dir) / ("checkpoint_epoch" + std::to_string(epoch) + ".pt");
  save_weights(model, weights);
  const fs::path latest = fs::path(dir) / kLatestWeights;
  const fs::path latest_partial = latest.string() + ".partial";
  fs::copy_file(weights, latest_partial, fs::copy_options::overwrite_existing);
  fs::rename(latest_partial, latest);
  info["epoch"] = epoch;
  info["weights"] = kLatestWeights;
  write_text(fs::path(dir) / kCheckpointInfo, info.dump(2) + "\n");
  return weights.string();
}

}  // namespace training_parts

using namespace training_parts;

namespace {

// The batchscope version that the run record beside a checkpoint names ("0.2.0"); empty where there is
// no readable one.
std::string trained_by(const fs::path& checkpoint_info) {
  std::ifstream log(checkpoint_info.parent_path() / kJsonlName);
  std::string first;
  if (!std::getline(log, first)) return "";
  const Json run = Json::parse(first, nullptr, /*allow_exceptions=*/false);
  return run.is_object() && run.contains("batchscope_version") && run["batchscope_version"].is_string()
             ? run["batchscope_version"].get<std::string>()
             : "";
}

// A checkpoint of a model this build lacks: an edited name (the nearest model offered), or a model of
// another batchscope (the one that trained it named, where its run record says).
[[noreturn]] void refuse_unknown_model(const std::string& path, const std::string& model) {
  std::vector<std::string> known;
  for (const models::ModelSpec& spec : models::all_models()) known.push_back(spec.name);
  const std::string meant = meant_word(model, known, {});
  const std::string version = trained_by(path), ours = BATCHSCOPE_VERSION;
  std::string problem = "names the model \"" + model + "\", which this batchscope (" + ours + ") lacks";
  if (!version.empty() && version != ours) problem += "; batchscope " + version + " trained it";
  const std::string fix =
      !meant.empty() ? "did you mean " + meant + "? restore the checkpoint.json that batchscope train wrote"
      : !version.empty() && version != ours
          ? "evaluate it with batchscope " + version + ", or train again with one of " +
                models::known_model_names()
          : "evaluate it with the batchscope that trained it, or restore the checkpoint.json it wrote";
  throw UserError(located(path, 0, printable(problem), printable(fix)));
}

}  // namespace

CheckpointInfo read_checkpoint_info(const std::string& path) {
  std::ifstream info_file(path);
  if (!info_file) {
    throw UserError(
        located(path, 0, "is missing, so the model cannot be rebuilt",
                "give a directory written by batchscope train, with checkpoint.json beside the weights"));
  }
  // Every field is checked for its type and range, as a configuration is: the file may be damaged.
  const auto refuse = [&](const std::string& problem) -> void {
    throw UserError(located(path, 0, printable(problem),
                            "train again, or restore the checkpoint.json that batchscope train wrote"));
  };
  Json json;
  const std::string content((std::istreambuf_iterator<char>(info_file)), std::istreambuf_iterator<char>());
  try {
    json = Json::parse(content);
  } catch (const nlohmann::json::parse_error& bad) {
    // Where it breaks, as a line of the file.
    const std::size_t at = std::min<std::size_t>(bad.byte == 0 ? 0 : bad.byte - 1, content.size());
    const int line = 1 + static_cast<int>(std::count(
                             content.begin(), content.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    throw UserError(located(path, line, "is not JSON: it breaks on this line (damaged or cut short)",
                            "train again, or restore the checkpoint.json that batchscope train wrote"));
  } catch (const nlohmann::json::exception& bad) {
    refuse(std::string("is not JSON that batchscope can read (") + bad.what() + ")");
  }
  if (!json.is_object()) refuse("is not a checkpoint description (not a JSON object)");
  const auto text = [&](const Json& j, const std::string& key) {
    if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
      refuse("has no text field \"" + key + "\"");
    return j[key].get<std::string>();
  };
  CheckpointInfo info;
  info.model = text(json, "model");
  const models::ModelSpec* spec = models::find_model(info.model);
  // A TorchScript file given by a relative path, read from another directory: where it was.
  if (spec == nullptr && models::is_model_file_name(info.model) && json.contains("model_file") &&
      json["model_file"].is_object() && json["model_file"].contains("path") &&
      json["model_file"]["path"].is_string()) {
    const std::string where = json["model_file"]["path"].get<std::string>();
    if (const models::ModelSpec* found = models::find_model(where)) {
      spec = found;
      info.model = where;
    }
  }
  if (spec == nullptr) {
    if (models::is_model_file_name(info.model)) {
      throw UserError(located(path, 0,
                              printable("names the model file " + info.model + ", which cannot be read now"),
                              "restore the TorchScript file it was trained from"));
    }
    refuse_unknown_model(path, info.model);
  }
  // A TorchScript file rebuilds the module its weights are loaded into: its code must be the trained one's.
  if (json.contains("model_file") && spec->file) {
    const Json& f = json["model_file"];
    const std::optional<uint32_t> crc = f.is_object() && f.contains("crc32") && f["crc32"].is_string()
                                            ? models::crc32_from_text(f["crc32"].get<std::string>())
                                            : std::nullopt;
    if (!crc || !f.contains("bytes") || !f["bytes"].is_number_unsigned())
      refuse("has a model_file that is not {bytes, crc32} of 8 hex digits");
    if (*crc != spec->file->crc32 || f["bytes"].get<uint64_t>() != spec->file->bytes) {
      throw UserError(
          located(path, 0,
                  printable("was trained from " + info.model + " of crc32 " + models::crc32_text(*crc) +
                            ", and the file is now of crc32 " + models::crc32_text(spec->file->crc32)),
                  "restore the TorchScript file it was trained from, or train again"));
    }
  }
  if (!json.contains("data") || !json["data"].is_object()) refuse("has no \"data\" object");
  info.data_dir = text(json["data"], "directory");
  // Every checkpoint written names its dataset; one without a name is of MNIST's shape, as all were once.
  if (json["data"].contains("name")) {
    info.data_name = text(json["data"], "name");
    if (!data::is_dataset_name(info.data_name))
      refuse("names a dataset \"" + info.data_name + "\" that is none of " + data::dataset_names());
  }
  if (json.contains("limit_test") && !json["limit_test"].is_null()) {
    const Json& l = json["limit_test"];
    if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() > 100000000)
      refuse("has a limit_test that is not a whole number from 0 to 100000000");
    info.limit_test = l.get<int64_t>();
  }
  if (json.contains("eval_batch_size")) {
    const Json& b = json["eval_batch_size"];
    if (!b.is_number_integer() || b.get<int64_t>() < 1 || b.get<int64_t>() > limits::kMaxBatchSize)
      refuse("has an eval_batch_size that is not a whole number from 1 to " +
             std::to_string(limits::kMaxBatchSize));
    info.eval_batch_size = b.get<int64_t>();
  }
  if (json.contains("tf32")) {
    const Json& t = json["tf32"];
    if (!t.is_string() || (t != "off" && t != "default"))
      refuse("has a tf32 that is neither \"off\" nor \"default\"");
    info.tf32_off = t == "off";
  }
  // Written only where the weights were trained under autocast.
  if (json.contains("precision")) {
    const Json& p = json["precision"];
    const auto precision = p.is_string() ? value_of(kPrecisions, p.get<std::string>()) : std::nullopt;
    if (!precision) refuse("has a precision that is not fp32, fp16 or bf16");
    info.precision = *precision;
  }
  // Written only where the run trained NHWC.
  if (json.contains("memory_format")) {
    const Json& m = json["memory_format"];
    if (!m.is_string() || (m != "channels_last" && m != "contiguous"))
      refuse("has a memory_format that is neither \"channels_last\" nor \"contiguous\"");
    info.channels_last = m == "channels_last";
  }
  info.weights = kLatestWeights;
  if (json.contains("weights")) {
    info.weights = text(json, "weights");
    // A file beside checkpoint.json, never a path that leads elsewhere.
    if (info.weights.find('/') != std::string::npos || info.weights == "." || info.weights == "..")
      refuse("names weights \"" + info.weights + "\" outside its directory");
  }
  return info;
}

}  // namespace batchscope
