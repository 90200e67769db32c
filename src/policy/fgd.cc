#include "policy/fgd.h"

#include <cmath>
#include <span>
#include <vector>

#include "policy/registry.h"

namespace tessera::policy {

std::vector<OptionInfo> TypicalPodsOptionList() {
  return {{"typical_pods", "null",
           "[{cpu_milli, gpu_count, gpu_milli, gpu_models, weight}, ...]; null: the driver's "
           "(openb: 95% of the trace), else learned online"}};
}

Expected<ShapeDistribution> TypicalPods(std::string_view policy, const PolicyContext& context,
                                        const nlohmann::json& options) {
  nlohmann::json given;
  if (auto ok = ReadOption(policy, options, "typical_pods", given); !ok) {
    return std::unexpected(ok.error());
  }
  if (!given.is_null()) {
    auto typical = ShapeDistribution::FromJson(given);
    if (!typical) {
      return Fail("policy {}: option 'typical_pods': {}", policy, typical.error().message);
    }
    return typical;
  }
  if (context.typical_pods == nullptr) return ShapeDistribution{};
  const std::span<const PodShape> shapes = context.typical_pods->shapes();
  return ShapeDistribution(std::vector<PodShape>(shapes.begin(), shapes.end()));
}

int Fgd::ScoreOf(double before, double after) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-(before - after) / 1000.0));
  return static_cast<int>(sigmoid * 100);
}

}  // namespace tessera::policy
