#include "predict/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <utility>

#include "predict/baseline.h"
#include "predict/feature_kernel.h"
#include "predict/hybrid.h"
#include "predict/imputer.h"
#include "predict/neighbours.h"
#include "predict/svd.h"

namespace tessera::predict {
namespace {

using Factory = std::function<std::unique_ptr<Completer>()>;

const std::vector<std::pair<std::string, Factory>>& Registry() {
  static const std::vector<std::pair<std::string, Factory>> registry = {
      {"svd", [] { return std::make_unique<SvdCompleter>(); }},
      {"imputer", [] { return std::make_unique<ImputerCompleter>(); }},
      {"hybrid", [] { return std::make_unique<HybridCompleter>(); }},
      {"knn", [] { return std::make_unique<NeighboursCompleter>(); }},
      {"baseline", [] { return std::make_unique<BaselineCompleter>(); }},
      {"features", [] { return std::make_unique<FeatureKernelCompleter>(); }},
  };
  return registry;
}

}  // namespace

Expected<std::unique_ptr<Completer>> MakeCompleter(const std::string& name) {
  for (const auto& [key, factory] : Registry()) {
    if (key == name) return factory();
  }
  return Fail("unknown completion method '{}' (known: {})", name,
              fmt::join(CompleterNames(), ", "));
}

std::vector<std::string> CompleterNames() {
  std::vector<std::string> names;
  for (const auto& entry : Registry()) names.push_back(entry.first);
  return names;
}

}  // namespace tessera::predict
