#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace batchscope {

// Records keep their keys in the order written, "type" first, so a log reads naturally.
using Json = nlohmann::ordered_json;

// A value, or null where there is none.
template <typename T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// One record as a line of a JSON-lines file, its newline included.
std::string jsonl_line(const Json& record);

// Appends JSON lines to a file. Lines are buffered in memory and reach the file on flush(), which
// writes them at once and syncs: a killed process leaves whole batch sizes, never half of one.
class JsonlWriter {
 public:
  // Opens for appending (the file is created if missing). Throws UserError when it cannot be opened.
  explicit JsonlWriter(const std::string& path);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  void add(const Json& record);
  void flush();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string pending_;
};

struct JsonlContents {
  std::vector<Json> records;
  std::vector<int> record_lines;  // the 1-based line of each record
  std::vector<std::uintmax_t> record_offsets;  // the byte at which each record's line begins
  // Lines that are not records, with their line numbers; filled only when reading leniently.
  std::vector<int> bad_lines;
  // Byte length of the file's complete lines: an interrupted write leaves a tail after it.
  std::uintmax_t complete_bytes = 0;
  int complete_lines = 0;
  bool truncated_tail = false;
  bool compressed = false;  // the file is gzip
};

enum class BadLines { Throw, Collect };

// Reads every record of a JSON-lines file. A line that is not a JSON object with a text "type" throws
// UserError naming the file and line (or, with BadLines::Collect, is listed in bad_lines and skipped),
// except an unterminated last line (a killed write), which is reported as truncated_tail. A gzip file
// (gzip -9 profile.jsonl) is read as the text it holds; complete_bytes then counts that text's bytes.
JsonlContents read_jsonl(const std::string& path, BadLines bad_lines = BadLines::Throw);

// How a record of this type begins on its line, as batchscope writes it ("type" first): {"type":"end".
std::string record_prefix(const std::string& type);

// Whether the JSON-lines log at path ends with a whole record of this type: a complete result (an end
// record), for set_aside_replaced's `complete`.
bool log_ends_with(const std::string& path, const std::string& type);

// Refuses (UserError naming the file) a file given to append records to (peak --out, maxbatch --out)
// whose first line, whole or half-written, begins no record of `types` (as batchscope writes them, "type"
// first): someone's notes or another command's log is never appended to, nor its last line cut as a
// record left half-written. A missing or empty file passes. `command` names the writer in the refusal.
void check_own_records(const std::string& path, const std::vector<std::string>& types,
                       const std::string& command);

}  // namespace batchscope
