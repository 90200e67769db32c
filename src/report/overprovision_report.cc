#include "report/overprovision_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "report/html.h"

namespace tessera::report {
namespace {

using Run = sim::OverprovisionRun;

// The policies of `mix`, in the order they first appear.
std::vector<std::string> PoliciesOf(std::span<const Run> means, const std::string& mix) {
  std::vector<std::string> out;
  for (const Run& m : means) {
    if (m.mix == mix && std::find(out.begin(), out.end(), m.policy) == out.end()) {
      out.push_back(m.policy);
    }
  }
  return out;
}

std::string MetricSvg(std::span<const Run> means, const std::string& mix, const std::string& title,
                      const std::string& y_label, const std::function<double(const Run&)>& value) {
  const std::vector<std::string> policies = PoliciesOf(means, mix);
  double hi = 0, pct_hi = 50;
  for (const Run& m : means) {
    if (m.mix != mix) continue;
    hi = std::max(hi, value(m));
    pct_hi = std::max(pct_hi, static_cast<double>(m.overprovision_pct));
  }
  const std::vector<double> x_ticks = NiceTicks(0, pct_hi, 6);
  const std::vector<double> y_ticks = NiceTicks(0, hi > 0 ? hi : 1, 5);
  PlotFrame f{.x_min = 0,
              .x_max = x_ticks.back(),
              .y_min = 0,
              .y_max = y_ticks.back(),
              .left = 64,
              .top = 34,
              .width = 300,
              .height = 200};
  std::string svg = SvgOpen(520, 280, title);
  svg += SvgAxes(f, x_ticks, y_ticks, "memory over-provisioning %", y_label, 0,
                 y_ticks.back() < 2 ? 2 : 0);
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < policies.size(); ++i) {
    legend.push_back({policies[i], SeriesColor(i), SeriesDash(i)});
    std::string points;
    for (const Run& m : means) {
      if (m.mix != mix || m.policy != policies[i]) continue;
      points += fmt::format("{:.1f},{:.1f} ", f.X(m.overprovision_pct), f.Y(value(m)));
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
                         f.X(m.overprovision_pct), f.Y(value(m)), SeriesColor(i));
    }
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\" "
        "points=\"{}\"/>\n",
        SeriesColor(i), SeriesDash(i), points);
  }
  svg += SvgLegend(f.left + f.width + 16, f.top + 10, legend);
  return svg + "</svg>\n";
}

}  // namespace

nlohmann::json OverprovisionJson(size_t seeds, std::span<const Run> means) {
  nlohmann::json results = nlohmann::json::array();
  for (const Run& m : means) {
    results.push_back({{"policy", m.policy},
                       {"mix", m.mix},
                       {"overprovision_pct", m.overprovision_pct},
                       {"pending_s_mean", m.pending_s_mean},
                       {"e2e_p99_s", m.e2e_p99_s},
                       {"gpu_mem_used_mean", m.gpu_mem_used_mean},
                       {"gpu_util_mean", m.gpu_util_mean},
                       {"power_w_mean", m.power_w_mean},
                       {"energy_j", m.energy_j},
                       {"oom_kills", m.oom_kills},
                       {"makespan_s", m.makespan_s},
                       {"engines_failed", m.engines_failed}});
  }
  return {{"experiment", "overprovision"}, {"seeds", seeds}, {"results", std::move(results)}};
}

std::string OverprovisionHtml(size_t seeds, std::span<const Run> means) {
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tessera overprovision"
      "</title>\n<style>body{{font-family:sans-serif;margin:12px;color:#222}} "
      "h1{{font-size:20px}} h2{{font-size:16px}} table{{border-collapse:collapse;font-size:12px}} "
      "td,th{{border:1px solid #bbb;padding:2px 6px;text-align:right}} "
      "td:first-child,th:first-child{{text-align:left}}</style>\n</head><body>\n"
      "<h1>tessera simulate --experiment overprovision</h1>\n"
      "<p>One V100-32GB, MLPerf SingleStream engines arriving every 5–10 s, each asking for its "
      "memory use × (1 + over-provisioning); means over {} seed(s) (seed 003 §6; "
      "docs/results.md). The numbers are in <code>report.json</code>.</p>\n",
      seeds);
  std::vector<std::string> mixes;
  for (const Run& m : means) {
    if (std::find(mixes.begin(), mixes.end(), m.mix) == mixes.end()) mixes.push_back(m.mix);
  }
  for (const std::string& mix : mixes) {
    html += fmt::format("<h2>{} mix</h2>\n<div>\n", Escape(mix));
    html += MetricSvg(means, mix, "Pending time (mean)", "s",
                      [](const Run& m) { return m.pending_s_mean; });
    html += MetricSvg(means, mix, "End-to-end time (p99)", "s",
                      [](const Run& m) { return m.e2e_p99_s; });
    html += MetricSvg(means, mix, "GPU memory used (mean)", "GiB",
                      [](const Run& m) { return m.gpu_mem_used_mean / 1024; });
    html += MetricSvg(means, mix, "GPU utilisation (mean)", "%",
                      [](const Run& m) { return 100 * m.gpu_util_mean; });
    html += MetricSvg(means, mix, "Power (mean)", "W", [](const Run& m) { return m.power_w_mean; });
    html += MetricSvg(means, mix, "Energy", "kJ", [](const Run& m) { return m.energy_j / 1000; });
    html +=
        "</div>\n<table><tr><th>policy</th><th>over %</th><th>pending s</th><th>e2e p99 s</th>"
        "<th>memory MiB</th><th>util %</th><th>power W</th><th>energy kJ</th><th>OOM kills</th>"
        "<th>makespan s</th></tr>\n";
    for (const Run& m : means) {
      if (m.mix != mix) continue;
      html += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.0f}</td>"
          "<td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.0f}</td></tr>\n",
          Escape(m.policy), m.overprovision_pct, m.pending_s_mean, m.e2e_p99_s, m.gpu_mem_used_mean,
          100 * m.gpu_util_mean, m.power_w_mean, m.energy_j / 1000, m.oom_kills, m.makespan_s);
    }
    html += "</table>\n";
  }
  return html + "</body></html>\n";
}

Expected<std::vector<std::string>> WriteOverprovisionReport(const std::string& dir, size_t seeds,
                                                            std::span<const Run> means) {
  return WriteFiles(dir, {{"report.json", OverprovisionJson(seeds, means).dump(2) + "\n"},
                          {"report.html", OverprovisionHtml(seeds, means)}});
}

}  // namespace tessera::report
