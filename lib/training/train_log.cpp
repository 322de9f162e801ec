#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "data/augment.h"
#include "lib/common/errors.h"
#include "lib/records/jsonl.h"
#include "lib/records/records.h"
#include "lib/training/noise_scale.h"
#include "lib/training/training_parts.h"

// train.jsonl: a run's epoch records as written and as read back, and what an earlier session left in the
// output directory, which a run goes on from or is refused by.
namespace batchscope::training_parts {

namespace fs = std::filesystem;

// "checkpoint*.pt", "resume_epochN.pt" and their ".partial" copies: the files a training run writes.
bool written_by_training(const fs::path& file) {
  std::string name = file.filename().string();
  const std::string partial = ".partial";
  if (name.size() > partial.size() &&
      name.compare(name.size() - partial.size(), partial.size(), partial) == 0)
    name.resize(name.size() - partial.size());
  const bool weights = fs::path(name).extension() == ".pt" &&
                       (name.rfind("checkpoint", 0) == 0 || name.rfind("resume_epoch", 0) == 0);
  return weights || name == kJsonlName || name == kCheckpointInfo;
}

namespace {

// The fields of one object of a record, checked as they are read: BadRecord names what is missing or of
// another type.
struct Fields {
  const Json& j;
  double number(const char* key) const {
    if (!j.contains(key) || !j[key].is_number() || !std::isfinite(j[key].get<double>()))
      throw BadRecord(std::string("has no number \"") + key + "\"");
    return j[key].get<double>();
  }
  int64_t whole(const char* key) const {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0)
      throw BadRecord(std::string("has no whole number \"") + key + "\"");
    return j[key].get<int64_t>();
  }
  // A loss that was not finite (a diverged run's) is written as null, JSON having no NaN.
  double loss(const char* key) const {
    if (j.contains(key) && j[key].is_null()) return std::numeric_limits<double>::quiet_NaN();
    return number(key);
  }
  // The test split's numbers, as add_test writes them.
  Evaluation test() const {
    return {loss("test_loss"), number("test_accuracy"), whole("test_correct"), whole("test_samples")};
  }
};

// An evaluation's numbers in a record: the epoch's, and each evaluation's within it.
void add_test(Json& j, const Evaluation& test) {
  j["test_loss"] = test.loss;
  j["test_accuracy"] = test.accuracy;
  j["test_correct"] = test.correct;
  j["test_samples"] = test.samples;
}

// An epoch record as train_on wrote it, its checkpoint a path in dir; BadRecord where a field is missing
// or of another type.
EpochResult epoch_from_json(const Json& r, const fs::path& dir) {
  const Fields fields{r};
  EpochResult e;
  e.epoch = static_cast<int>(std::min<int64_t>(fields.whole("epoch"), 1000000));
  e.train_loss = fields.loss("train_loss");
  e.train_accuracy = fields.number("train_accuracy");
  e.test = fields.test();
  e.epoch_seconds = fields.number("epoch_seconds");
  e.samples_per_s = fields.number("samples_per_s");
  // Written only where the loss was scaled.
  if (r.contains("skipped_steps")) e.skipped_steps = fields.whole("skipped_steps");
  if (r.contains("loss_scale")) e.loss_scale = fields.number("loss_scale");
  if (r.contains("lr")) e.lr = fields.number("lr");  // written only where a schedule moves the rate
  if (r.contains("weights_finite")) {                // written only where they were not
    if (!r["weights_finite"].is_boolean())
      throw BadRecord("has \"weights_finite\" that is not true or false");
    e.weights_finite = r["weights_finite"].get<bool>();
  }
  if (r.contains("noise_scale")) e.noise_scale = noise_scale_from_json(r["noise_scale"]);
  if (r.contains("peak_memory_bytes")) e.peak_memory_bytes = fields.whole("peak_memory_bytes");
  if (r.contains("energy_j")) e.energy_j = fields.number("energy_j");  // written only where measured
  if (r.contains("idle_power_w")) e.idle_power_w = fields.number("idle_power_w");  // and with a baseline
  if (r.contains("evaluations")) {  // written only with eval_every
    if (!r["evaluations"].is_array()) throw BadRecord("has \"evaluations\" that are not a list");
    for (const Json& one : r["evaluations"]) {
      if (!one.is_object()) throw BadRecord("has an evaluation that is not an object");
      StepEvaluation step;
      try {
        const Fields evaluation{one};
        step = {evaluation.whole("step"), evaluation.number("training_seconds"), evaluation.test(),
                std::nullopt};
        if (one.contains("training_joules")) step.training_joules = evaluation.number("training_joules");
      } catch (const BadRecord& bad) {
        throw BadRecord(std::string("has an evaluation that ") + bad.what());
      }
      if (step.step < 1 || (!e.evaluations.empty() && step.step <= e.evaluations.back().step))
        throw BadRecord("has evaluations whose steps do not rise from 1");
      e.evaluations.push_back(step);
    }
  }
  // The weights a run goes on from are the epoch's own file, the one train_on wrote, never another.
  const std::string name = "checkpoint_epoch" + std::to_string(e.epoch) + ".pt";
  if (!r.contains("checkpoint") || r["checkpoint"] != name)
    throw BadRecord("does not name its epoch's checkpoint \"" + name + "\"");
  e.checkpoint = (dir / name).string();
  return e;
}

// The first of the epochs whose test accuracy reached the options' target; none without a target.
std::optional<int> first_epoch_reaching_target(const TrainingOptions& o,
                                               const std::vector<EpochResult>& epochs) {
  if (!o.target_accuracy) return std::nullopt;
  const std::optional<TargetReached> reached = first_reaching(*o.target_accuracy, epochs);
  return reached ? std::optional<int>(reached->epoch) : std::nullopt;
}

// True where a run record's config decays its rate along a cosine, whose rate at each step depends on the
// epochs it ends at: another count is another run.
bool decays_along_a_cosine(const Json& config) {
  const Json schedule = config.value("lr_schedule", Json());
  return schedule.is_object() && schedule.value("decay", Json()) == "cosine";
}

// The --augment word of a run record's config: its "augment" object's, "none" without one.
std::string augment_word(const Json& config) {
  const Json augment = config.value("augment", Json());
  if (!augment.is_object()) return "none";
  const Json padding = augment.value("crop_padding", Json(0)), flip = augment.value("flip", Json(false));
  return data::to_string(
      {padding.is_number_integer() ? padding.get<int64_t>() : 0, flip.is_boolean() && flip.get<bool>()});
}

}  // namespace

Json epoch_record(const EpochResult& r) {
  Json j = {{"type", record::kEpoch},
            {"epoch", r.epoch},
            {"train_loss", r.train_loss},
            {"train_accuracy", r.train_accuracy}};
  add_test(j, r.test);
  j["epoch_seconds"] = r.epoch_seconds;
  j["samples_per_s"] = r.samples_per_s;
  j["checkpoint"] = fs::path(r.checkpoint).filename().string();
  if (r.skipped_steps) j["skipped_steps"] = *r.skipped_steps;
  if (r.loss_scale) j["loss_scale"] = *r.loss_scale;
  if (r.lr) j["lr"] = *r.lr;
  if (!r.weights_finite) j["weights_finite"] = false;
  if (r.noise_scale) j["noise_scale"] = to_json(*r.noise_scale);
  if (r.peak_memory_bytes) j["peak_memory_bytes"] = *r.peak_memory_bytes;
  if (r.energy_j) j["energy_j"] = *r.energy_j;
  if (r.energy_j && r.idle_power_w) {
    j["idle_power_w"] = *r.idle_power_w;
    j["energy_above_idle_j"] = *r.energy_above_idle_j();
  }
  if (!r.evaluations.empty()) {
    Json evaluations = Json::array();
    for (const StepEvaluation& e : r.evaluations) {
      Json one = {{"step", e.step}, {"training_seconds", e.training_seconds}};
      if (e.training_joules) one["training_joules"] = *e.training_joules;
      add_test(one, e.test);
      evaluations.push_back(one);
    }
    j["evaluations"] = evaluations;
  }
  return j;
}

EarlierRun read_earlier_run(const std::string& dir) {
  EarlierRun earlier;
  const fs::path jsonl = fs::path(dir) / kJsonlName;
  std::error_code ec;
  if (!fs::exists(jsonl, ec) || fs::file_size(jsonl, ec) == 0) return earlier;
  earlier.jsonl = jsonl.string();
  const JsonlContents contents = read_jsonl(earlier.jsonl);
  earlier.complete_bytes = contents.complete_bytes;
  earlier.truncated_tail = contents.truncated_tail;
  if (contents.records.empty() || contents.records.front().value("type", "") != record::kRun) {
    throw UserError(located(earlier.jsonl, 1, "does not start with a batchscope run record",
                            "choose another --out directory or pass --force to replace it"));
  }
  earlier.run = contents.records.front();
  if (!earlier.run.contains("config") || !earlier.run["config"].is_object()) {
    throw UserError(located(earlier.jsonl, 1, "is damaged: its run record has no \"config\" object",
                            "choose another --out directory or pass --force to replace it"));
  }
  earlier.config = earlier.run["config"];
  earlier.memory_limits = earlier.run.value("memory_limit_bytes", Json());
  earlier.state = EarlierRun::State::Interrupted;
  for (std::size_t i = 1; i < contents.records.size(); ++i) {
    const Json& r = contents.records[i];
    const int line = contents.record_lines[i];
    const std::string type = r["type"].get<std::string>();
    const auto damaged = [&](const std::string& problem) {
      throw UserError(located(earlier.jsonl, line, "is damaged: " + problem,
                              "repair or remove that line, or pass --force to train again from the start"));
    };
    if (type == record::kResume) {
      // A later session's options: the same, or (after an end record) more epochs.
      if (!r.contains("config") || !r["config"].is_object())
        damaged("its resume record has no \"config\" object");
      earlier.config = r["config"];
      earlier.config_line = line;
      earlier.memory_limits = r.value("memory_limit_bytes", Json());
      earlier.state = EarlierRun::State::Interrupted;
      continue;
    }
    if (earlier.state == EarlierRun::State::Complete)
      damaged("a record other than resume follows the end record");
    if (type == record::kEnd) {
      earlier.state = EarlierRun::State::Complete;
    } else if (type == record::kEpoch) {
      try {
        earlier.epochs.push_back(epoch_from_json(r, dir));
      } catch (const BadRecord& bad) {
        damaged(std::string("the epoch record ") + bad.what());
      }
      if (earlier.epochs.back().epoch != static_cast<int>(earlier.epochs.size()))
        damaged("it records epoch " + std::to_string(earlier.epochs.back().epoch) + " where epoch " +
                std::to_string(earlier.epochs.size()) + " comes next");
    } else {
      damaged("it holds a \"" + printable(type) + "\" record, which train does not write");
    }
  }
  return earlier;
}

bool serves_other_epochs(const EarlierRun& earlier, const TrainingOptions& o) {
  // A diverged run is complete whatever count follows: its weights are not numbers.
  if (batchscope::diverged_epoch(earlier.epochs)) return false;
  if (decays_along_a_cosine(earlier.config)) return false;
  if (earlier.state == EarlierRun::State::None || !earlier.config.contains("epochs") ||
      !earlier.config["epochs"].is_number_integer() || earlier.config["epochs"].get<int64_t>() == o.epochs)
    return false;
  const auto done = static_cast<int64_t>(earlier.epochs.size());
  if (earlier.state == EarlierRun::State::Interrupted) return o.epochs >= done;
  const std::optional<int> reached = first_epoch_reaching_target(o, earlier.epochs);
  return reached ? o.epochs >= *reached : o.epochs > done;
}

bool goes_on_with_other_epochs(const EarlierRun& earlier, const TrainingOptions& o) {
  return serves_other_epochs(earlier, o) &&
         !(earlier.state == EarlierRun::State::Complete && first_epoch_reaching_target(o, earlier.epochs));
}

void check_output_dir(const TrainingOptions& o) {
  if (o.force) return;
  // Files of a run's names with no log of a run: not this tool's, or the only copy left of a run whose
  // log was removed. A new run would remove them.
  std::error_code ec;
  const fs::path log = fs::path(o.out_dir) / kJsonlName;
  if (!fs::exists(log, ec) || fs::file_size(log, ec) == 0) {
    for (fs::directory_iterator it(o.out_dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().filename() == kJsonlName || !written_by_training(it->path())) continue;
      throw UserError(
          located(it->path().string(), 0,
                  "is in the output directory, and no training log (train.jsonl) says a run wrote "
                  "it, so a new run would remove it",
                  "move it away, choose another --out directory, or pass --force to replace it"));
    }
  }
  const EarlierRun earlier = read_earlier_run(o.out_dir);
  if (earlier.state == EarlierRun::State::Complete && !o.reuse_complete &&
      !goes_on_with_other_epochs(earlier, o)) {
    const Json epochs = earlier.config.value("epochs", Json());
    const std::optional<int> diverged = batchscope::diverged_epoch(earlier.epochs);
    std::string why;
    if (diverged) {
      why = ", which diverged in epoch " + std::to_string(*diverged) + " (" +
            divergence_cause(earlier.epochs) + ", so no epoch can follow)";
    } else if (decays_along_a_cosine(earlier.config) && epochs.is_number_integer() &&
               epochs.get<int64_t>() != o.epochs) {
      why = " whose cosine schedule ends at epoch " + epochs.dump() +
            " (its rates depend on the count, so other --epochs are another run)";
    }
    throw UserError(located(earlier.jsonl, 0, "already holds a complete training run" + why,
                            "choose another --out directory or pass --force to train again and replace it"));
  }
}

// Refuses an earlier session's run whose options are not `config`'s, naming the first difference; its
// epoch count may differ where o goes on with it.
void check_same_options(const EarlierRun& earlier, const TrainingOptions& o, const Json& config) {
  const bool complete = earlier.state == EarlierRun::State::Complete;
  if (!complete && earlier.epochs.empty()) return;  // nothing of it is kept
  Json before = earlier.config;
  Json now = config;
  if (serves_other_epochs(earlier, o)) {
    before.erase("epochs");
    now.erase("epochs");
  }
  std::string difference = first_key_difference(before, now);
  if (difference.empty()) return;
  std::string fix = complete ? "" : "give the options it began with to go on with it, ";
  // Another count of epochs refused only because a cosine's rates depend on it.
  if (difference.rfind("epochs ", 0) == 0 && decays_along_a_cosine(before))
    difference += ": its cosine schedule's rates depend on the count";
  // Said in --augment's words, which the run record's object and its absence stand for.
  if (before.value("augment", Json()) != now.value("augment", Json())) {
    const std::string began = augment_word(before);
    difference = "augment was " + began + " there and is " + augment_word(now) + " here";
    fix = "give --augment " + began + " to go on with it, ";
  }
  // Said in --chunk's words: the record has a chunk only where the batch accumulated.
  if (before.value("chunk", Json()) != now.value("chunk", Json())) {
    const auto way = [&](const Json& c) {
      return c.is_number_integer() ? "in micro-batches of " + c.dump() : std::string("whole");
    };
    const Json began = before.value("chunk", Json());
    difference =
        "each batch ran " + way(began) + " there and runs " + way(now.value("chunk", Json())) + " here";
    fix = "give --chunk " + (began.is_number_integer() ? began.dump() : std::string("0")) +
          " to go on with it, ";
  }
  throw UserError(located(earlier.jsonl, earlier.config_line,
                          std::string(complete ? "holds a complete" : "holds an interrupted") +
                              " training run of other options (" + difference + ")",
                          fix + "pass --force to replace it, or choose another --out directory"));
}

// Whether a run of these options goes on from what an earlier session left: its epochs, or a complete run.
bool goes_on_from(const EarlierRun& earlier) {
  return earlier.state == EarlierRun::State::Complete || !earlier.epochs.empty();
}

// --chunk auto where an earlier session's run goes on: its chunk (the record has one only where the batch
// accumulated), so that it goes on as it began.
TrainingOptions with_earlier_chunk(const TrainingOptions& options, const EarlierRun& earlier) {
  TrainingOptions o = options;
  if (o.chunk_auto && goes_on_from(earlier)) {
    const Json chunk = earlier.config.value("chunk", Json());
    o.chunk = chunk.is_number_integer() ? chunk.get<int64_t>() : 0;
  }
  return o;
}

}  // namespace batchscope::training_parts
