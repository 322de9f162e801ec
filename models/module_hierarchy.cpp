#include "models/module_hierarchy.h"

namespace batchscope::models {

std::string module_path(const std::vector<std::string>& hierarchy) {
  if (hierarchy.empty()) return "";
  // Each entry is "instance(Type)::function"; the first is the top module's, "TOP(Type)::function".
  const auto function_of = [](const std::string& entry) {
    const std::size_t colons = entry.find(")::");
    return colons == std::string::npos ? std::string() : entry.substr(colons + 3);
  };
  const std::string top_function = function_of(hierarchy.front());
  if (top_function == "<forward op>") return kDifferentiableGraph;
  if (top_function != "forward") return "";
  std::string path;
  for (std::size_t i = 1; i < hierarchy.size(); ++i) {
    const std::string& entry = hierarchy[i];
    const std::string instance = entry.substr(0, entry.find('('));
    if (instance.empty() || instance == "SELF" || instance == "INSTANCE_NAME_UNKNOWN" ||
        instance.find("::") != std::string::npos)
      continue;
    path += (path.empty() ? "" : ".") + instance;
  }
  return path;
}

}  // namespace batchscope::models
