#include "report/online_offline_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "report/html.h"

namespace tessera::report {
namespace {

std::string TimelineSvg(std::span<const sim::OnlineOfflineRun> means, const std::string& title,
                        const std::string& y_label,
                        const std::function<double(const sim::TimelinePoint&)>& value) {
  double hi = 0, hours = 1;
  for (const sim::OnlineOfflineRun& m : means) {
    for (const sim::TimelinePoint& p : m.timeline) {
      hi = std::max(hi, value(p));
      hours = std::max(hours, p.hour + 1);
    }
  }
  const std::vector<double> x_ticks = NiceTicks(0, hours, 8);
  const std::vector<double> y_ticks = NiceTicks(0, hi > 0 ? hi : 1, 5);
  PlotFrame f{.x_min = 0,
              .x_max = x_ticks.back(),
              .y_min = 0,
              .y_max = y_ticks.back(),
              .left = 64,
              .top = 34,
              .width = 420,
              .height = 230};
  std::string svg = SvgOpen(640, 320, title);
  svg += SvgAxes(f, x_ticks, y_ticks, "hour of the day", y_label, 0, y_ticks.back() < 2 ? 2 : 0);
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < means.size(); ++i) {
    legend.push_back({means[i].policy, SeriesColor(i), SeriesDash(i)});
    std::string points;
    for (const sim::TimelinePoint& p : means[i].timeline) {
      points += fmt::format("{:.1f},{:.1f} ", f.X(p.hour + 0.5), f.Y(value(p)));
    }
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\" "
        "points=\"{}\"/>\n",
        SeriesColor(i), SeriesDash(i), points);
  }
  svg += SvgLegend(f.left + f.width + 20, f.top + 10, legend);
  return svg + "</svg>\n";
}

}  // namespace

nlohmann::json OnlineOfflineJson(size_t seeds, std::span<const sim::OnlineOfflineRun> means) {
  nlohmann::json results = nlohmann::json::array();
  for (const sim::OnlineOfflineRun& m : means) {
    nlohmann::json timeline = nlohmann::json::array();
    for (const sim::TimelinePoint& p : m.timeline) {
      timeline.push_back({{"hour", p.hour},
                          {"latency_ms", p.latency_ms},
                          {"gpu_util", p.gpu_util},
                          {"sm_activity", p.sm_activity}});
    }
    results.push_back({{"policy", m.policy},
                       {"online_latency_mean_ms", m.online_latency_mean_ms},
                       {"online_latency_p99_ms", m.online_latency_p99_ms},
                       {"overloaded_share", m.overloaded_share},
                       {"gpu_util_mean", m.gpu_util_mean},
                       {"sm_activity_mean", m.sm_activity_mean},
                       {"offline_jct_mean_s", m.offline_jct_mean_s},
                       {"offline_jobs_done", m.offline_jobs_done},
                       {"offline_jobs", m.offline_jobs},
                       {"evictions", m.evictions},
                       {"executions", m.executions},
                       {"lost_iterations", m.lost_iterations},
                       {"timeline", std::move(timeline)}});
  }
  return {{"experiment", "online-offline"}, {"seeds", seeds}, {"results", std::move(results)}};
}

std::string OnlineOfflineHtml(size_t seeds, std::span<const sim::OnlineOfflineRun> means) {
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tessera online-offline"
      "</title>\n<style>body{{font-family:sans-serif;margin:12px;color:#222}} "
      "h1{{font-size:20px}} table{{border-collapse:collapse;font-size:12px}} "
      "td,th{{border:1px solid #bbb;padding:2px 6px;text-align:right}} "
      "td:first-child,th:first-child{{text-align:left}}</style>\n</head><body>\n"
      "<h1>tessera simulate --experiment online-offline</h1>\n"
      "<p>{} policies × {} seed(s), 16 × 8 T4, 24 h simulated; means over seeds. Latency: "
      "M/M/1 per replica plus the host latency (docs/results.md). The numbers are in "
      "<code>report.json</code>.</p>\n<table><tr><th>policy</th><th>latency mean ms</th>"
      "<th>p99 ms</th><th>GPU util %</th><th>SM activity %</th><th>offline JCT s</th>"
      "<th>jobs done</th><th>evictions</th><th>executions</th></tr>\n",
      means.size(), seeds);
  for (const sim::OnlineOfflineRun& m : means) {
    html += fmt::format(
        "<tr><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.1f}</td><td>{:.1f}</td>"
        "<td>{:.0f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td></tr>\n",
        Escape(m.policy), m.online_latency_mean_ms, m.online_latency_p99_ms, 100 * m.gpu_util_mean,
        100 * m.sm_activity_mean, m.offline_jct_mean_s, m.offline_jobs_done, m.evictions,
        m.executions);
  }
  html += "</table>\n<div>\n";
  html += TimelineSvg(means, "Online latency (request-weighted mean per hour)", "ms",
                      [](const sim::TimelinePoint& p) { return p.latency_ms; });
  html += TimelineSvg(means, "GPU utilisation (mean over GPUs)", "%",
                      [](const sim::TimelinePoint& p) { return 100 * p.gpu_util; });
  html += TimelineSvg(means, "SM activity (mean over GPUs)", "%",
                      [](const sim::TimelinePoint& p) { return 100 * p.sm_activity; });
  return html + "</div>\n</body></html>\n";
}

Expected<std::vector<std::string>> WriteOnlineOfflineReport(
    const std::string& dir, size_t seeds, std::span<const sim::OnlineOfflineRun> means) {
  return WriteFiles(dir, {{"report.json", OnlineOfflineJson(seeds, means).dump(2) + "\n"},
                          {"report.html", OnlineOfflineHtml(seeds, means)}});
}

}  // namespace tessera::report
