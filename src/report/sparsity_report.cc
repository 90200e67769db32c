#include "report/sparsity_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/stats.h"
#include "report/html.h"

namespace tessera::report {
namespace {

// A point's per-seed values are never empty (one per seed); 0 keeps a hand-built empty one
// drawable.
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
    j["points"].push_back(
        {{"method", p.method},
         {"missing", p.missing},
         {"median_ape", MedianOrZero(p.median_ape)},
         {"mape", MedianOrZero(p.mape)},
         {"p90_ape", MedianOrZero(p.p90_ape)},
         {"per_seed", {{"median_ape", p.median_ape}, {"mape", p.mape}, {"p90_ape", p.p90_ape}}}});
  }
  return j;
}

std::string SparsitySvg(const std::string& title, const std::vector<SparsityPoint>& points) {
  std::vector<Series> lines;
  for (const std::string& method : Methods(points)) {
    std::map<double, double> line;  // missing % -> median APE, in increasing x
    for (const SparsityPoint& p : points) {
      if (p.method == method) line[100 * p.missing] = MedianOrZero(p.median_ape);
    }
    lines.push_back({method, {line.begin(), line.end()}});
  }
  return LinesSvg(title, "hidden cells (% of the measured ones)",
                  "median APE (%), median over seeds", lines,
                  {.width = 580,
                   .height = 330,
                   .plot_width = 360,
                   .plot_height = 240,
                   .x_ticks = 10,
                   .x_max_at_least = 100,
                   .y_ticks = 6,
                   .y_max_at_least = 10,
                   .legend_gap = 20,
                   .markers = true});
}

Expected<std::vector<std::string>> WriteSparsityReport(const std::string& dir,
                                                       const std::string& title,
                                                       const std::vector<uint64_t>& seeds,
                                                       const std::vector<SparsityPoint>& points) {
  return WriteFiles(dir, {{"fig7_1.svg", SparsitySvg(title, points)},
                          {"fig7_1.json", SparsityJson(seeds, points).dump(2) + "\n"}});
}

}  // namespace tessera::report
