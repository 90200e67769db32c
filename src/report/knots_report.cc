#include "report/knots_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "report/html.h"

namespace tessera::report {
namespace {

using Run = sim::KnotsRun;

std::string BarsSvg(std::span<const Run> means, const std::string& title,
                    const std::string& y_label, const std::function<double(const Run&)>& value) {
  double hi = 0;
  for (const Run& m : means) hi = std::max(hi, value(m));
  const std::vector<double> y_ticks = NiceTicks(0, hi > 0 ? hi : 1, 5);
  PlotFrame f{.x_min = 0,
              .x_max = static_cast<double>(std::max<size_t>(1, means.size())),
              .y_min = 0,
              .y_max = y_ticks.back(),
              .left = 64,
              .top = 34,
              .width = 300,
              .height = 200};
  std::string svg = SvgOpen(400, 290, title);
  svg += SvgAxes(f, {}, y_ticks, "", y_label, 0, y_ticks.back() < 2 ? 2 : 0);
  for (size_t i = 0; i < means.size(); ++i) {
    const double x0 = f.X(static_cast<double>(i) + 0.15), x1 = f.X(static_cast<double>(i) + 0.85);
    const double y = f.Y(value(means[i]));
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x0, y,
        x1 - x0, f.Y(0) - y, SeriesColor(i));
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
        (x0 + x1) / 2, f.Y(0) + 14, Escape(means[i].policy));
  }
  return svg + "</svg>\n";
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
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tessera knots</title>\n"
      "<style>body{{font-family:sans-serif;margin:12px;color:#222}} h1{{font-size:20px}} "
      "table{{border-collapse:collapse;font-size:12px}} "
      "td,th{{border:1px solid #bbb;padding:2px 6px;text-align:right}} "
      "td:first-child,th:first-child{{text-align:left}}</style>\n</head><body>\n"
      "<h1>tessera simulate --experiment knots</h1>\n"
      "<p>10 GPU nodes, batch jobs with usage bursts and latency-bound inference pods; means over "
      "{} seed(s) (seed 004; docs/results.md). The numbers are in "
      "<code>report.json</code>.</p>\n<div>\n",
      seeds);
  html += BarsSvg(means, "GPU utilisation (SM activity)", "%",
                  [](const Run& m) { return 100 * m.gpu_util_mean; });
  html += BarsSvg(means, "Batch job completion time (mean)", "s",
                  [](const Run& m) { return m.jct_s_mean; });
  html += BarsSvg(means, "Energy", "kJ", [](const Run& m) { return m.energy_j / 1000; });
  html += BarsSvg(means, "QoS violations (inference pods)", "pods",
                  [](const Run& m) { return m.qos_violations; });
  html += BarsSvg(means, "OOM kills", "kills", [](const Run& m) { return m.oom_kills; });
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
  return html + "</table>\n</body></html>\n";
}

Expected<std::vector<std::string>> WriteKnotsReport(const std::string& dir, size_t seeds,
                                                    std::span<const Run> means) {
  return WriteFiles(dir, {{"report.json", KnotsJson(seeds, means).dump(2) + "\n"},
                          {"report.html", KnotsHtml(seeds, means)}});
}

}  // namespace tessera::report
