#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchscope::models {

// What the forward of a TorchScript file takes: a float tensor [batch, ...input] whose output is
// [batch, classes] logits, or token ids [batch, sequence] (int64) whose output is [batch, positions,
// vocabulary] logits, one per position (a language model), or [batch, classes] logits, one per sequence
// (a sequence classifier).
enum class FileInput { Float, Tokens };

// A forward argument after the input, and what batchscope gives it: "ones", "zeros", "positions" (each
// row's 0, 1, ...), or "its default (None)". It follows from the file's code.
struct FilledArgument {
  std::string name;
  std::string given;
  bool operator==(const FilledArgument& o) const { return name == o.name && given == o.given; }
};

// A model given as a TorchScript file (torch.jit.script or torch.jit.trace, then save) instead of a zoo
// name: the path as given, and the file's size and CRC-32 when it was read, so that records say which
// weights and code ran and a resumed sweep can tell a changed file; and what its forward takes.
struct ModelFile {
  std::string path;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  FileInput input = FileInput::Float;
  // FileInput::Tokens: the synthetic token ids lie below it (the vocab key); 0 where not given, when they
  // lie below the output's last size, a language model's vocabulary. A sequence classifier needs it.
  int64_t vocab = 0;
  // The forward's arguments after the input, up to its last required one, as they are given.
  std::vector<FilledArgument> arguments;
};

// A CRC-32 as records write it, 8 lower-case hex digits, and back; nullopt for any other text.
std::string crc32_text(uint32_t crc);
std::optional<uint32_t> crc32_from_text(const std::string& text);

// "float", "tokens": the words of the input_kind key.
const char* to_string(FileInput input);

// Whether a model name is a file's path rather than a zoo name: it holds a '/' or ends in .pt, .pth,
// .ts, .zip or .torchscript.
bool is_model_file_name(const std::string& name);

// The name to make directory and file names from: a file's name without its extension ("runs/net.pt" →
// "net"), a zoo model's own name.
std::string model_stem(const std::string& name);

}  // namespace batchscope::models
