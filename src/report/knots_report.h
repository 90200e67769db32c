#pragma once
// The Kube-Knots experiment's report (issue #16; seed 004): the JSON `tessera simulate --json`
// prints, and an HTML page with one bar chart per metric (a bar per policy) and the table.
// `means` are MeanOf over seeds, one per policy in report order.
//
//   report.json   {experiment, seeds, results: [{policy, gpu_util_mean, jct_s_mean, energy_j,
//                 qos_violations, oom_kills, makespan_s, inference_jct_s_mean}]}
//   report.html   self-contained (report/html.h)

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/knots.h"

namespace tessera::report {

nlohmann::json KnotsJson(size_t seeds, std::span<const sim::KnotsRun> means);
std::string KnotsHtml(size_t seeds, std::span<const sim::KnotsRun> means);
[[nodiscard]] Expected<std::vector<std::string>> WriteKnotsReport(
    const std::string& dir, size_t seeds, std::span<const sim::KnotsRun> means);

}  // namespace tessera::report
