#include "sim/openb_report.h"

#include <fmt/core.h>

#include <cmath>

#include "report/html.h"

namespace tessera::sim {
using namespace ::tessera::report;  // the page's drawing helpers (report/html.h)

std::string OpenbSvg(const std::string& trace, std::span<const OpenbSummary> summaries) {
  // Two panels: allocation (y 0..100%) and fragmentation (% of capacity, y 0..max), x 0..130%.
  const int w = 760, h = 300, left = 60, right = 170, top = 30, bottom = 40;
  const int pw = w - left - right, ph = h - top - bottom;
  auto x_of = [&](int pct) { return left + pw * pct / static_cast<double>(kOpenbMaxPct); };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      w, 2 * h);
  double frag_max = 1;
  for (const OpenbSummary& s : summaries) {
    for (double f : s.frag_pct) {
      if (!std::isnan(f)) frag_max = std::max(frag_max, f);
    }
  }
  frag_max = std::ceil(frag_max / 5) * 5;
  for (int panel = 0; panel < 2; ++panel) {
    const int y0 = panel * h;
    const double y_max = panel == 0 ? 100 : frag_max;
    auto y_of = [&](double v) { return y0 + top + ph * (1 - v / y_max); };
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{} — {}</text>\n", left, y0 + 18,
        Escape(trace),
        panel == 0 ? "GPU allocation (% of capacity)" : "fragmentation (% of capacity)");
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n",
        left, y0 + top, pw, ph);
    for (int pct = 0; pct <= kOpenbMaxPct; pct += 10) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                         x_of(pct), y0 + top + ph + 15, pct);
    }
    for (int i = 0; i <= 5; ++i) {
      const double v = y_max * i / 5;
      svg += fmt::format(
          "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.0f}</text>"
          "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n",
          left - 5, y_of(v) + 4, v, left, left + pw, y_of(v), y_of(v));
    }
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arrived GPU load (% of "
        "capacity)</text>\n",
        left + pw / 2, y0 + h - 5);
    for (size_t i = 0; i < summaries.size(); ++i) {
      const OpenbSummary& s = summaries[i];
      const char* color = SeriesColor(i);
      std::string points;
      for (int pct = 0; pct <= kOpenbMaxPct; ++pct) {
        const double v = panel == 0 ? s.alloc_pct[pct] : s.frag_pct[pct];
        if (!std::isnan(v)) points += fmt::format("{:.1f},{:.1f} ", x_of(pct), y_of(v));
      }
      svg += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", color,
          points);
      const double at130 = panel == 0 ? s.alloc_pct[130] : s.frag_pct[130];
      svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{} ({:.2f})</text>\n", left + pw + 8,
                         y0 + top + 14 + 16 * static_cast<int>(i), color, Escape(s.policy), at130);
    }
  }
  svg += "</svg>\n";
  return svg;
}

Expected<std::vector<std::string>> WriteOpenbReport(const std::string& dir,
                                                    const std::string& trace,
                                                    std::span<const OpenbRun> runs) {
  std::string runs_csv = "policy,seed,arrived_pct,alloc_pct,frag_pct,frag_idle_pct\n";
  for (const OpenbRun& r : runs) {
    for (int b = 0; b <= kOpenbMaxPct; ++b) {
      runs_csv += fmt::format("{},{},{},{},{},{}\n", CsvField(r.policy), r.seed, b,
                              Num(r.alloc_pct[b]), Num(r.frag_pct[b]), Num(r.frag_idle_pct[b]));
    }
  }

  const std::vector<OpenbSummary> summaries = SummarizeOpenb(runs);
  std::string mean_csv =
      "policy,seeds,arrived_pct,alloc_pct,alloc_std,frag_pct,frag_std,frag_idle_pct\n";
  for (const OpenbSummary& s : summaries) {
    for (int b = 0; b <= kOpenbMaxPct; ++b) {
      mean_csv += fmt::format("{},{},{},{},{},{},{},{}\n", CsvField(s.policy), s.seeds.size(), b,
                              Num(s.alloc_pct[b]), Num(s.alloc_std[b]), Num(s.frag_pct[b]),
                              Num(s.frag_std[b]), Num(s.frag_idle_pct[b]));
    }
  }

  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>openb-alloc {}</title>"
      "</head><body>\n<h1>openb-alloc: {}</h1>\n<p>Arrive-only replay of Alibaba's openb "
      "trace as in the FGD paper (ATC'23 §6); mean over seeds per policy. Legend values are at "
      "130% arrived.</p>\n",
      Escape(trace), Escape(trace));
  html += OpenbSvg(trace, summaries);
  html += "<table border=\"1\" cellpadding=\"3\"><tr><th>policy</th><th>seeds</th>";
  for (int b : {80, 90, 100, 110, 120, 130}) html += fmt::format("<th>alloc@{}%</th>", b);
  html += "<th>failed pods</th></tr>\n";
  for (const OpenbSummary& s : summaries) {
    html += fmt::format("<tr><td>{}</td><td>{}</td>", Escape(s.policy), s.seeds.size());
    for (int b : {80, 90, 100, 110, 120, 130}) {
      html += fmt::format("<td>{:.2f} ± {:.2f}</td>", s.alloc_pct[b], s.alloc_std[b]);
    }
    html += fmt::format("<td>{:.1f}</td></tr>\n", s.failed_pods);
  }
  html += "</table>\n</body></html>\n";
  return WriteFiles(
      dir,
      {{trace + "_runs.csv", runs_csv}, {trace + "_mean.csv", mean_csv}, {trace + ".html", html}});
}

}  // namespace tessera::sim
