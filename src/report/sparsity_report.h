#pragma once
// The thesis's Fig. 7.1 (seed 000 Ch. 7): prediction error against sparsity, one line per
// completion method, as an SVG plot and a JSON document (`tessera predict sweep`,
// docs/prediction.md). Stateless.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"

namespace tessera::report {

// One method at one share of hidden cells: its metrics on each seed, in seed order.
struct SparsityPoint {
  std::string method;
  double missing = 0;  // fraction of the known cells hidden
  std::vector<double> median_ape, mape, p90_ape;  // percent, one per seed
};

// Median over seeds of each metric, per point, with the per-seed values.
nlohmann::json SparsityJson(const std::vector<uint64_t>& seeds,
                            const std::vector<SparsityPoint>& points);
// Median APE (median over seeds) against missing %, one polyline with markers per method.
std::string SparsitySvg(const std::string& title, const std::vector<SparsityPoint>& points);
// Writes `fig7_1.svg` and `fig7_1.json` into `dir`, all or nothing; returns the paths.
[[nodiscard]] Expected<std::vector<std::string>> WriteSparsityReport(
    const std::string& dir, const std::string& title, const std::vector<uint64_t>& seeds,
    const std::vector<SparsityPoint>& points);

}  // namespace tessera::report
