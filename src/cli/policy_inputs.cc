#include "cli/policy_inputs.h"

#include <fmt/ranges.h>

#include "cli/number_flags.h"
#include "policy/registry.h"
#include "predict/features.h"
#include "predict/interference.h"
#include "predict/predictor.h"
#include "telemetry/prometheus_telemetry.h"

namespace tessera::cli {

PolicyInputs::PolicyInputs() = default;
PolicyInputs::PolicyInputs(PolicyInputs&&) noexcept = default;
PolicyInputs::~PolicyInputs() = default;
const telemetry::Telemetry* PolicyInputs::telemetry_view() const { return telemetry.get(); }

void AddPolicyInputFlags(CLI::App* sub, PolicyInputFlags& f) {
  sub->add_option("--profile", f.profile,
                  "Profile matrix CSV (row,column,value,count,variance) the predictor completes; "
                  "needed by the policies that predict (--list-policies)");
  sub->add_option("--interference", f.interference,
                  "Interference CSV (kind,victim,aggressor,value,count,variance)");
  sub->add_option("--features", f.features,
                  "Feature CSV (app,feature,value, as tessera predict reads it): the "
                  "applications' features the predictor completes the profile with from the "
                  "start; without it an application's features arrive with its first pod's "
                  "tessera.io/feature.* annotations");
  sub->add_option("--prometheus", f.prometheus,
                  "Prometheus URL of the agents' or dcgm-exporter's series: util(p), memory, SM "
                  "and bandwidth activity, power, and each pod's own use (docs/kubernetes.md)");
  sub->add_option("--telemetry-interval", f.telemetry_interval_s,
                  "Seconds between Prometheus refreshes, 0.1..3600")
      ->check(Seconds(0.1, 3600))
      ->capture_default_str();
  sub->add_option("--telemetry-window", f.telemetry_window_s,
                  "Seconds of memory, SM and bandwidth history fetched at each refresh (the "
                  "usage-aware policies' windows must fit in it), 1..604800")
      ->check(Seconds(1, 604800))
      ->capture_default_str();
  sub->add_option("--telemetry-step", f.telemetry_step_s,
                  "Resolution of that history in seconds (no finer than the scrape interval), "
                  "0.1..3600")
      ->check(Seconds(0.1, 3600))
      ->capture_default_str();
  sub->add_option("--qps-query", f.qps_query,
                  "PromQL for the QPS a pod serves, $namespace and $pod substituted (a pod's "
                  "tessera.io/qps-query annotation overrides it); default: NVIDIA Triton's "
                  "nv_inference_request_success as a 1 m rate (docs/kubernetes.md lists others)");
}

Expected<void> CheckPolicyInputFlags(const PolicyInputFlags& f) {
  if (!f.interference.empty() && f.profile.empty()) {
    return Fail("--interference needs --profile (interference rows are profiled applications)");
  }
  if (!f.features.empty() && f.profile.empty()) {
    return Fail("--features needs --profile (features complete the profile's rows)");
  }
  if (f.telemetry_step_s > f.telemetry_window_s) {
    return Fail("--telemetry-step {} s is longer than --telemetry-window {} s", f.telemetry_step_s,
                f.telemetry_window_s);
  }
  return {};
}

Expected<PolicyInputs> OpenPolicyInputs(const PolicyInputFlags& f, const Clock& clock) {
  if (auto ok = CheckPolicyInputFlags(f); !ok) return std::unexpected(ok.error());
  PolicyInputs in;
  if (!f.profile.empty()) {
    Expected<predict::ProfileMatrix> profile = predict::ProfileMatrix::LoadCsv(f.profile);
    if (!profile) return std::unexpected(profile.error());
    predict::InterferenceMatrices interference;
    if (!f.interference.empty()) {
      Expected<predict::InterferenceMatrices> im =
          predict::InterferenceMatrices::LoadCsv(f.interference);
      if (!im) return std::unexpected(im.error());
      interference = std::move(*im);
    }
    predict::FeatureTable features;
    if (!f.features.empty()) {
      Expected<predict::FeatureTable> table = predict::FeatureTable::LoadCsv(f.features);
      if (!table) return std::unexpected(table.error());
      features = std::move(*table);
    }
    Expected<predict::Predictor> p = predict::Predictor::Create(
        std::move(*profile), std::move(interference), {}, std::move(features));
    if (!p) return Fail("{}: {}", f.profile, p.error().message);
    in.predictor = std::make_unique<predict::Predictor>(std::move(*p));
  }
  if (!f.prometheus.empty()) {
    telemetry::PrometheusTelemetryOptions o;
    o.server.url = f.prometheus;
    o.memory_window_s = f.telemetry_window_s;
    o.memory_step_s = f.telemetry_step_s;
    if (!f.qps_query.empty()) o.qps_query = f.qps_query;
    auto t = telemetry::PrometheusTelemetry::Create(o, clock);
    if (!t) return std::unexpected(t.error());
    in.telemetry = std::move(*t);
    in.telemetry->StartPolling(f.telemetry_interval_s);
  }
  return in;
}

Expected<void> CheckPolicyHasPrometheus(std::string_view policy, const PolicyInputFlags& f) {
  const std::optional<policy::PolicyInfo> info = policy::FindPolicy(policy);
  if (!info || info->series.empty() || !f.prometheus.empty()) return {};
  return Fail("--policy {} reads {} from Prometheus: give --prometheus URL (docs/kubernetes.md)",
              policy, fmt::join(info->series, ", "));
}

Expected<void> CheckPolicySeries(std::string_view policy, const PolicyInputs& in) {
  const std::optional<policy::PolicyInfo> info = policy::FindPolicy(policy);
  if (!info || info->series.empty() || !in.telemetry) return {};
  if (auto ok = in.telemetry->RequireSeries(info->series); !ok) {
    return Fail("policy {}: {} (docs/kubernetes.md says what exports it)", policy,
                ok.error().message);
  }
  return {};
}

}  // namespace tessera::cli
