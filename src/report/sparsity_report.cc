#include "report/sparsity_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/stats.h"
#include "report/html.h"

namespace tessera::report {
namespace {

// A point's per-seed values are never empty (one per seed); 0 keeps a hand-built empty one drawable.
double MedianOrZero(const std::vector<double>& v) { return v.empty() ? 0.0 : Median(v); }

// Methods in the order they first appear.
std::vector<std::string> Methods(const std::vector<SparsityPoint>& points) {
  std::vector<std::string> out;
  for (const SparsityPoint& p : points) {
    if (std::find(out.begin(), out.end(), p.method) == out.end()) out.push_back(p.method);
  }
  return out;
}

}  // namespace

nlohmann::json SparsityJson(const std::vector<uint64_t>& seeds,
                            const std::vector<SparsityPoint>& points) {
  nlohmann::json j = {{"seeds", seeds}, {"points", nlohmann::json::array()}};
  for (const SparsityPoint& p : points) {
    j["points"].push_back({{"method", p.method},
                           {"missing", p.missing},
                           {"median_ape", MedianOrZero(p.median_ape)},
                           {"mape", MedianOrZero(p.mape)},
                           {"p90_ape", MedianOrZero(p.p90_ape)},
                           {"per_seed",
                            {{"median_ape", p.median_ape},
                             {"mape", p.mape},
                             {"p90_ape", p.p90_ape}}}});
  }
  return j;
}

std::string SparsitySvg(const std::string& title, const std::vector<SparsityPoint>& points) {
  double y_hi = 10;
  for (const SparsityPoint& p : points) y_hi = std::max(y_hi, MedianOrZero(p.median_ape));
  const std::vector<double> x_ticks = NiceTicks(0, 100, 10);
  const std::vector<double> y_ticks = NiceTicks(0, y_hi, 6);
  const PlotFrame f{.x_min = 0,
                    .x_max = 100,
                    .y_min = 0,
                    .y_max = y_ticks.back(),
                    .left = 64,
                    .top = 34,
                    .width = 360,
                    .height = 240};
  std::string svg = SvgOpen(580, 330, title);
  svg += SvgAxes(f, x_ticks, y_ticks, "hidden cells (% of the measured ones)",
                 "median APE (%), median over seeds", 0, 0);
  std::vector<LegendEntry> legend;
  const std::vector<std::string> methods = Methods(points);
  for (size_t i = 0; i < methods.size(); ++i) {
    std::map<double, double> line;  // missing % -> median APE
    for (const SparsityPoint& p : points) {
      if (p.method == methods[i]) line[100 * p.missing] = MedianOrZero(p.median_ape);
    }
    const std::string color = SeriesColor(i), dash = SeriesDash(i);
    legend.push_back({methods[i], color, dash});
    std::string xy;
    for (const auto& [x, y] : line) {
      xy += fmt::format("{:.1f},{:.1f} ", f.X(x), f.Y(y));
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", f.X(x),
                         f.Y(y), Escape(color));
    }
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\" "
        "points=\"{}\"/>\n",
        Escape(color), Escape(dash), xy);
  }
  svg += SvgLegend(f.left + f.width + 20, f.top + 10, legend);
  return svg + "</svg>\n";
}

Expected<std::vector<std::string>> WriteSparsityReport(const std::string& dir,
                                                       const std::string& title,
                                                       const std::vector<uint64_t>& seeds,
                                                       const std::vector<SparsityPoint>& points) {
  return WriteFiles(dir, {{"fig7_1.svg", SparsitySvg(title, points)},
                          {"fig7_1.json", SparsityJson(seeds, points).dump(2) + "\n"}});
}

}  // namespace tessera::report
