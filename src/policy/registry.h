#pragma once
// The policy registry: every policy, by name, with its factory. registry.cc is the ONE place a
// policy is registered (kube-scheduler plugins/registry.go): adding a policy is one new file
// pair, one line there, and its test.
//
// Factories receive the shared context (seeded RNG, clock, predictor, telemetry) and the policy's
// options as JSON, which each factory validates into its own typed options struct — an unknown key
// or a bad value is an Error naming the policy.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/rng.h"
#include "policy/policy.h"

// Forward declarations keep this header light (no Eigen, no HTTP client for its includers).
namespace tessera::predict {
class Predictor;
}
namespace tessera::telemetry {
class Telemetry;
}

namespace tessera::policy {

struct PolicyContext {
  Rng* rng = nullptr;  // seeded by the driver; never null when a policy draws
  const Clock* clock = nullptr;
  const predict::Predictor* predictor = nullptr;    // needed by `predictive`
  const telemetry::Telemetry* telemetry = nullptr;  // optional: util(p) of the live partitions
};

// One option a policy accepts, for `tessera simulate --list-policies`.
struct OptionInfo {
  std::string name;
  std::string default_json;  // the default, as JSON text ("0", "[100,50,25]", "true")
  std::string help;          // one line
};

struct PolicyInfo {
  std::string name;
  std::string summary;           // one line, with the seed section it follows
  bool needs_predictor = false;  // MakePolicy fails without PolicyContext::predictor
  std::vector<OptionInfo> options;  // every option the factory accepts
};
// A policy with its options as one string, for command lines: "predictive" or
// 'predictive{"slo_headroom": 0.1}' (the name, then a JSON object).
struct PolicySpec {
  std::string name;
  nlohmann::json options;
};
[[nodiscard]] Expected<PolicySpec> ParsePolicySpec(std::string_view text);

// The entry for `name`, or nullopt.
std::optional<PolicyInfo> FindPolicy(std::string_view name);

[[nodiscard]] Expected<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                                           const PolicyContext& context,
                                                           const nlohmann::json& options = {});
std::vector<PolicyInfo> Policies();

// For factories: fails on any key of `options` not in `known`.
[[nodiscard]] Expected<void> RejectUnknownOptions(std::string_view policy,
                                                  const nlohmann::json& options,
                                                  const std::vector<std::string>& known);

}  // namespace tessera::policy
