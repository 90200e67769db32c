#pragma once
// Files of the openb-alloc experiment (DESIGN §1 report::): the curves as CSV and a
// self-contained HTML page with an inline SVG plot of GPU allocation (and fragmentation) against
// the arrived load, one line per policy (mean over its seeds). No scripts, no external assets.

#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/openb.h"

namespace tessera::sim {

// Writes into `dir` (created if needed):
//   <trace>_runs.csv   policy,seed,arrived_pct,alloc_pct,frag_pct,frag_idle_pct
//   <trace>_mean.csv   policy,arrived_pct,alloc_pct,alloc_std,frag_pct,frag_std,...
//   <trace>.html       the plot
// Returns the paths written.
[[nodiscard]] Expected<std::vector<std::string>> WriteOpenbReport(const std::string& dir,
                                                                  const std::string& trace,
                                                                  std::span<const OpenbRun> runs);

// The SVG element alone (for tests and embedding).
std::string OpenbSvg(const std::string& trace, std::span<const OpenbSummary> summaries);

}  // namespace tessera::sim
