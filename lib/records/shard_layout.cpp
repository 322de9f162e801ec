#include "lib/records/shard_layout.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/records/records.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace {

// The modification time of a file as ISO 8601 UTC, and how long ago that was.
std::pair<std::string, double> modified(const fs::path& file) {
  std::error_code ec;
  const auto written = fs::last_write_time(file, ec);
  if (ec) return {"", 0};
  const auto now = fs::file_time_type::clock::now();
  const double ago = std::chrono::duration<double>(now - written).count();
  const auto system = std::chrono::system_clock::now() -
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(now - written);
  const std::time_t t = std::chrono::system_clock::to_time_t(system);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return {text, std::max(0.0, ago)};
}

// What a shard directory's log holds: its plan, whether it is complete, the batch sizes done.
void read_shard_log(ShardDir& shard) {
  std::error_code ec;
  if (!fs::is_regular_file(shard.log, ec) || fs::file_size(shard.log, ec) == 0) return;
  const JsonlContents contents = read_jsonl(shard.log, BadLines::Collect);
  if (contents.records.empty()) return;
  shard.has_log = true;
  const Json& first = contents.records.front();
  const std::string where = shard.log + ":" + std::to_string(contents.record_lines.front());
  if (first.value("type", "") != record::kRun) {
    throw UserError(located(shard.log, contents.record_lines.front(), "does not start with a batchscope run record",
                            "move that directory out of the sweep's output directory"));
  }
  if (!first.contains("config") || !first["config"].is_object() || !first["config"].contains("shard")) {
    throw UserError(located(shard.log, contents.record_lines.front(),
                            "is the log of a sweep that was not sharded, in a shard's directory",
                            "move that directory out of the sweep's output directory"));
  }
  shard.plan = shard_plan_from_json(first["config"]["shard"], where);
  for (const Json& r : contents.records) {
    const std::string type = r.value("type", "");
    if (type == record::kEnd) shard.complete = true;
    if (type != record::kPoint && type != record::kOom && type != record::kSkipped) continue;
    if (!r.contains("experiment") || !r["experiment"].is_string() || !r.contains("batch_size") ||
        !r["batch_size"].is_number_integer())
      continue;
    const int64_t pass = r.contains("pass") && r["pass"].is_number_integer() ? r["pass"].get<int64_t>() : 1;
    shard.done.emplace_back(r["experiment"].get<std::string>(), r["batch_size"].get<int64_t>(), pass);
  }
  std::sort(shard.done.begin(), shard.done.end());
  shard.done.erase(std::unique(shard.done.begin(), shard.done.end()), shard.done.end());
  const auto [time, ago] = modified(shard.log);
  if (!time.empty()) shard.last_record_time = time;
  shard.seconds_since_last_record = ago;
}

std::string describe(const ShardPlanRecord& plan) {
  return "plan " + plan.plan_id + " (" + std::to_string(plan.count) + " shards of " + plan.source + ")";
}

}  // namespace

Json to_json(const ShardPlanRecord& plan) {
  Json shares = Json::array();
  for (const ShardShare& share : plan.shares) {
    Json parts = Json::array();
    for (const ShardShare::Part& part : share.parts) {
      parts.push_back({{"experiment", part.experiment},
                       {"batch", part.batch_sizes},
                       {"cost", part.costs},
                       {"passes", part.passes}});
    }
    shares.push_back({{"cost", share.cost}, {"parts", parts}});
  }
  Json j = {{"plan_id", plan.plan_id}, {"count", plan.count}};
  if (plan.index >= 0) {
    j["index"] = plan.index;
    j["from"] = plan.from;
  }
  j["source"] = plan.source;
  j["shares"] = shares;
  return j;
}

ShardPlanRecord shard_plan_from_json(const Json& j, const std::string& where) {
  const auto refuse = [&](const std::string& problem) -> UserError {
    return UserError(where + ": the shard plan " + problem +
                     "; it was not written by batchscope, or was damaged: run that shard again with --force");
  };
  if (!j.is_object()) throw refuse("is not a JSON object");
  ShardPlanRecord plan;
  if (!j.contains("plan_id") || !j["plan_id"].is_string()) throw refuse("has no plan_id");
  if (!j.contains("count") || !j["count"].is_number_integer()) throw refuse("has no shard count");
  plan.plan_id = j["plan_id"].get<std::string>();
  const int64_t count = j["count"].get<int64_t>();
  if (count < 1 || count > 9999) throw refuse("has a shard count out of range");
  plan.count = static_cast<int>(count);
  plan.index = -1;
  if (j.contains("index")) {
    if (!j["index"].is_number_integer() || j["index"].get<int64_t>() < 0 || j["index"].get<int64_t>() >= count)
      throw refuse("has a shard index out of range");
    plan.index = static_cast<int>(j["index"].get<int64_t>());
  }
  plan.from = j.contains("from") && j["from"].is_string() ? j["from"].get<std::string>() : "";
  plan.source = j.contains("source") && j["source"].is_string() ? j["source"].get<std::string>() : "";
  if (!j.contains("shares") || !j["shares"].is_array() || j["shares"].size() != static_cast<size_t>(count))
    throw refuse("does not list one share per shard");
  for (const Json& s : j["shares"]) {
    if (!s.is_object() || !s.contains("parts") || !s["parts"].is_array()) throw refuse("has a share without parts");
    ShardShare share;
    share.cost = s.contains("cost") && s["cost"].is_number() ? s["cost"].get<double>() : 0;
    for (const Json& p : s["parts"]) {
      ShardShare::Part part;
      if (!p.is_object() || !p.contains("experiment") || !p["experiment"].is_string() || !p.contains("batch") ||
          !p["batch"].is_array())
        throw refuse("has a part without its experiment and batch sizes");
      part.experiment = p["experiment"].get<std::string>();
      for (const Json& b : p["batch"]) {
        if (!b.is_number_integer()) throw refuse("has a batch size that is not a whole number");
        part.batch_sizes.push_back(b.get<int64_t>());
      }
      if (p.contains("cost") && p["cost"].is_array()) {
        for (const Json& c : p["cost"]) part.costs.push_back(c.is_number() ? c.get<double>() : 0.0);
      }
      part.costs.resize(part.batch_sizes.size(), 0.0);
      part.passes = p.contains("passes") && p["passes"].is_number_integer() ? p["passes"].get<int64_t>() : 1;
      share.parts.push_back(std::move(part));
    }
    plan.shares.push_back(std::move(share));
  }
  return plan;
}

std::string shard_dir_name(int index, int count) {
  char name[40];
  std::snprintf(name, sizeof name, "shard-%04d-of-%04d", index, count);
  return name;
}

std::optional<std::pair<int, int>> parse_shard_dir_name(const std::string& name) {
  static const std::regex pattern("shard-([0-9]{4})-of-([0-9]{4})");
  std::smatch m;
  if (!std::regex_match(name, m, pattern)) return std::nullopt;
  const int index = std::stoi(m[1].str()), count = std::stoi(m[2].str());
  if (count < 1 || index >= count) return std::nullopt;
  return std::make_pair(index, count);
}

std::optional<ShardPlanRecord> recorded_shard_plan(const std::string& log) {
  ShardDir shard;
  shard.log = log;
  try {
    read_shard_log(shard);
  } catch (const UserError&) {
    return std::nullopt;
  }
  return shard.plan;
}

ShardDir read_shard_dir(const std::string& root, int index, int count) {
  ShardDir shard;
  shard.index = index;
  shard.count = count;
  shard.dir = (fs::path(root) / shard_dir_name(index, count)).string();
  shard.log = (fs::path(shard.dir) / "steps.jsonl").string();
  // A finished shard's log kept compressed (gzip steps.jsonl), which read_jsonl reads as the plain one.
  const std::string compressed = shard.log + ".gz";
  std::error_code ec;
  if (!fs::exists(shard.log, ec) && fs::is_regular_file(compressed, ec)) shard.log = compressed;
  read_shard_log(shard);
  return shard;
}

void check_same_plan(const std::string& root, const ShardPlanRecord& plan) {
  const std::optional<ShardedRun> existing = find_shards(root);
  if (!existing) return;
  if (!existing->plan.plan_id.empty() && existing->plan.plan_id != plan.plan_id) {
    const std::string where = existing->plan_file.empty() ? root : existing->plan_file;
    throw UserError(located(where, 0,
                            "holds shards of " + describe(existing->plan) + ", not of this sweep's " + describe(plan),
                            "give this sweep an --out directory of its own, or run the same experiments and shard count"));
  }
  if (existing->plan.plan_id.empty() && existing->plan.count != plan.count) {
    throw UserError(located(root, 0,
                            "holds the directories of " + std::to_string(existing->plan.count) + " shards, not " +
                                std::to_string(plan.count),
                            "give this sweep an --out directory of its own, or use the same shard count"));
  }
}

void write_plan_file(const std::string& root, const ShardPlanRecord& plan) {
  const fs::path file = fs::path(root) / "plan.json";
  std::error_code ec;
  if (fs::exists(file, ec)) return;
  fs::create_directories(root, ec);
  ShardPlanRecord whole = plan;
  whole.index = -1;
  replace_file(file.string(), to_json(whole).dump(2) + "\n");
}

std::optional<ShardedRun> find_shards(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return std::nullopt;
  ShardedRun run;
  run.root = root;
  // The plan each piece names, with where it was read: all of them must be one.
  std::optional<ShardPlanRecord> plan;
  std::string plan_where;
  const auto agree = [&](const ShardPlanRecord& found, const std::string& where) {
    if (!plan) {
      plan = found;
      plan_where = where;
      return;
    }
    if (found.plan_id != plan->plan_id || found.count != plan->count) {
      throw UserError(where + ": belongs to " + describe(found) + ", but " + plan_where + " to " + describe(*plan) +
                      "; two different sweeps share " + root +
                      ": move one of them to a directory of its own, then analyze each directory alone");
    }
  };
  const fs::path plan_file = fs::path(root) / "plan.json";
  if (fs::is_regular_file(plan_file, ec)) {
    std::ifstream in(plan_file);
    std::stringstream text;
    text << in.rdbuf();
    Json j;
    try {
      j = Json::parse(text.str());
    } catch (const Json::exception&) {
      throw UserError(located(plan_file.string(), 0, "is not JSON", "remove it: the shards' own logs name their plan"));
    }
    agree(shard_plan_from_json(j, plan_file.string()), plan_file.string());
    run.plan_file = plan_file.string();
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory(ec) && parse_shard_dir_name(entry.path().filename().string())) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  std::optional<std::pair<std::string, int>> first_count;  // a directory name and the count it says
  for (const std::string& name : names) {
    const auto [index, count] = *parse_shard_dir_name(name);
    const std::string dir = (fs::path(root) / name).string();
    if (first_count && first_count->second != count) {
      throw UserError(dir + ": is one of " + std::to_string(count) + " shards, but " + first_count->first +
                      " one of " + std::to_string(first_count->second) + "; two different sweeps share " + root +
                      ": move one of them to a directory of its own, then analyze each directory alone");
    }
    if (!first_count) first_count = std::make_pair(dir, count);
    ShardDir shard = read_shard_dir(root, index, count);
    if (shard.plan) {
      agree(*shard.plan, shard.log + ":1");
      if (shard.plan->index != index || shard.plan->count != count) {
        throw UserError(located(shard.log, 1,
                                "is the log of shard " + std::to_string(shard.plan->index) + " of " +
                                    std::to_string(shard.plan->count) + ", in the directory of shard " +
                                    std::to_string(index) + " of " + std::to_string(count),
                                "put it back in " + shard_dir_name(shard.plan->index, shard.plan->count)));
      }
    }
    run.shards.push_back(std::move(shard));
  }
  if (!plan && run.shards.empty()) return std::nullopt;
  if (plan && first_count && first_count->second != plan->count) {
    throw UserError(first_count->first + ": is one of " + std::to_string(first_count->second) + " shards, but " +
                    plan_where + " plans " + std::to_string(plan->count) + "; two different sweeps share " + root +
                    ": move one of them to a directory of its own, then analyze each directory alone");
  }
  if (plan) {
    run.plan = *plan;
    run.plan.index = -1;
  } else {
    run.plan.count = first_count->second;  // no shard has started: only the count is known
    run.plan.index = -1;
  }
  return run;
}

}  // namespace batchscope
