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
};

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
  auto store = daemon_flags::OpenStore(f.common, clock);
  if (!store) return Usage(store.error());
  auto api = daemon_flags::Connect(f.common);
  if (!api) return Failed(api.error());
  auto inputs = OpenPolicyInputs(f.inputs, clock);
  if (!inputs) return Failed(inputs.error());
  k8s::SchedulerConfig cfg;
  cfg.scheduler_name = f.scheduler_name;
  cfg.policy = options->name;
  cfg.policy_options = options->options;
  cfg.seed = f.common.seed;
  cfg.predictor = inputs->predictor.get();
  cfg.learner = inputs->predictor.get();
  cfg.telemetry = inputs->telemetry_view();
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
    const k8s::SchedulerStats s = scheduler.stats();
    res.set_content(
        fmt::format("# TYPE tessera_scheduler_leader gauge\ntessera_scheduler_leader {}\n"
                    "# TYPE tessera_scheduler_bound_total counter\n"
                    "tessera_scheduler_bound_total {}\n"
                    "# TYPE tessera_scheduler_bind_failures_total counter\n"
                    "tessera_scheduler_bind_failures_total {}\n"
                    "# TYPE tessera_scheduler_invalid_pods_total counter\n"
                    "tessera_scheduler_invalid_pods_total {}\n"
                    "# TYPE tessera_scheduler_pending gauge\ntessera_scheduler_pending {}\n"
                    "# TYPE tessera_scheduler_placed gauge\ntessera_scheduler_placed {}\n"
                    "# TYPE tessera_scheduler_rebuilds_total counter\n"
                    "tessera_scheduler_rebuilds_total {}\n",
                    s.leading ? 1 : 0, s.bound, s.bind_failures, s.invalid_pods, s.pending,
                    s.placed, s.rebuilds),
        "text/plain; version=0.0.4");
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
      "tessera schedule: {} as {}, policy {}, store {}, /healthz, /readyz and /metrics on {}",
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
  sub->add_option("--listen", f->listen, "host:port for /healthz, /readyz and /metrics")
      ->capture_default_str();
  sub->callback([f, status] { *status = RunSchedule(*f); });
}

}  // namespace tessera::cli
