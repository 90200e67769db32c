#include "base/stats.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace tessera {

double Quantile(std::vector<double> values, double q) {
  TESSERA_CHECK(!values.empty() && q >= 0 && q <= 1);
  std::sort(values.begin(), values.end());
  const double rank = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

}  // namespace tessera
