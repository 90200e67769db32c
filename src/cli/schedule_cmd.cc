// `tessera schedule`: Tessera as the Kubernetes scheduler for pods with
// spec.schedulerName: tessera (DESIGN §6; docs/kubernetes.md). Runs until SIGTERM or SIGINT,
// then releases its Lease so a standby replica takes over at once.
#include <httplib.h>
#include <unistd.h>

#include <random>

#include "base/daemon_http.h"
#include "cli/commands.h"
#include "cli/daemon_flags.h"
#include "cli/number_flags.h"
#include "cli/policy_inputs.h"
#include "k8s/scheduler.h"
#include "k8s/scheduler_metrics.h"
#include "k8s/status_page.h"
#include "policy/job_profile.h"
#include "telemetry/prometheus_telemetry.h"

namespace tessera::cli {
namespace {

struct ScheduleFlags {
  daemon_flags::Common common;
  PolicyInputFlags inputs;
  std::string scheduler_name = "tessera";
  std::string identity;
  std::string lease_namespace;
  std::string lease_name = "tessera-scheduler";
  double lease_duration_s = 15;
  double renew_deadline_s = 10;
  double retry_period_s = 2;
  double inventory_poll_s = 5;
  std::string listen = "0.0.0.0:10259";
  std::string evictions = "off";
  bool preemption = true;
  int max_moves_per_hour = k8s::EvictionOptions{}.max_per_hour;
  int max_moves_per_node_hour = k8s::EvictionOptions{}.max_per_node_hour;
  double eviction_retry_s = k8s::EvictionOptions{}.retry_s;
  int max_observations = 10000;
  double qps_min_age_s = 60;  // the default --qps-query's window
};

std::string DefaultIdentity() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  return fmt::format("{}_{:08x}", host, rd());
}

// The scheduler's configuration from the flags and the opened inputs. drmaestro's φ — seconds
// per query on a whole GPU of each model — comes from the predictor's profile, once at start
// (an app it learns later stays unknown: a neutral cost), into `job_profiles`, which must
// outlive the scheduler.
k8s::SchedulerConfig ConfigFrom(const ScheduleFlags& f, const policy::PolicySpec& options,
                                k8s::EvictionOptions::Mode evictions, const k8s::ApiClient& api,
                                PolicyInputs& inputs, policy::JobProfiles& job_profiles) {
  k8s::SchedulerConfig cfg;
  cfg.scheduler_name = f.scheduler_name;
  cfg.policy = options.name;
  cfg.policy_options = options.options;
  cfg.seed = f.common.seed;
  cfg.predictor = inputs.predictor.get();
  cfg.learner = inputs.predictor.get();
  cfg.telemetry = inputs.telemetry_view();
  if (inputs.predictor) {
    job_profiles = policy::JobProfilesFromPredictor(*inputs.predictor);
    cfg.job_profiles = &job_profiles;
    spdlog::info(
        "tessera schedule: job profiles for {} applications (whole-GPU cells of the profile)",
        job_profiles.size());
  }
  if (inputs.telemetry) {
    cfg.watch_qps = [t = inputs.telemetry.get()](std::map<std::string, std::string> q) {
      t->SetWorkloadQueries(std::move(q));
    };
  }
  cfg.evictions = {.mode = evictions,
                   .max_per_hour = f.max_moves_per_hour,
                   .max_per_node_hour = f.max_moves_per_node_hour,
                   .retry_s = f.eviction_retry_s};
  cfg.preemption = f.preemption;
  cfg.max_observations = static_cast<size_t>(f.max_observations);
  cfg.qps_min_age_s = f.qps_min_age_s;
  cfg.leader.namespace_ =
      f.lease_namespace.empty() ? api.credentials().namespace_ : f.lease_namespace;
  cfg.leader.name = f.lease_name;
  cfg.leader.identity = f.identity.empty() ? DefaultIdentity() : f.identity;
  cfg.leader.lease_duration_s = f.lease_duration_s;
  cfg.leader.renew_deadline_s = f.renew_deadline_s;
  cfg.leader.retry_period_s = f.retry_period_s;
  cfg.inventory_poll_s = f.inventory_poll_s;
  return cfg;
}

// /healthz and /readyz for the Deployment's probes, /metrics for Prometheus, the /status page;
// GETs only. Serves until a signal; false when it cannot listen.
bool Serve(k8s::Scheduler& scheduler, const k8s::SchedulerConfig& cfg, const std::string& store,
           const std::pair<std::string, int>& listen) {
  httplib::Server http;
  ApplyHttpLimits(http, kGetOnlyLimits, "tessera-schedule");
  ServeHealth(http, scheduler.health());
  http.Get("/metrics", [&scheduler](const httplib::Request&, httplib::Response& res) {
    res.set_content(k8s::MetricsText(scheduler), "text/plain; version=0.0.4");
  });
  http.Get("/status", [&scheduler](const httplib::Request&, httplib::Response& res) {
    res.set_content(k8s::StatusHtml(scheduler.Status()), "text/html; charset=utf-8");
  });
  const int port = listen.second == 0
                       ? http.bind_to_any_port(listen.first)
                       : (http.bind_to_port(listen.first, listen.second) ? listen.second : -1);
  if (port < 0) return false;
  std::thread http_thread([&] { http.listen_after_bind(); });
  daemon_flags::InstallSignals();
  spdlog::info(
      "tessera schedule: {} as {}, policy {}, store {}, /healthz, /readyz, /status and /metrics on "
      "{}",
      cfg.scheduler_name, cfg.leader.identity, cfg.policy, store, JoinHostPort(listen.first, port));
  daemon_flags::WaitForStop();
  spdlog::info("tessera schedule: signal received, releasing the Lease");
  http.stop();
  http_thread.join();
  return true;
}

Status RunSchedule(const ScheduleFlags& f) {
  daemon_flags::LogToStderr("tessera-schedule");
  SteadyClock clock;
  auto options = daemon_flags::PolicyOptions(f.common);
  if (!options) return Usage(options.error());
  if (auto ok = daemon_flags::CheckPolicyHasProfile(*options, f.inputs.profile); !ok) {
    return Usage(ok.error());
  }
  auto listen = ParseListenAddress(f.listen);
  if (!listen) return Usage("--listen: {}", listen.error().message);
  if (f.renew_deadline_s >= f.lease_duration_s) {
    return Usage("--renew-deadline must be below --lease-duration");
  }
  if (auto ok = CheckPolicyInputFlags(f.inputs); !ok) return Usage(ok.error());
  if (auto ok = CheckPolicyHasPrometheus(options->name, f.inputs); !ok) return Usage(ok.error());
  auto eviction_mode = k8s::ParseEvictionMode(f.evictions);
  if (!eviction_mode) return Usage("--{}", eviction_mode.error().message);
  auto store = daemon_flags::OpenStore(f.common, clock);
  if (!store) return Usage(store.error());
  auto api = daemon_flags::Connect(f.common);
  if (!api) return Failed(api.error());
  auto inputs = OpenPolicyInputs(f.inputs, clock);
  if (!inputs) return Failed(inputs.error());
  if (auto ok = CheckPolicySeries(options->name, *inputs); !ok) return Failed(ok.error());
  policy::JobProfiles job_profiles;  // outlives the scheduler
  const k8s::SchedulerConfig cfg =
      ConfigFrom(f, *options, *eviction_mode, **api, *inputs, job_profiles);
  k8s::Scheduler scheduler(**api, **store, clock, cfg);
  if (auto ok = scheduler.Start(); !ok) return Failed(ok.error());
  const bool served = Serve(scheduler, cfg, (*store)->Name(), *listen);
  scheduler.Stop();
  if (!served) return Failed("cannot listen on {}", f.listen);
  return {};
}

}  // namespace

void AddSchedule(CLI::App& app, Status* status) {
  auto f = std::make_shared<ScheduleFlags>();
  CLI::App* sub = app.add_subcommand(
      "schedule", "Run as a Kubernetes scheduler for pods with schedulerName: tessera");
  daemon_flags::AddCommon(sub, f->common);
  AddPolicyInputFlags(sub, f->inputs);
  sub->add_option("--scheduler-name", f->scheduler_name, "spec.schedulerName to serve")
      ->capture_default_str();
  sub->add_option("--identity", f->identity,
                  "This replica's Lease identity (default: host name + random suffix)")
      ->envname("POD_NAME");
  sub->add_option("--lease-namespace", f->lease_namespace,
                  "Namespace of the Lease (default: the service account's namespace)");
  sub->add_option("--lease-name", f->lease_name, "Name of the Lease")->capture_default_str();
  sub->add_option("--lease-duration", f->lease_duration_s,
                  "Seconds a Lease lasts unrenewed, 1..3600")
      ->check(Seconds(1, 3600))
      ->capture_default_str();
  sub->add_option("--renew-deadline", f->renew_deadline_s,
                  "Seconds after the last renewal at which the leader stops scheduling, "
                  "0.1..3600 and below --lease-duration")
      ->check(Seconds(0.1, 3600))
      ->capture_default_str();
  sub->add_option("--retry-period", f->retry_period_s, "Seconds between Lease attempts, 0.1..600")
      ->check(Seconds(0.1, 600))
      ->capture_default_str();
  sub->add_option("--inventory-poll", f->inventory_poll_s,
                  "Seconds between reads of the agents' inventories in the store, 0.1..3600")
      ->check(Seconds(0.1, 3600))
      ->capture_default_str();
  sub->add_option("--listen", f->listen,
                  "host:port for /healthz, /readyz, /metrics and the /status page")
      ->capture_default_str();
  sub->add_option("--evictions", f->evictions,
                  "How policies' evictions and moves reach the cluster: off, dry-run (recorded "
                  "and counted only) or on (the Eviction API, which honours "
                  "PodDisruptionBudgets)")
      ->capture_default_str();
  sub->add_flag("--preemption,!--no-preemption", f->preemption,
                "A pod that fits nowhere has pods of lower priority evicted for it (with "
                "--evictions on; not one whose preemptionPolicy is Never)")
      ->capture_default_str();
  sub->add_option("--max-moves-per-hour", f->max_moves_per_hour,
                  "Evictions in any hour, cluster-wide, 0..100000")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  sub->add_option("--max-moves-per-node-hour", f->max_moves_per_node_hour,
                  "Evictions in any hour per node, 0..100000")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  sub->add_option("--eviction-retry", f->eviction_retry_s,
                  "Seconds before an eviction a disruption budget refused (429) is tried again, "
                  "1..3600")
      ->check(Seconds(1, 3600))
      ->capture_default_str();
  sub->add_option("--max-observations", f->max_observations,
                  "Observed QPS kept in the store for the next leader (the newest), 0..1000000")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  sub->add_option("--qps-min-age", f->qps_min_age_s,
                  "Seconds a pod must have been placed before its QPS is read, 0..3600: at least "
                  "the window of --qps-query's rate (a younger pod reads low)")
      ->check(Seconds(0, 3600))
      ->capture_default_str();
  sub->callback([f, status] { *status = RunSchedule(*f); });
}

}  // namespace tessera::cli
