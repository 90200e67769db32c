#pragma once
// The online-offline experiment's report (issue #17): the JSON `tessera simulate --json`
// prints, and an HTML page with the table and the hourly timelines of online latency and GPU
// utilisation / SM activity, one line per policy. `means` are MeanOf over seeds, one per
// policy in report order.
//
//   report.json   {experiment, seeds, results: [{policy, online_latency_mean_ms,
//                 online_latency_p99_ms, gpu_util_mean, sm_activity_mean, offline_jct_mean_s,
//                 offline_jobs_done, evictions, executions, ...}]}
//   report.html   self-contained (report/html.h)

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/online_offline.h"

namespace tessera::report {

nlohmann::json OnlineOfflineJson(size_t seeds, std::span<const sim::OnlineOfflineRun> means);
std::string OnlineOfflineHtml(size_t seeds, std::span<const sim::OnlineOfflineRun> means);
[[nodiscard]] Expected<std::vector<std::string>> WriteOnlineOfflineReport(
    const std::string& dir, size_t seeds, std::span<const sim::OnlineOfflineRun> means);

}  // namespace tessera::report
