#include "report/disaggregation_report.h"

#include <fmt/core.h>

#include <functional>

#include "report/html.h"

namespace tessera::report {
namespace {

using Run = sim::DisaggregationRun;

// Short names for the bars: the option that differs.
std::string Short(const std::string& policy) {
  if (policy == R"(drmaestro{"disaggregate":false})") return "firmament-like";
  if (policy == R"(drmaestro{"network_aware":true})") return "drmaestro+NA";
  return policy;
}

}  // namespace

nlohmann::json DisaggregationJson(size_t seeds, std::span<const Run> means) {
  nlohmann::json results = nlohmann::json::array();
  for (const Run& m : means) {
    results.push_back({{"policy", m.policy},
                       {"scenario", m.scenario},
                       {"makespan_s", m.makespan_s},
                       {"qos_violations", m.qos_violations},
                       {"jobs_done", m.jobs_done},
                       {"pending_s_mean", m.pending_s_mean},
                       {"remote_jobs", m.remote_jobs},
                       {"gpu_util_mean", m.gpu_util_mean}});
  }
  return {{"experiment", "disaggregation"}, {"seeds", seeds}, {"results", std::move(results)}};
}

std::string DisaggregationHtml(size_t seeds, std::span<const Run> means) {
  std::string html =
      PageOpen("tessera disaggregation", "tessera simulate --experiment disaggregation");
  html += fmt::format(
      "<p>Rodinia-like jobs on K80 nodes whose CPUs are half held by a warm-up; GPUs local only "
      "(firmament-like) or also remote; means over {} seed(s) (seed 002; docs/results.md). The "
      "numbers are in <code>report.json</code>.</p>\n",
      seeds);
  for (size_t i = 0; i < means.size();) {
    size_t j = i;
    while (j < means.size() && means[j].scenario == means[i].scenario) ++j;
    const std::span<const Run> group = means.subspan(i, j - i);
    const auto bars = [&](const std::string& title, const std::string& y_label,
                          const std::function<double(const Run&)>& value) {
      std::vector<Bar> out;
      for (const Run& m : group) out.push_back({Short(m.policy), value(m)});
      return BarsSvg(title, y_label, out);
    };
    html += fmt::format("<h2>{}</h2>\n<div>\n", Escape(means[i].scenario));
    html += bars("Makespan", "s", [](const Run& m) { return m.makespan_s; });
    html +=
        bars("Jobs that missed their goal", "jobs", [](const Run& m) { return m.qos_violations; });
    html += bars("Pending time (mean)", "s", [](const Run& m) { return m.pending_s_mean; });
    html += bars("Jobs on a remote GPU", "jobs", [](const Run& m) { return m.remote_jobs; });
    html +=
        "</div>\n<table><tr><th>policy</th><th>makespan s</th><th>QoS violations</th>"
        "<th>jobs done</th><th>pending s</th><th>remote jobs</th><th>GPU util %</th></tr>\n";
    for (const Run& m : group) {
      html += fmt::format(
          "<tr><td>{}</td><td>{:.0f}</td><td>{:.1f}</td><td>{:.0f}</td><td>{:.1f}</td>"
          "<td>{:.1f}</td><td>{:.1f}</td></tr>\n",
          Escape(m.policy), m.makespan_s, m.qos_violations, m.jobs_done, m.pending_s_mean,
          m.remote_jobs, 100 * m.gpu_util_mean);
    }
    html += "</table>\n";
    i = j;
  }
  return html + PageClose();
}

Expected<std::vector<std::string>> WriteDisaggregationReport(const std::string& dir, size_t seeds,
                                                             std::span<const Run> means) {
  return WriteFiles(dir, {{"report.json", DisaggregationJson(seeds, means).dump(2) + "\n"},
                          {"report.html", DisaggregationHtml(seeds, means)}});
}

}  // namespace tessera::report
