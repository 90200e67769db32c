#include "policy/fgd.h"

#include <cmath>

#include "policy/registry.h"

namespace tessera::policy {

Expected<ShapeDistribution> TypicalPodsOption(std::string_view policy,
                                              const nlohmann::json& options) {
  if (auto ok = RejectUnknownOptions(policy, options, {"typical_pods"}); !ok) {
    return std::unexpected(ok.error());
  }
  if (options.is_null() || !options.contains("typical_pods")) return ShapeDistribution{};
  auto typical = ShapeDistribution::FromJson(options["typical_pods"]);
  if (!typical) return Fail("policy {}: {}", policy, typical.error().message);
  return typical;
}

int Fgd::ScoreOf(double before, double after) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-(before - after) / 1000.0));
  return static_cast<int>(sigmoid * 100);
}

}  // namespace tessera::policy
