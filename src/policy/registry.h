#pragma once
// The policy registry: every policy, by name, with its factory. registry.cc is the ONE place a
// policy is registered (kube-scheduler plugins/registry.go): adding a policy is one new file
// pair, one line there, and its test.
//
// Factories receive the shared context (seeded RNG, clock, predictor, telemetry, the workload's
// typical pods) and the policy's options as JSON. MakePolicy rejects any key the policy's
// PolicyInfo::options does not list (so what --list-policies shows is exactly what is accepted);
// each policy then parses its options into its own typed struct, beside the policy — a bad value
// is an Error naming the policy and the option. An option given as JSON null is its default.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/rng.h"
#include "policy/job_profile.h"
#include "policy/policy.h"

// Forward declarations keep this header light (no Eigen, no HTTP client for its includers).
namespace tessera::predict {
class Predictor;
}
namespace tessera::telemetry {
class Telemetry;
}

namespace tessera::policy {

class ShapeDistribution;  // policy/frag.h

// What the driver knows and any policy may use; all borrowed, all outliving MakePolicy's result.
// Drivers fill in data, never per-policy choices: no driver names a policy.
struct PolicyContext {
  Rng* rng = nullptr;  // seeded by the driver; never null when a policy draws
  const Clock* clock = nullptr;
  const predict::Predictor* predictor = nullptr;    // needed by `predictive`
  const telemetry::Telemetry* telemetry = nullptr;  // optional: util(p) of the live partitions
  // Optional: the workload's typical pod shapes, where the driver knows the workload up front
  // (openb: 95% of the trace). The fragmentation policies use it unless their "typical_pods"
  // option overrides it; null: they learn the mix online from the arrivals.
  const ShapeDistribution* typical_pods = nullptr;
  // Optional: where a policy may fold what it observes (Predictor::Observe) — the same
  // predictor as `predictor` when the driver lets policies learn (slo-aware's `observe`).
  predict::Predictor* learner = nullptr;
  // Optional: offline profiles of batch applications (drmaestro's φ); null or an app missing:
  // unknown, a neutral cost.
  const JobProfiles* job_profiles = nullptr;
  // The driver restarts a workload a policy moves (Eviction::requeue): the simulator does;
  // Kubernetes only behind its flag. Policies propose moves only when it is set.
  bool can_move = false;
  // How far back a workload's QPS (Telemetry::WorkloadQps) reaches: a rate read less than this
  // after a change still mixes in the time before it. Kubernetes: a rate over a window
  // (`tessera schedule --qps-min-age`); the simulator's is the rate now, 0.
  double qps_window_s = 0;
  // Only the options are checked (CheckPolicyOptions): a factory that needs more than a
  // seeded Rng and a clock returns a null policy once its options parse.
  bool options_only = false;
};

// One option a policy accepts, for `tessera simulate --list-policies`.
struct OptionInfo {
  std::string name;
  std::string default_json;  // the default, as JSON text ("0", "[100,50,25]", "true")
  std::string help;          // one line
};

struct PolicyInfo {
  std::string name;
  std::string summary;              // one line, with the seed section it follows
  bool needs_predictor = false;     // MakePolicy fails without PolicyContext::predictor
  std::vector<OptionInfo> options;  // every option the factory accepts
  // False for the policies that share GPUs by memory and reserve no compute (best-effort
  // slices, usage_view.h): the packing experiments measure allocated compute, so their default
  // policy set leaves these out.
  bool allocates_compute = true;
  // The experiment whose world shows the policy at work (`tessera explain` builds a small one
  // like it): "thesis" unless it needs another's inputs (an online service's load, job
  // profiles, memory-use series).
  std::string world = "thesis";
  // The Prometheus series the policy reads in a cluster (through Telemetry): a daemon started
  // with it checks that Prometheus has each one and refuses to start, naming the first missing.
  std::vector<std::string> series;
  // Decides many placements at once (PlaceBatch: drmaestro, muxflow's matching): served by
  // `tessera schedule` only; the extender, which is asked one pod at a time, refuses it.
  bool batch = false;
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

// Checks a policy's name and options as MakePolicy would, without the data a driver gives it
// (predictor, telemetry): the command line's up-front check, so that a bad option value is a
// usage error before any run starts. An Error names the policy and the option.
[[nodiscard]] Expected<void> CheckPolicyOptions(const PolicySpec& spec);

// Fails unless `options` is null or an object whose keys all appear in `known` (MakePolicy runs
// this with the policy's PolicyInfo::options before its factory).
[[nodiscard]] Expected<void> RejectUnknownOptions(std::string_view policy,
                                                  const nlohmann::json& options,
                                                  const std::vector<OptionInfo>& known);

// For option parsers: reads options[key] into `field` when it is there and not null (otherwise
// `field` keeps its default); a value of the wrong type is an Error naming the policy and option.
template <typename T>
[[nodiscard]] Expected<void> ReadOption(std::string_view policy, const nlohmann::json& options,
                                        const char* key, T& field) {
  if (!options.is_object() || !options.contains(key) || options.at(key).is_null()) return {};
  try {
    field = options.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    return Fail("policy {}: option '{}': {}", policy, key, e.what());
  }
  return {};
}

// For option parsers: fails unless lo ≤ value ≤ hi, naming the policy and the option.
[[nodiscard]] Expected<void> OptionWithin(std::string_view policy, const char* key, double value,
                                          double lo, double hi);

}  // namespace tessera::policy
