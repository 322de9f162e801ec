#include "lib/records/jsonl.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "lib/common/errors.h"

namespace batchscope {

JsonlWriter::JsonlWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "ab");
  if (file_ == nullptr) {
    throw UserError(located(path, 0, std::string("cannot open for writing (") + std::strerror(errno) + ")",
                            "choose an --out directory you can write to"));
  }
}

JsonlWriter::~JsonlWriter() {
  try {
    flush();
  } catch (...) {
    // A destructor must not throw; the caller's explicit flush() reports write errors.
  }
  if (file_ != nullptr) std::fclose(file_);
}

std::string jsonl_line(const Json& record) {
  return record.dump(-1, ' ', false, Json::error_handler_t::replace) + '\n';
}

void JsonlWriter::add(const Json& record) { pending_ += jsonl_line(record); }

void JsonlWriter::flush() {
  if (pending_.empty()) return;
  const bool ok = std::fwrite(pending_.data(), 1, pending_.size(), file_) == pending_.size() &&
                  std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  if (!ok) {
    throw UserError(located(path_, 0, std::string("writing failed (") + std::strerror(errno) + ")",
                            "free disk space or choose another --out directory, then run again to resume"));
  }
  pending_.clear();
}

namespace {

// A gzip file's whole text. A file cut short (a copy or compression that was stopped) is refused:
// a gzip stream has no lines to keep before the damage the way a plain log does.
std::string gunzipped_text(const std::string& path) {
  const std::unique_ptr<gzFile_s, int (*)(gzFile)> gz(gzopen(path.c_str(), "rb"), gzclose);
  if (!gz) throw UserError(located(path, 0, "cannot be read", "check the path"));
  std::string text;
  char chunk[1 << 16];
  int got = 0;
  while ((got = gzread(gz.get(), chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<std::size_t>(got));
  int code = Z_OK;
  const char* message = gzerror(gz.get(), &code);
  if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    throw UserError(
        located(path, 0, std::string("is a gzip file that cannot be read whole (") + message + ")",
                "compress the log again from its original (gzip -k steps.jsonl), or use the plain file"));
  }
  return text;
}

}  // namespace

JsonlContents read_jsonl(const std::string& path, BadLines bad_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(located(path, 0, "cannot be read", "check the path"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  bool compressed = false;
  // gzip's magic number: a compressed log (profile.jsonl.gz) reads as its text.
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f &&
      static_cast<unsigned char>(text[1]) == 0x8b) {
    text = gunzipped_text(path);
    compressed = true;
  }

  JsonlContents out;
  out.compressed = compressed;
  std::size_t begin = 0;
  int line = 0;
  while (begin < text.size()) {
    ++line;
    const std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) {
      out.truncated_tail = true;  // no newline: the writer was stopped mid-line
      break;
    }
    const std::string_view content(text.data() + begin, end - begin);
    const std::uintmax_t line_begin = begin;
    begin = end + 1;
    out.complete_lines = line;
    if (content.find_first_not_of(" \t\r") == std::string_view::npos) {
      out.complete_bytes = begin;
      continue;
    }
    Json j = Json::parse(content, nullptr, false);
    // Every reader asks a record its type first, as text: a type of another kind is no record of ours.
    if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) {
      if (bad_lines == BadLines::Collect) {
        out.bad_lines.push_back(line);
        out.complete_bytes = begin;
        continue;
      }
      throw UserError(located(path, line,
                              "is not a batchscope record (a JSON object with a \"type\" in text)",
                              "remove or repair that line"));
    }
    out.records.push_back(std::move(j));
    out.record_lines.push_back(line);
    out.record_offsets.push_back(line_begin);
    out.complete_bytes = begin;
  }
  return out;
}

std::string record_prefix(const std::string& type) { return "{\"type\":\"" + type + "\""; }

bool log_ends_with(const std::string& path, const std::string& type) {
  std::ifstream in(path, std::ios::binary);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last.rfind(record_prefix(type), 0) == 0;
}

void check_own_records(const std::string& path, const std::vector<std::string>& types,
                       const std::string& command) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) == 0) return;
  std::ifstream in(path, std::ios::binary);
  std::string first;
  std::getline(in, first);
  const bool whole_line = !in.eof();
  for (const std::string& type : types) {
    const std::string begins = record_prefix(type);
    if (first.compare(0, begins.size(), begins) == 0) return;
    // The only line, cut off before its type was whole: a first record stopped mid-write.
    if (!whole_line && first.size() < begins.size() && begins.compare(0, first.size(), first) == 0) return;
  }
  throw UserError(
      located(path, 1, "is not a file of batchscope " + command + " records, and they are appended to it",
              "choose another --out (a new file, or one an earlier " + command + " --out wrote)"));
}

}  // namespace batchscope
