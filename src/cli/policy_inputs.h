#pragma once
// What predicting policies read in the daemons (`tessera schedule`, `tessera extender`): a
// predictor completed from profile CSV files the operator measured (`--profile`,
// `--interference`; the long CSV forms of docs/prediction.md), with the applications' features
// from the start where given (`--features`, the CSV `tessera predict` reads), and utilisation from
// a Prometheus server scraping the agents or dcgm-exporter (`--prometheus`). Both optional;
// `--policy predictive` needs `--profile`. This header stays light (no Eigen, no HTTP client):
// the command files that include cpp-httplib include it too.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/error.h"

namespace tessera::predict {
class Predictor;
}
namespace tessera::telemetry {
class Telemetry;
class PrometheusTelemetry;
}  // namespace tessera::telemetry

namespace tessera::cli {

struct PolicyInputFlags {
  std::string profile;       // profile matrix CSV
  std::string interference;  // interference matrices CSV
  std::string features;      // app,feature,value CSV the predictor reads from the start
  std::string prometheus;    // http(s)://host:port
  double telemetry_interval_s = 5;
  double telemetry_window_s = 300;  // series history fetched at each refresh
  double telemetry_step_s = 5;      // its resolution
  std::string qps_query;            // per-pod QPS PromQL template; "" for Triton's counter
};

void AddPolicyInputFlags(CLI::App* sub, PolicyInputFlags& f);

struct PolicyInputs {
  PolicyInputs();
  PolicyInputs(PolicyInputs&&) noexcept;
  ~PolicyInputs();                                            // stops the telemetry poller
  std::unique_ptr<predict::Predictor> predictor;              // null without --profile
  std::unique_ptr<telemetry::PrometheusTelemetry> telemetry;  // null without --prometheus
  const telemetry::Telemetry* telemetry_view() const;         // telemetry as the interface
};

// Whether the flags go together (--interference needs --profile): a usage error if not.
[[nodiscard]] Expected<void> CheckPolicyInputFlags(const PolicyInputFlags& f);

// A policy that reads series in a cluster (PolicyInfo::series) needs --prometheus: a usage
// error naming them if it is missing.
[[nodiscard]] Expected<void> CheckPolicyHasPrometheus(std::string_view policy,
                                                      const PolicyInputFlags& f);
// Whether Prometheus has those series: an Error naming the policy and the first one missing.
[[nodiscard]] Expected<void> CheckPolicySeries(std::string_view policy, const PolicyInputs& in);

// Checks the flags (CheckPolicyInputFlags), loads and completes the matrices and starts polling
// Prometheus. An error names the file and line, or the URL.
[[nodiscard]] Expected<PolicyInputs> OpenPolicyInputs(const PolicyInputFlags& f,
                                                      const Clock& clock);

}  // namespace tessera::cli
