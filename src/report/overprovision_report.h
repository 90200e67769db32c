#pragma once
// The over-provisioning experiment's report (issue #16; seed 003 §6): the JSON `tessera
// simulate --json` prints, and an HTML page with, per mix, one plot per metric against the
// over-provisioning percentage (one line per policy, as 003 Figs. 5–8) and the table. `means`
// are MeanOf over seeds, one per (mix, policy, percentage).
//
//   report.json   {experiment, seeds, results: [{policy, mix, overprovision_pct, pending_s_mean,
//                 e2e_p99_s, gpu_mem_used_mean, gpu_util_mean, power_w_mean, energy_j,
//                 oom_kills, makespan_s, engines_failed}]}
//   report.html   self-contained (report/html.h)

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/overprovision.h"

namespace tessera::report {

nlohmann::json OverprovisionJson(size_t seeds, std::span<const sim::OverprovisionRun> means);
std::string OverprovisionHtml(size_t seeds, std::span<const sim::OverprovisionRun> means);
[[nodiscard]] Expected<std::vector<std::string>> WriteOverprovisionReport(
    const std::string& dir, size_t seeds, std::span<const sim::OverprovisionRun> means);

}  // namespace tessera::report
