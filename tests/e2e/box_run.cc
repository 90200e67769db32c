#include "e2e/box_run.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "e2e/box_process.h"
#include "k8s/fake_api_server.h"
#include "policy/registry.h"
#include "predict/features.h"
#include "sim/apps.h"
#include "sim/embedded_apps.h"
#include "sim/online_offline.h"
#include "sim/thesis.h"
#include "sim/world.h"

namespace tessera::e2e {

using k8s::testing_support::FakeApiServer;
using k8s::testing_support::WriteKubeconfig;
namespace fs = std::filesystem;

namespace {

template <typename T>
T OrThrow(Expected<T> e) {
  if (!e) throw std::runtime_error(e.error().message);
  return std::move(*e);
}
void OrThrow(Expected<void> e) {
  if (!e) throw std::runtime_error(e.error().message);
}

// Starts a daemon that listens on a loopback port: `args(port)` on a fresh FreePort() until it
// answers `ready(port)`, three tries (a port found free may be taken before the daemon binds
// it). Returns the port.
int StartListening(Child& child, const std::string& name, const std::string& log,
                   const std::function<std::vector<std::string>(int)>& args,
                   const std::function<bool(int)>& ready) {
  for (int attempt = 1;; ++attempt) {
    const int port = FreePort();
    child = Child(name, args(port), log);
    try {
      WaitUntil(name, log, 60, [&] {
        if (!child.Running()) throw std::runtime_error(name + " exited");
        return ready(port);
      });
      return port;
    } catch (const std::runtime_error& e) {
      child.Stop();
      if (attempt == 3) throw std::runtime_error(std::string(e.what()) + "; see " + log);
    }
  }
}

std::string LeaseHolder(FakeApiServer& api) {
  auto lease = api.Get("leases", "tessera-system/tessera-scheduler");
  return lease ? (*lease)["spec"].value("holderIdentity", "") : "";
}

// Everything a run starts, stopped in reverse order when it goes out of scope.
struct Daemons {
  std::string dir, tessera;
  int redis_port = 0, exporter_port = 0, prometheus_port = 0;
  Child redis, exporter, prometheus;
  std::vector<Child> agents;
  std::map<std::string, Child> schedulers;     // identity -> process
  std::map<std::string, int> scheduler_ports;  // identity -> its --listen port
  std::vector<std::string> scheduler_args;     // without --identity and --listen

  std::string Log(const std::string& name) const { return dir + "/logs/" + name + ".log"; }

  // Times redis-server said it is ready, in its log (a restart appends to it).
  int RedisReadyCount() const {
    std::ifstream in(Log("redis"));
    std::string line;
    int n = 0;
    while (std::getline(in, line))
      n += line.find("Ready to accept connections") != std::string::npos;
    return n;
  }

  void StartRedis() {
    fs::create_directories(dir + "/redis");
    const int before = RedisReadyCount();
    redis = Child("redis-server",
                  {"redis-server", "--port", std::to_string(redis_port), "--bind", "127.0.0.1",
                   "--dir", dir + "/redis", "--save", "", "--appendonly", "no"},
                  Log("redis"));
    WaitUntil("redis-server", Log("redis"), 30, [&] { return RedisReadyCount() > before; });
  }

  void StartScheduler(const std::string& identity) {
    std::vector<std::string> args = scheduler_args;
    const int port = FreePort();
    scheduler_ports[identity] = port;
    args.insert(args.end(),
                {"--identity", identity, "--listen", fmt::format("127.0.0.1:{}", port)});
    schedulers[identity] = Child("tessera schedule " + identity, args, Log(identity));
  }
};

// The node daemons: one fake agent per GPU node, the pods' exporter, and Prometheus scraping
// both.
void StartNodeDaemons(Daemons& d, const RunSpec& spec, const KubeletOptions& ko) {
  std::vector<std::string> agent_targets;
  for (const auto& [node, file] : ko.node_files) {
    Child& agent = d.agents.emplace_back();
    const int port = StartListening(
        agent, "tessera agent " + node, d.Log("agent-" + node),
        [&, file = file](int p) {
          return std::vector<std::string>{
              spec.tessera,     "agent",
              "--fake",         file,
              "--listen",       fmt::format("127.0.0.1:{}", p),
              "--interval",     "0.25",
              "--store",        "redis",
              "--redis",        fmt::format("127.0.0.1:{}", d.redis_port),
              "--redis-prefix", "box:"};
        },
        [](int p) { return HttpOk(p, "/readyz"); });
    agent_targets.push_back(fmt::format("'127.0.0.1:{}'", port));
  }
  d.exporter_port = StartListening(
      d.exporter, "metrics_file_exporter", d.Log("exporter"),
      [&](int p) {
        return std::vector<std::string>{spec.exporter, "--dir", spec.dir + "/exporter", "--port",
                                        std::to_string(p)};
      },
      [](int p) { return HttpOk(p, "/ready"); });
  std::string targets;
  for (const std::string& t : agent_targets) targets += (targets.empty() ? "" : ", ") + t;
  std::ofstream(spec.dir + "/prometheus.yml") << fmt::format(
      "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n"
      "scrape_configs:\n"
      "  - job_name: tessera-agent\n    static_configs: [{{targets: [{}]}}]\n"
      "  - job_name: pods\n    honor_labels: true\n"
      "    static_configs: [{{targets: ['127.0.0.1:{}']}}]\n",
      targets, d.exporter_port);
  d.prometheus_port = StartListening(
      d.prometheus, "prometheus", d.Log("prometheus"),
      [&](int p) {
        return std::vector<std::string>{
            "prometheus", "--config.file=" + spec.dir + "/prometheus.yml",
            "--storage.tsdb.path=" + spec.dir + "/tsdb",
            fmt::format("--web.listen-address=127.0.0.1:{}", p), "--log.level=warn"};
      },
      [](int p) { return HttpOk(p, "/-/ready"); });
  // A policy that reads SysMonitor's metrics refuses to start before Prometheus holds them
  // (muxflow: "has no series DCGM_FI_PROF_SM_ACTIVE"): wait for every agent's first scrape.
  WaitUntil("prometheus's first scrape of the agents", d.Log("prometheus"), 60, [&] {
    httplib::Client c("127.0.0.1", d.prometheus_port);
    const auto r = c.Get("/api/v1/query?query=count(DCGM_FI_PROF_SM_ACTIVE)");
    if (!r || r->status != 200) return false;
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    return !j.is_discarded() && !j["data"]["result"].empty() &&
           std::stoi(j["data"]["result"][0]["value"][1].get<std::string>()) > 0;
  });
}

// `tessera schedule`'s flags for this run (without --identity and --listen); for a policy that
// predicts, the Profiler's samples written as the CSVs --profile and --interference read, and
// the catalogue's features as --features reads them.
std::vector<std::string> SchedulerArgs(const RunSpec& spec, const Daemons& d, sim::World& world,
                                       const std::string& policy,
                                       const std::function<sim::ProfileSamples()>& samples_of) {
  const int window = std::max(5, static_cast<int>(60 / spec.time_scale));
  std::vector<std::string> args = {
      spec.tessera, "schedule", "--kubeconfig", spec.dir + "/kubeconfig", "--policy", policy,
      "--seed", std::to_string(spec.seed), "--store", "redis", "--redis",
      fmt::format("127.0.0.1:{}", d.redis_port), "--redis-prefix", "box:", "--prometheus",
      fmt::format("http://127.0.0.1:{}", d.prometheus_port), "--telemetry-interval", "1",
      "--telemetry-step", "1", "--telemetry-window", "60", "--lease-namespace", "tessera-system",
      "--lease-duration", "2", "--renew-deadline", "1.5", "--retry-period", "0.2",
      "--inventory-poll", "0.5", "--evictions", "on",
      // Triton's counter as the default query reads it, over a window scaled as time is
      // (1 m ÷ K, at least 5 scrapes), read once a pod is as old as the window.
      "--qps-query",
      fmt::format("sum(rate(nv_inference_request_success{{"
                  "namespace=\"$namespace\",pod=\"$pod\"}}[{}s]))",
                  window),
      "--qps-min-age", std::to_string(window)};
  const std::optional<policy::PolicyInfo> info =
      policy::FindPolicy(std::string_view(policy).substr(0, policy.find('{')));
  if (info && info->needs_predictor) {
    sim::ProfileSamples samples = samples_of();
    const std::string profile = spec.dir + "/profile.csv";
    const std::string interference = spec.dir + "/interference.csv";
    OrThrow(samples.TakeProfile().SaveCsv(profile));
    OrThrow(samples.TakeInterference().SaveCsv(interference));
    // The simulator's predictor knows every catalogued app's features from the start.
    const std::string features = spec.dir + "/features.csv";
    OrThrow(sim::CatalogFeatures(world.physics.catalog()).SaveCsv(features));
    args.insert(args.end(),
                {"--profile", profile, "--interference", interference, "--features", features});
  }
  return args;
}

// The leader's counters of what it observed, bound and evicted, from its /metrics.
std::vector<std::string> LeaderCounters(const Daemons& d, const std::string& leader) {
  std::vector<std::string> out;
  const auto port = d.scheduler_ports.find(leader);
  if (port == d.scheduler_ports.end()) return out;
  httplib::Client c("127.0.0.1", port->second);
  c.set_read_timeout(5);
  const auto r = c.Get("/metrics");
  if (!r || r->status != 200) return out;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    for (const char* name :
         {"tessera_scheduler_observations_total", "tessera_scheduler_evictions_total",
          "tessera_scheduler_bound_total", "tessera_scheduler_rebuilds_total"}) {
      if (line.rfind(name, 0) == 0) out.push_back(line);
    }
  }
  return out;
}

// The faults of a run, each at its time: applied by Due as the run's clock passes them.
class FaultPlan {
 public:
  FaultPlan(const RunSpec& spec, const std::vector<model::Workload>& workloads) {
    double last_arrival = 0;
    for (const model::Workload& w : workloads) last_arrival = std::max(last_arrival, w.arrival_s);
    for (size_t i = 0; i < spec.faults.size(); ++i) {
      at_[spec.faults[i]] = last_arrival * (0.25 + 0.5 * static_cast<double>(i) /
                                                       std::max<size_t>(1, spec.faults.size()));
    }
  }
  // Injects what is due at `t`, undoes what has lasted long enough; `note` logs each step.
  void Due(double t, Daemons& d, FakeApiServer& api,
           const std::function<void(double, const std::string&)>& note) {
    for (auto it = at_.begin(); it != at_.end();) {
      if (t < it->second) {
        ++it;
        continue;
      }
      const std::string f = it->first;
      it = at_.erase(it);
      Inject(f, t, d, api, note);
    }
    if (restart_killed_at_ && t >= *restart_killed_at_) {
      d.StartScheduler(killed_);
      note(t, fmt::format("{} started again; leader now {}", killed_, LeaseHolder(api)));
      restart_killed_at_.reset();
    }
    if (undelay_at_ && t >= *undelay_at_) {
      api.SetDelay(0);
      undelay_at_.reset();
    }
  }

 private:
  void Inject(const std::string& f, double t, Daemons& d, FakeApiServer& api,
              const std::function<void(double, const std::string&)>& note) {
    if (f == "kill-leader") {
      killed_ = LeaseHolder(api);
      if (auto s = d.schedulers.find(killed_); s != d.schedulers.end()) s->second.Kill();
      note(t, "SIGKILL the leader " + killed_);
      restart_killed_at_ = t + 5;
    } else if (f == "restart-redis") {
      d.redis.Kill();
      note(t, "SIGKILL redis-server; started again on its port, empty");
      d.StartRedis();
    } else if (f == "cut-watches") {
      api.DropWatches();
      note(t, "every watch connection cut");
    } else if (f == "delay-api") {
      api.SetDelay(0.3);
      note(t, "every API request delayed 0.3 s for 5 s");
      undelay_at_ = t + 5;
    } else {
      throw std::runtime_error("unknown fault " + f);
    }
  }

  std::map<std::string, double> at_;
  std::optional<double> restart_killed_at_, undelay_at_;
  std::string killed_;
};

}  // namespace

RunResult RunOnBox(const RunSpec& spec) {
  RunResult result;
  fs::create_directories(spec.dir + "/logs");
  fs::create_directories(spec.dir + "/nodes");
  fs::create_directories(spec.dir + "/exporter");

  // The simulator's world for this run: the same catalogue, reading, cluster and pods.
  const sim::AppCatalog full =
      OrThrow(sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml"));
  std::unique_ptr<sim::World> world;
  std::vector<model::Workload> workloads;
  std::string policy = spec.policy;
  std::function<sim::ProfileSamples()> samples_of;
  std::vector<std::string> gpus;
  if (spec.online_offline) {
    sim::OnlineOfflineWorld built =
        OrThrow(sim::BuildOnlineOfflineWorld(spec.policy, *spec.online_offline, spec.seed, full));
    world = std::move(built.world);
    workloads = std::move(built.workloads);
    policy = built.policy;
    gpus = built.gpus;
    result.reading = "online-offline";
    samples_of = [&] {
      return OrThrow(sim::OnlineOfflineSamples(world->physics, gpus, spec.seed));
    };
  } else {
    sim::ThesisReading reading;
    reading.time_scale = spec.time_scale;
    reading.mig_fixed = true;  // the agents never change a GPU's MIG mode
    result.reading = reading.name();
    const sim::AppCatalog catalog = sim::ThesisCatalog(full);
    world = OrThrow(sim::BuildThesisWorld(spec.policy, spec.scenario, spec.seed, catalog, reading));
    workloads = sim::ThesisWorkloads(spec.scenario, spec.seed, world->physics, reading);
    samples_of = [&] {
      return OrThrow(sim::ThesisSamples(world->physics, world->cluster, spec.scenario, spec.seed));
    };
  }

  Daemons d;
  d.dir = spec.dir;
  d.tessera = spec.tessera;
  d.redis_port = FreePort();
  d.StartRedis();

  KubeletOptions ko{.exporter_file = spec.dir + "/exporter/pods.prom"};
  for (model::NodeIndex n = 0; n < world->cluster.node_count(); ++n) {
    const model::Node& node = world->cluster.node(n);
    if (node.gpu_count > 0) ko.node_files[node.name] = spec.dir + "/nodes/" + node.name + ".yaml";
  }
  FakeApiServer api;
  for (model::NodeIndex n = 0; n < world->cluster.node_count(); ++n) {
    const model::Node& node = world->cluster.node(n);
    api.AddNode(ApiNodeName(world->cluster, n), node.cpu_milli, node.memory_mib / 1024);
  }
  EmulatedKubelet kubelet(api, world->physics, world->cluster, workloads, ko);
  kubelet.WriteFiles();

  StartNodeDaemons(d, spec, ko);

  WriteKubeconfig(api, spec.dir);
  d.scheduler_args = SchedulerArgs(spec, d, *world, policy, samples_of);
  d.StartScheduler("box-a");
  WaitUntil("a leading tessera schedule", d.Log("box-a"), 60,
            [&] { return !LeaseHolder(api).empty(); });
  d.StartScheduler("box-b");
  // The leader reads the agents' inventories every --inventory-poll: let it see the GPUs.
  std::this_thread::sleep_for(std::chrono::seconds(2));

  FaultPlan faults(spec, workloads);
  auto note = [&](double t, const std::string& what) {
    result.log.push_back(fmt::format("{:8.3f} s  {}", t, what));
  };
  note(0, fmt::format("leader {}", LeaseHolder(api)));
  const auto t0 = std::chrono::steady_clock::now();
  auto now = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  while (!kubelet.AllDone(spec.never_started)) {
    const double t = now();
    if (t > spec.timeout_s) {
      result.timed_out = true;
      note(t, "timed out with pods unfinished");
      break;
    }
    kubelet.Tick(t);
    faults.Due(t, d, api, note);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  note(now(), fmt::format("all pods ended; leader {}", LeaseHolder(api)));
  result.counters = LeaderCounters(d, LeaseHolder(api));
  result.pods = kubelet.pods();
  result.bindings = api.bindings();
  result.evictions = api.evictions();
  result.bind_attempts = api.bind_attempts();
  return result;
}

}  // namespace tessera::e2e
