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
  int max_moves_per_hour = k8s::EvictionOptions{}.max_per_hour;
  int max_moves_per_node_hour = k8s::EvictionOptions{}.max_per_node_hour;
  double eviction_retry_s = k8s::EvictionOptions{}.retry_s;
  int max_observations = 10000;
};

// kube-scheduler's own metric families, under Tessera's prefix (docs/kubernetes.md).
std::string SchedulerMetrics(const k8s::Scheduler& scheduler) {
  const k8s::SchedulerStats s = scheduler.stats();
  std::string out = fmt::format(
      "# TYPE tessera_scheduler_leader gauge\ntessera_scheduler_leader {}\n"
      "# TYPE tessera_scheduler_bound_total counter\n"
      "tessera_scheduler_bound_total {}\n"
      "# TYPE tessera_scheduler_bind_failures_total counter\n"
      "tessera_scheduler_bind_failures_total {}\n"
      "# TYPE tessera_scheduler_invalid_pods_total counter\n"
      "tessera_scheduler_invalid_pods_total {}\n"
      "# TYPE tessera_scheduler_pending gauge\ntessera_scheduler_pending {}\n"
      "# TYPE tessera_scheduler_placed gauge\ntessera_scheduler_placed {}\n"
      "# TYPE tessera_scheduler_rebuilds_total counter\n"
      "tessera_scheduler_rebuilds_total {}\n"
      "# TYPE tessera_scheduler_resizes_refused_total counter\n"
      "tessera_scheduler_resizes_refused_total {}\n"
      "# TYPE tessera_scheduler_observations_total counter\n"
      "tessera_scheduler_observations_total {}\n"
      "# TYPE tessera_scheduler_observations_restored_total counter\n"
      "tessera_scheduler_observations_restored_total {}\n",
      s.leading ? 1 : 0, s.bound, s.bind_failures, s.invalid_pods, s.pending, s.placed, s.rebuilds,
      s.resizes_refused, s.observations, s.observations_restored);
  // kube-scheduler's pending_pods, schedule_attempts_total, scheduling_attempt_duration_seconds.
  out += fmt::format(
      "# TYPE tessera_scheduler_pending_pods gauge\n"
      "tessera_scheduler_pending_pods{{queue=\"active\"}} {}\n"
      "tessera_scheduler_pending_pods{{queue=\"unschedulable\"}} {}\n"
      "# TYPE tessera_scheduler_schedule_attempts_total counter\n"
      "# TYPE tessera_scheduler_scheduling_attempt_duration_seconds histogram\n",
      s.pending - std::min(s.pending, s.unschedulable_pending), s.unschedulable_pending);
  for (const auto& [result, a] : s.attempts) {
    const std::string labels =
        fmt::format("result=\"{}\",profile=\"{}\"", result, scheduler.policy());
    out += fmt::format("tessera_scheduler_schedule_attempts_total{{{}}} {}\n", labels, a.count);
    int64_t cumulative = 0;
    for (size_t i = 0; i < a.buckets.size(); ++i) {
      cumulative += a.buckets[i];
      out += fmt::format(
          "tessera_scheduler_scheduling_attempt_duration_seconds_bucket{{{},le=\"{}\"}} {}\n",
          labels, k8s::SchedulerStats::kLatencyBuckets[i], cumulative);
    }
    out += fmt::format(
        "tessera_scheduler_scheduling_attempt_duration_seconds_bucket{{{},le=\"+Inf\"}} {}\n"
        "tessera_scheduler_scheduling_attempt_duration_seconds_sum{{{}}} {}\n"
        "tessera_scheduler_scheduling_attempt_duration_seconds_count{{{}}} {}\n",
        labels, a.count, labels, a.sum_s, labels, a.count);
  }
  out +=
      "# HELP tessera_scheduler_evictions_total What became of the policies' evictions.\n"
      "# TYPE tessera_scheduler_evictions_total counter\n";
  for (const auto& [key, n] : scheduler.eviction_counts()) {
    out += fmt::format("tessera_scheduler_evictions_total{{policy=\"{}\",result=\"{}\"}} {}\n",
                       key.first, key.second, n);
  }
  // Per pod: what it was predicted to serve, what it serves, whether its SLO is met.
  out +=
      "# TYPE tessera_pod_predicted_qps gauge\n# TYPE tessera_pod_observed_qps gauge\n"
      "# TYPE tessera_pod_slo_met gauge\n";
  for (const k8s::StatusNode& n : scheduler.Status().nodes) {
    for (const k8s::StatusGpu& g : n.gpus) {
      for (const k8s::StatusPartition& p : g.partitions) {
        for (const k8s::StatusPod& pod : p.pods) {
          const size_t slash = pod.name.find('/');
          const std::string labels =
              fmt::format("namespace=\"{}\",pod=\"{}\"", pod.name.substr(0, slash),
                          slash == std::string::npos ? "" : pod.name.substr(slash + 1));
          if (pod.predicted_qps) {
            out += fmt::format("tessera_pod_predicted_qps{{{}}} {}\n", labels, *pod.predicted_qps);
          }
          if (pod.observed_qps) {
            out += fmt::format("tessera_pod_observed_qps{{{}}} {}\n", labels, *pod.observed_qps);
          }
          if (pod.slo != k8s::StatusPod::Slo::kUnknown) {
            out += fmt::format("tessera_pod_slo_met{{{}}} {}\n", labels,
                               pod.slo == k8s::StatusPod::Slo::kMet ? 1 : 0);
          }
        }
      }
    }
  }
  return out;
}

std::string DefaultIdentity() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  return fmt::format("{}_{:08x}", host, rd());
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
  k8s::SchedulerConfig cfg;
  cfg.scheduler_name = f.scheduler_name;
  cfg.policy = options->name;
  cfg.policy_options = options->options;
  cfg.seed = f.common.seed;
  cfg.predictor = inputs->predictor.get();
  cfg.learner = inputs->predictor.get();
  cfg.telemetry = inputs->telemetry_view();
  // drmaestro's φ: seconds per query on a whole GPU of each model, from the predictor's profile
  // once at startup (an app the predictor learns later stays unknown: a neutral cost). Declared
  // before the scheduler, so it outlives it.
  policy::JobProfiles job_profiles;
  if (inputs->predictor) {
    job_profiles = policy::JobProfilesFromPredictor(*inputs->predictor);
    cfg.job_profiles = &job_profiles;
    spdlog::info(
        "tessera schedule: job profiles for {} applications (whole-GPU cells of the profile)",
        job_profiles.size());
  }
  if (inputs->telemetry) {
    cfg.watch_qps = [t = inputs->telemetry.get()](std::map<std::string, std::string> q) {
      t->SetWorkloadQueries(std::move(q));
    };
  }
  cfg.evictions.mode = *eviction_mode;
  cfg.evictions.max_per_hour = f.max_moves_per_hour;
  cfg.evictions.max_per_node_hour = f.max_moves_per_node_hour;
  cfg.evictions.retry_s = f.eviction_retry_s;
  cfg.max_observations = static_cast<size_t>(f.max_observations);
  cfg.leader.namespace_ =
      f.lease_namespace.empty() ? (*api)->credentials().namespace_ : f.lease_namespace;
  cfg.leader.name = f.lease_name;
  cfg.leader.identity = f.identity.empty() ? DefaultIdentity() : f.identity;
  cfg.leader.lease_duration_s = f.lease_duration_s;
  cfg.leader.renew_deadline_s = f.renew_deadline_s;
  cfg.leader.retry_period_s = f.retry_period_s;
  cfg.inventory_poll_s = f.inventory_poll_s;
  k8s::Scheduler scheduler(**api, **store, clock, cfg);
  if (auto ok = scheduler.Start(); !ok) return Failed(ok.error());
  // /healthz and /readyz for the Deployment's probes, /metrics for Prometheus; GETs only.
  httplib::Server http;
  ApplyHttpLimits(http, kGetOnlyLimits, "tessera-schedule");
  ServeHealth(http, scheduler.health());
  http.Get("/metrics", [&scheduler](const httplib::Request&, httplib::Response& res) {
    res.set_content(SchedulerMetrics(scheduler), "text/plain; version=0.0.4");
  });
  // The live status page (k8s/status_page.h): nodes, GPUs, partitions, pods, queue, moves.
  http.Get("/status", [&scheduler](const httplib::Request&, httplib::Response& res) {
    res.set_content(k8s::StatusHtml(scheduler.Status()), "text/html; charset=utf-8");
  });
  const int port = listen->second == 0
                       ? http.bind_to_any_port(listen->first)
                       : (http.bind_to_port(listen->first, listen->second) ? listen->second : -1);
  if (port < 0) {
    scheduler.Stop();
    return Failed("cannot listen on {}", f.listen);
  }
  std::thread http_thread([&] { http.listen_after_bind(); });
  daemon_flags::InstallSignals();
  spdlog::info(
      "tessera schedule: {} as {}, policy {}, store {}, /healthz, /readyz, /status and /metrics on "
      "{}",
      cfg.scheduler_name, cfg.leader.identity, cfg.policy, (*store)->Name(),
      JoinHostPort(listen->first, port));
  daemon_flags::WaitForStop();
  spdlog::info("tessera schedule: signal received, releasing the Lease");
  scheduler.Stop();
  http.stop();
  http_thread.join();
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
  sub->callback([f, status] { *status = RunSchedule(*f); });
}

}  // namespace tessera::cli
