#pragma once
// The disaggregation experiment's report (issue #18; seed 002): the JSON `tessera simulate --json`
// prints, and an HTML page with, per scenario, one bar chart per metric (a bar per policy) and
// the table. `means` are MeanOf over seeds, one per (scenario, policy), scenario by scenario.
//
//   report.json   {experiment, seeds, results: [{policy, scenario ("nodes=16,jobs=512"),
//                 makespan_s, qos_violations, jobs_done, pending_s_mean, remote_jobs,
//                 gpu_util_mean}]}
//   report.html   self-contained (report/html.h)

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/disaggregation.h"

namespace tessera::report {

nlohmann::json DisaggregationJson(size_t seeds, std::span<const sim::DisaggregationRun> means);
std::string DisaggregationHtml(size_t seeds, std::span<const sim::DisaggregationRun> means);
[[nodiscard]] Expected<std::vector<std::string>> WriteDisaggregationReport(
    const std::string& dir, size_t seeds, std::span<const sim::DisaggregationRun> means);

}  // namespace tessera::report
