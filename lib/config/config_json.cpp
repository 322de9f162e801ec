// The config enums as words, and an experiment as a JSON record and back.
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/config/config_names.h"

namespace batchscope {

std::string to_string(Phase p) { return name_of(kPhases, p); }
std::string to_string(Precision p) { return name_of(kPrecisions, p); }
std::string to_string(OptimizerKind k) { return name_of(kOptimizers, k); }
std::string to_string(BatchOrder o) { return name_of(kOrders, o); }
std::string to_string(Transfer t) { return name_of(kTransfers, t); }
std::string to_string(Tf32 t) { return name_of(kTf32Modes, t); }
std::string to_string(LossScale s) { return name_of(kLossScales, s); }

std::string loss_scaler_words(const LossScalerSettings& s) {
  const LossScalerSettings gradscaler;
  std::ostringstream out;
  const auto add = [&](const char* key, double value, double default_value) {
    if (value == default_value) return;
    if (out.tellp() > 0) out << ", ";
    out << key << " " << std::setprecision(6) << value;  // 1024, 0.25, 1e+06
  };
  add("init_scale", s.init_scale, gradscaler.init_scale);
  add("growth_factor", s.growth_factor, gradscaler.growth_factor);
  add("backoff_factor", s.backoff_factor, gradscaler.backoff_factor);
  add("growth_interval", static_cast<double>(s.growth_interval),
      static_cast<double>(gradscaler.growth_interval));
  return out.str();
}

nlohmann::json loss_scaler_json(const LossScalerSettings& s) {
  return {{"init_scale", s.init_scale},
          {"growth_factor", s.growth_factor},
          {"backoff_factor", s.backoff_factor},
          {"growth_interval", s.growth_interval}};
}

namespace {

// Only the settings the optimizer uses: plain SGD has no momentum, and only Adam and AdamW have betas and
// eps.
nlohmann::json optimizer_json(const OptimizerConfig& o) {
  nlohmann::json j = {{"type", to_string(o.kind)}, {"lr", o.lr}};
  if (o.kind == OptimizerKind::Momentum) j["momentum"] = o.momentum;
  j["weight_decay"] = o.weight_decay;
  if (o.kind == OptimizerKind::Adam || o.kind == OptimizerKind::AdamW) {
    j["betas"] = {o.beta1, o.beta2};
    j["eps"] = o.eps;
  }
  // Only where the step is multi-tensor: every record before it existed ran the loop.
  if (o.foreach.value_or(false)) j["foreach"] = true;
  return j;
}

}  // namespace

nlohmann::json to_json(const ExperimentConfig& e) {
  const OptimizerConfig& o = e.optimizer;
  nlohmann::json to_max = nullptr;
  if (e.batch_to_max) {
    to_max = {
        {"from", e.batch_to_max->from}, {"step", e.batch_to_max->step}, {"factor", e.batch_to_max->factor}};
  }
  nlohmann::json j = {{"name", e.name},
                      {"model", e.model},
                      {"input", e.input_shape},
                      {"classes", e.classes},
                      {"batch", e.batch_sizes},
                      {"batch_to_max", to_max},
                      {"phase", to_string(e.phase)},
                      {"optimizer", optimizer_json(o)},
                      {"precision", to_string(e.precision)},
                      {"channels_last", e.channels_last},
                      {"cudnn_benchmark", e.cudnn_benchmark},
                      {"warmup", e.warmup_steps},
                      {"steps", e.auto_steps ? nlohmann::json("auto") : nlohmann::json(e.timed_steps)},
                      {"order", to_string(e.order)},
                      {"data", e.data},
                      {"transfer", to_string(e.transfer)},
                      {"chunk", e.chunk_auto ? nlohmann::json("auto") : nlohmann::json(e.chunk)},
                      {"seed", e.seed},
                      {"device", e.device}};
  if (e.model_file) {
    j["model_file"] = {{"bytes", e.model_file->bytes}, {"crc32", models::crc32_text(e.model_file->crc32)}};
    // Only for token ids: records of float modules stay as they were.
    if (e.model_file->input != models::FileInput::Float)
      j["model_file"]["input_kind"] = models::to_string(e.model_file->input);
    if (e.model_file->vocab > 0) j["model_file"]["vocab"] = e.model_file->vocab;
    // What batchscope gives the forward after the input (an attention mask's ones, say), where it takes more.
    for (const models::FilledArgument& a : e.model_file->arguments)
      j["model_file"]["arguments"].push_back({{"name", a.name}, {"given", a.given}});
  }
  // Written only where asked for, so that records of runs without profiling stay as they were.
  if (e.profile) {
    j["profile"] = true;
    j["profile_steps"] = e.profile_steps;
  }
  if (e.repeats > 1) j["repeats"] = e.repeats;
  // Likewise only where set: LibTorch's default is what records without it ran with.
  if (e.tf32 != Tf32::Default) j["tf32"] = to_string(e.tf32);
  // Only where the loss is scaled: records without it (and every record before it existed) ran unscaled.
  if (e.loss_scale != LossScale::Off) {
    j["loss_scale"] = to_string(e.loss_scale);
    j["loss_scaler"] = loss_scaler_json(e.loss_scaler);
  }
  if (e.auto_steps) {
    j["auto_steps"] = {{"ci_width", e.auto_steps->ci_width},
                       {"min_time_s", e.auto_steps->min_time_s},
                       {"max_time_s", e.auto_steps->max_time_s},
                       {"first_steps", e.timed_steps}};
  }
  return j;
}

ExperimentConfig experiment_from_json(const nlohmann::json& j) {
  const auto enum_at = [](const nlohmann::json& obj, const char* key, const auto& table) {
    const std::string text = obj.at(key).template get<std::string>();
    const auto value = value_of(table, text);
    if (!value)
      throw std::invalid_argument(std::string("the experiment record has an unknown ") + key + " " + text);
    return *value;
  };
  try {
    ExperimentConfig e;
    e.name = j.at("name").get<std::string>();
    e.model = j.at("model").get<std::string>();
    if (j.contains("model_file")) {
      const nlohmann::json& f = j["model_file"];
      const std::optional<uint32_t> crc = models::crc32_from_text(f.at("crc32").get<std::string>());
      if (!crc) throw std::invalid_argument("the experiment record's model_file crc32 is not 8 hex digits");
      e.model_file = models::ModelFile{};
      e.model_file->path = e.model;
      e.model_file->bytes = f.at("bytes").get<uint64_t>();
      e.model_file->crc32 = *crc;
      const auto input = value_of(kFileInputs, f.value("input_kind", std::string("float")));
      if (!input)
        throw std::invalid_argument(
            "the experiment record's model_file input_kind is neither float nor tokens");
      e.model_file->input = *input;
      e.model_file->vocab = f.value("vocab", int64_t{0});
      if (e.model_file->vocab < 0)
        throw std::invalid_argument("the experiment record's model_file vocab is negative");
      for (const nlohmann::json& a : f.value("arguments", nlohmann::json::array())) {
        e.model_file->arguments.push_back(
            {a.at("name").get<std::string>(), a.at("given").get<std::string>()});
        if (e.model_file->arguments.back().name.empty())
          throw std::invalid_argument("the experiment record's model_file names an argument without a name");
      }
    }
    e.input_shape = j.at("input").get<std::vector<int64_t>>();
    e.classes = j.at("classes").get<int64_t>();
    e.batch_sizes = j.at("batch").get<std::vector<int64_t>>();
    if (j.contains("batch_to_max") && !j["batch_to_max"].is_null()) {
      const nlohmann::json& m = j["batch_to_max"];
      e.batch_to_max =
          BatchToMax{m.at("from").get<int64_t>(), m.at("step").get<int64_t>(), m.at("factor").get<double>()};
    }
    e.phase = enum_at(j, "phase", kPhases);
    const nlohmann::json& o = j.at("optimizer");
    e.optimizer.kind = enum_at(o, "type", kOptimizers);
    e.optimizer.lr = o.at("lr").get<double>();
    // Records written before only the used settings were kept have all of them; either reads back.
    const OptimizerConfig defaults;
    e.optimizer.momentum = o.value("momentum", defaults.momentum);
    e.optimizer.weight_decay = o.value("weight_decay", defaults.weight_decay);
    const auto betas = o.value("betas", std::vector<double>{defaults.beta1, defaults.beta2});
    if (betas.size() != 2)
      throw std::invalid_argument("the experiment record's optimizer betas are not two numbers");
    e.optimizer.beta1 = betas[0];
    e.optimizer.beta2 = betas[1];
    e.optimizer.eps = o.value("eps", defaults.eps);
    e.optimizer.foreach = o.value("foreach", false);
    e.precision = enum_at(j, "precision", kPrecisions);
    e.channels_last = j.at("channels_last").get<bool>();
    e.cudnn_benchmark = j.at("cudnn_benchmark").get<bool>();
    e.warmup_steps = j.at("warmup").get<int>();
    if (j.at("steps").is_string() && j.at("steps").get<std::string>() == "auto") {
      const nlohmann::json& a = j.at("auto_steps");
      e.auto_steps = AutoSteps{a.at("ci_width").get<double>(), a.at("min_time_s").get<double>(),
                               a.at("max_time_s").get<double>()};
      e.timed_steps = a.at("first_steps").get<int>();
    } else {
      e.timed_steps = j.at("steps").get<int>();
    }
    e.order = enum_at(j, "order", kOrders);
    e.data = j.at("data").get<std::string>();
    // Logs written before transfer and chunk existed ran with the defaults.
    if (j.contains("transfer")) e.transfer = enum_at(j, "transfer", kTransfers);
    if (j.contains("chunk") && j.at("chunk") == "auto") {
      e.chunk_auto = true;
    } else if (j.contains("chunk")) {
      e.chunk = j.at("chunk").get<int64_t>();
    }
    if (j.contains("tf32")) e.tf32 = enum_at(j, "tf32", kTf32Modes);
    if (j.contains("loss_scale")) e.loss_scale = enum_at(j, "loss_scale", kLossScales);
    // Records written before the scaler's settings could be given ran with GradScaler's defaults.
    if (j.contains("loss_scaler")) {
      const nlohmann::json& s = j["loss_scaler"];
      const LossScalerSettings defaults;
      e.loss_scaler = {s.value("init_scale", defaults.init_scale),
                       s.value("growth_factor", defaults.growth_factor),
                       s.value("backoff_factor", defaults.backoff_factor),
                       s.value("growth_interval", defaults.growth_interval)};
    }
    e.seed = j.at("seed").get<uint64_t>();
    e.device = j.at("device").get<std::string>();
    e.profile = j.value("profile", false);
    e.profile_steps = j.value("profile_steps", e.profile_steps);
    e.repeats = j.value("repeats", e.repeats);
    return e;
  } catch (const nlohmann::json::exception& error) {
    throw std::invalid_argument(std::string("the experiment record is incomplete or malformed (") +
                                error.what() + ")");
  }
}

}  // namespace batchscope
