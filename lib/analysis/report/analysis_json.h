#pragma once

#include "lib/analysis/analysis.h"
#include "lib/analysis/analyzer.h"
#include "lib/records/records.h"

namespace batchscope {

// analysis.json: every number of the report, for scripts. The keys are documented in the README
// ("analysis.json"); format_version changes when a key changes meaning.
Json analysis_to_json(const Analysis& analysis, const AnalyzeOptions& options);

}  // namespace batchscope
