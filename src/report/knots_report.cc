#include "report/knots_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "report/html.h"

namespace tessera::report {
namespace {

using Run = sim::KnotsRun;

std::string Bars(std::span<const Run> means, const std::string& title, const std::string& y_label,
                 const std::function<double(const Run&)>& value) {
  std::vector<Bar> bars;
  for (const Run& m : means) bars.push_back({m.policy, value(m)});
  return BarsSvg(title, y_label, bars);
}

}  // namespace

nlohmann::json KnotsJson(size_t seeds, std::span<const Run> means) {
  nlohmann::json results = nlohmann::json::array();
  for (const Run& m : means) {
    results.push_back({{"policy", m.policy},
                       {"gpu_util_mean", m.gpu_util_mean},
                       {"jct_s_mean", m.jct_s_mean},
                       {"energy_j", m.energy_j},
                       {"qos_violations", m.qos_violations},
                       {"oom_kills", m.oom_kills},
                       {"makespan_s", m.makespan_s},
                       {"inference_jct_s_mean", m.inference_jct_s_mean}});
  }
  return {{"experiment", "knots"}, {"seeds", seeds}, {"results", std::move(results)}};
}

std::string KnotsHtml(size_t seeds, std::span<const Run> means) {
  std::string html = PageOpen("tessera knots", "tessera simulate --experiment knots");
  html += fmt::format(
      "<p>10 GPU nodes, batch jobs with usage bursts and latency-bound inference pods; means over "
      "{} seed(s) (seed 004; docs/results.md). The numbers are in "
      "<code>report.json</code>.</p>\n<div>\n",
      seeds);
  html += Bars(means, "GPU utilisation (SM activity)", "%",
               [](const Run& m) { return 100 * m.gpu_util_mean; });
  html += Bars(means, "Batch job completion time (mean)", "s",
               [](const Run& m) { return m.jct_s_mean; });
  html += Bars(means, "Energy", "kJ", [](const Run& m) { return m.energy_j / 1000; });
  html += Bars(means, "QoS violations (inference pods)", "pods",
               [](const Run& m) { return m.qos_violations; });
  html += Bars(means, "OOM kills", "kills", [](const Run& m) { return m.oom_kills; });
  html +=
      "</div>\n<table><tr><th>policy</th><th>SM util %</th><th>batch JCT s</th>"
      "<th>energy kJ</th><th>QoS violations</th><th>OOM kills</th><th>makespan s</th>"
      "<th>inference JCT s</th></tr>\n";
  for (const Run& m : means) {
    html += fmt::format(
        "<tr><td>{}</td><td>{:.1f}</td><td>{:.0f}</td><td>{:.1f}</td><td>{:.1f}</td>"
        "<td>{:.1f}</td><td>{:.0f}</td><td>{:.0f}</td></tr>\n",
        Escape(m.policy), 100 * m.gpu_util_mean, m.jct_s_mean, m.energy_j / 1000, m.qos_violations,
        m.oom_kills, m.makespan_s, m.inference_jct_s_mean);
  }
  return html + "</table>\n" + PageClose();
}

Expected<std::vector<std::string>> WriteKnotsReport(const std::string& dir, size_t seeds,
                                                    std::span<const Run> means) {
  return WriteFiles(dir, {{"report.json", KnotsJson(seeds, means).dump(2) + "\n"},
                          {"report.html", KnotsHtml(seeds, means)}});
}

}  // namespace tessera::report
