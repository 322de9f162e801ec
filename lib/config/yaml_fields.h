#pragma once

// Internal to lib/: typed reads of YAML values that throw UserError naming the file, the line and
// the fix, and the key checks that suggest the key a user probably meant.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace batchscope::yaml_fields {

// Where a value came from, for messages: `label` is the YAML key or the command-line flag.
struct Where {
  std::string source;
  int line = 0;
  std::string label;
};

struct Entry {
  YAML::Node node;
  Where where;
};
using Entries = std::map<std::string, Entry>;

[[noreturn]] void fail(const Where& where, const std::string& problem, const std::string& fix);

// The 1-based line of `node`, or 0 when it has none (a node built in memory).
int line_of(const YAML::Node& node);

// A value inside `parent` (a list element, a nested key); values from the command line have no line.
Where inside(const Where& parent, const YAML::Node& node, const std::string& label);

// `text` as a message shows it: quoted when it is empty or holds blanks.
std::string shown(const std::string& text);

// What a node is, for "X is ... but must be ...": empty, a list, a map, or its text.
std::string describe(const YAML::Node& node);

// The words separated by ", ", with `last` before the final one: "a, b or c" for last " or ".
std::string join(const std::vector<std::string>& words, const std::string& last = ", ");

// Our name for a name people reach for from other tools, too far from ours for the edit distance to catch
// ("batch_size" is batch, "dtype" precision), in snake case; empty where there is none.
std::string alias_of(const std::string& word);

// The fix for a word that is not among `accepted`, suggesting the obvious one when there is one.
std::string choose_from(const std::string& word, const std::vector<std::string>& accepted,
                        const std::string& what);

// The accepted value a mistyped or another tool's one was meant for ("trian" and "training" are train,
// "bfloat16" is bf16), in any case; empty where none is near. It is offered in the fix, never taken in
// the value's place: a record names each value one way.
std::string meant_value(const std::string& word, const std::vector<std::string>& accepted);
// `fix` for a value not among `accepted`, led by "did you mean X? " where meant_value finds one.
std::string value_fix(const std::string& word, const std::vector<std::string>& accepted,
                      const std::string& fix);

std::string get_string(const Entry& e, const std::string& fix);
int64_t get_int(const Entry& e, int64_t min, int64_t max, const std::string& fix);
// A finite number in [min, max), or (min, max) when min is not allowed.
double get_double(const Entry& e, double min, bool min_allowed, double max, const std::string& fix);
bool get_bool(const Entry& e);

// Sets into[key] to `entry`, replacing the entry there. Never by assigning to that entry: assigning to a
// YAML::Node writes through to every copy of it, so an experiment's own value would overwrite the
// default it was copied from, and the experiments after it would take that value instead of the default.
void set_entry(Entries& into, const std::string& key, Entry entry);

// Adds a YAML map's entries over those already in `into`, rejecting unknown and repeated keys; keys in
// `skip` are checked for repeats only and left out.
void collect(const YAML::Node& map, const std::string& source, const std::vector<std::string>& accepted,
             const std::string& context, Entries& into, const std::set<std::string>& skip = {});

// The line (from 1) where a second YAML document begins with content of its own: after the first
// document's content, a "---" or "..." at the start of a line, then more than blanks and comments. None
// where the text is one document. Found by lines, not by yaml-cpp's LoadAll, which loops forever on some
// malformed input.
std::optional<int> second_document_line(const std::string& text);

}  // namespace batchscope::yaml_fields
