#pragma once

// Internal to lib/: the words an experiment file and an experiment record use for the config enums.
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/config/config.h"

namespace batchscope {

template <typename E>
using NameTable = std::vector<std::pair<std::string, E>>;
inline const NameTable<Phase> kPhases = {{"train", Phase::Train}, {"infer", Phase::Infer}};
inline const NameTable<Precision> kPrecisions = {
    {"fp32", Precision::FP32}, {"fp16", Precision::FP16}, {"bf16", Precision::BF16}};
inline const NameTable<OptimizerKind> kOptimizers = {{"sgd", OptimizerKind::SGD},
                                                     {"momentum", OptimizerKind::Momentum},
                                                     {"adam", OptimizerKind::Adam},
                                                     {"adamw", OptimizerKind::AdamW}};
inline const NameTable<BatchOrder> kOrders = {{"ascending", BatchOrder::Ascending},
                                              {"shuffled", BatchOrder::Shuffled}};
inline const NameTable<Transfer> kTransfers = {{"excluded", Transfer::Excluded},
                                               {"included", Transfer::Included}};
inline const NameTable<Tf32> kTf32Modes = {{"default", Tf32::Default}, {"on", Tf32::On}, {"off", Tf32::Off}};
inline const NameTable<models::FileInput> kFileInputs = {{"float", models::FileInput::Float},
                                                         {"tokens", models::FileInput::Tokens}};
inline const NameTable<LossScale> kLossScales = {{"dynamic", LossScale::Dynamic}, {"off", LossScale::Off}};
// What an experiment file may say: auto (none) leaves the choice to the precision and phase.
// optimizer foreach: auto (none) steps multi-tensor on a GPU and in a loop on the CPU.
inline const NameTable<std::optional<bool>> kForeachWords = {
    {"auto", std::nullopt}, {"on", true}, {"off", false}};
inline const NameTable<std::optional<LossScale>> kLossScaleWords = {
    {"auto", std::nullopt}, {"dynamic", LossScale::Dynamic}, {"off", LossScale::Off}};

template <typename E>
std::string name_of(const NameTable<E>& table, E value) {
  for (const auto& [text, v] : table)
    if (v == value) return text;
  throw std::logic_error("an enum value has no name");
}

template <typename E>
std::optional<E> value_of(const NameTable<E>& table, const std::string& text) {
  for (const auto& [t, v] : table)
    if (t == text) return v;
  return std::nullopt;
}

template <typename E>
std::vector<std::string> names(const NameTable<E>& table) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.push_back(entry.first);
  return out;
}

}  // namespace batchscope
