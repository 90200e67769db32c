#include "cli/policy_inputs.h"

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
                  "needed by --policy predictive");
  sub->add_option("--interference", f.interference,
                  "Interference CSV (kind,victim,aggressor,value,count,variance)");
  sub->add_option("--prometheus", f.prometheus,
                  "Prometheus URL for util(p) (GR_ENGINE_ACTIVE of the agents or dcgm-exporter)");
  sub->add_option("--telemetry-interval", f.telemetry_interval_s,
                  "Seconds between Prometheus refreshes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

Expected<void> CheckPolicyInputFlags(const PolicyInputFlags& f) {
  if (!f.interference.empty() && f.profile.empty()) {
    return Fail("--interference needs --profile (interference rows are profiled applications)");
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
    Expected<predict::Predictor> p =
        predict::Predictor::Create(std::move(*profile), std::move(interference));
    if (!p) return Fail("{}: {}", f.profile, p.error().message);
    in.predictor = std::make_unique<predict::Predictor>(std::move(*p));
  }
  if (!f.prometheus.empty()) {
    telemetry::PrometheusTelemetryOptions o;
    o.server.url = f.prometheus;
    auto t = telemetry::PrometheusTelemetry::Create(o, clock);
    if (!t) return std::unexpected(t.error());
    in.telemetry = std::move(*t);
    in.telemetry->StartPolling(f.telemetry_interval_s);
  }
  return in;
}

}  // namespace tessera::cli
