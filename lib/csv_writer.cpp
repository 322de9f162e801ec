#include "lib/csv_writer.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "lib/errors.h"

namespace batchscope {
namespace {

std::string escape(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string cell(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return escape(value.get<std::string>());
  if (value.is_number_float()) {
    std::ostringstream s;
    s.precision(10);
    s << value.get<double>();
    return s.str();
  }
  return escape(value.dump());
}

void write_lines(std::ofstream& out, const std::vector<Json>& records) {
  for (const Json& r : records) {
    const std::string line = csv_line(r);
    if (!line.empty()) out << line << '\n';
  }
}

}  // namespace

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> columns = {"type",
                                                   "experiment",
                                                   "model",
                                                   "phase",
                                                   "precision",
                                                   "device",
                                                   "batch_size",
                                                   "step",
                                                   "time_ms",
                                                   "loss",
                                                   "samples",
                                                   "median_ms",
                                                   "p10_ms",
                                                   "p90_ms",
                                                   "mean_ms",
                                                   "stddev_ms",
                                                   "cv",
                                                   "samples_per_s",
                                                   "tflops",
                                                   "peak_memory_bytes",
                                                   "avg_power_w",
                                                   "j_per_step",
                                                   "j_per_sample",
                                                   "samples_per_j",
                                                   "idle_power_w",
                                                   "end_sm_clock_mhz",
                                                   "end_temperature_c",
                                                   "message"};
  return columns;
}

std::string csv_header_line() {
  std::string line;
  for (const std::string& c : csv_columns()) line += (line.empty() ? "" : ",") + c;
  return line;
}

std::string csv_line(const Json& record) {
  if (!record.contains("batch_size")) return "";
  std::string line;
  bool first = true;
  for (const std::string& c : csv_columns()) {
    if (!first) line += ',';
    first = false;
    if (record.contains(c)) line += cell(record.at(c));
  }
  return line;
}

void rewrite_csv(const std::string& path, const std::vector<Json>& records) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out)
      throw UserError(
          located(temporary, 0, "cannot be written", "choose an --out directory you can write to"));
    out << csv_header_line() << '\n';
    write_lines(out, records);
    if (!out.flush()) throw UserError(located(temporary, 0, "writing failed", "free disk space"));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw UserError(located(path, 0, "cannot be replaced", "check the permissions of the --out directory"));
  }
}

void append_csv(const std::string& path, const std::vector<Json>& records) {
  std::ofstream out(path, std::ios::app);
  if (!out)
    throw UserError(located(path, 0, "cannot be written", "choose an --out directory you can write to"));
  write_lines(out, records);
  if (!out.flush()) throw UserError(located(path, 0, "writing failed", "free disk space"));
}

}  // namespace batchscope
