// `tessera agent`: the GPU node agent (DESIGN §6). Discovers the node's GPUs through NVML (or a
// --fake file), publishes the inventory to the store, and serves /metrics and /healthz until
// SIGTERM or SIGINT.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/fake_backend.h"
#include "agent/http_server.h"
#include "agent/nvml_backend.h"
#include "base/clock.h"
#include "base/daemon_http.h"
#include "cli/commands.h"
#include "cli/daemon_flags.h"
#include "cli/number_flags.h"

namespace tessera::cli {
namespace {

struct AgentFlags {
  std::string fake;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string node;
  std::string listen = "0.0.0.0:9400";  // dcgm-exporter's port
  daemon_flags::StoreFlags store{.store = "memory"};
  double interval_s = 1;
  double heartbeat_ttl_s = 15;
  agent::MpsStuckOptions mps_stuck;
  std::string proc_root = "/proc";
  bool once = false;
  bool json = false;
  std::string mig_reshape = "apply";
  double reshape_budget_s = 5;
};

// The node's CPU (milli) and memory (MiB), for the inventory.
std::pair<int64_t, int64_t> NodeResources() {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t mem_kib = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  while (meminfo >> key) {
    if (key == "MemTotal:") {
      meminfo >> mem_kib;
      break;
    }
    meminfo.ignore(256, '\n');
  }
  return {int64_t{1000} * std::max(1L, cpus), mem_kib / 1024};
}

// The bounds of the agent's periods, in seconds. Below 0.1 s a discovery round (NVML, or the
// fake file re-read) runs back to back and takes a core; a TTL under 1 s is shorter than a
// store round trip under load, and under two rounds the node reads as dead between two beats.
constexpr double kMinInterval = 0.1, kMaxInterval = 3600;
constexpr double kMinHeartbeatTtl = 1, kMaxHeartbeatTtl = 86400;

void PrintInventory(const store::NodeInventory& inv, bool json) {
  if (json) {
    std::printf("%s\n", nlohmann::json::parse(store::ToJson(inv)).dump(2).c_str());
    return;
  }
  std::printf("node %s (%s backend): %zu GPU(s)\n", inv.node.c_str(), inv.backend.c_str(),
              inv.gpus.size());
  for (const auto& g : inv.gpus) {
    std::printf("  %d  %s  %s [%s]  %lld MiB  MIG %s%s%s\n", g.index, g.uuid.c_str(),
                g.product_name.c_str(), g.model.empty() ? "not in catalog" : g.model.c_str(),
                static_cast<long long>(g.memory_mib), g.mig_enabled ? "on" : "off",
                g.lost ? "  LOST" : "", g.mps_stuck ? "  MPS STUCK" : "");
    if (!g.mig_enabled) continue;
    for (const auto& p : g.partitions) {
      std::printf("      %-10s gi %-2d start %d  %lld MiB  %s\n", p.profile.c_str(), p.gi_id,
                  p.start, static_cast<long long>(p.memory_mib), p.uuid.c_str());
    }
  }
}

Status RunAgent(const AgentFlags& f) {
  // Logs go to stderr: stdout carries --once's inventory (and a daemon's stderr is its log).
  daemon_flags::LogToStderr("tessera-agent");
  SteadyClock clock;
  // The flags first: a usage error exits before any discovery.
  if (f.heartbeat_ttl_s < 2 * f.interval_s) {
    return Usage("--heartbeat-ttl {} s must be at least twice --interval ({} s)", f.heartbeat_ttl_s,
                 f.interval_s);
  }
  // A Tick must not stall for long on an unreachable Redis.
  auto store = daemon_flags::OpenStore(f.store, clock, std::max(0.5, f.interval_s));
  if (!store) return Usage(store.error());
  auto listen = ParseListenAddress(f.listen);  // --once serves nothing
  if (!listen && !f.once) return Usage("--listen: {}", listen.error().message);
  const double unix_now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::unique_ptr<agent::GpuBackend> backend;
  std::string node = f.node;
  if (!f.fake.empty()) {
    auto b = agent::FakeBackend::Load(f.fake, clock, unix_now);
    if (!b) return Failed(b.error());
    if (node.empty()) node = (*b)->node().node;
    backend = std::move(*b);
  } else {
    auto b = agent::NvmlBackend::Open(f.nvml_library);
    if (!b) return Failed(b.error());
    backend = std::move(*b);
  }
  if (node.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    node = host;
  }
  auto [cpu_milli, memory_mib] = NodeResources();
  if (!f.fake.empty()) {
    const auto& fake = static_cast<agent::FakeBackend&>(*backend).node();
    if (fake.cpu_milli > 0) cpu_milli = fake.cpu_milli;
    if (fake.memory_mib > 0) memory_mib = fake.memory_mib;
  }

  using Reshape = agent::AgentOptions::MigReshape;
  const Reshape reshape = f.mig_reshape == "off"       ? Reshape::kOff
                          : f.mig_reshape == "dry-run" ? Reshape::kDryRun
                                                       : Reshape::kApply;
  agent::Agent a({.node = node,
                  .heartbeat_ttl_s = f.heartbeat_ttl_s,
                  .cpu_milli = cpu_milli,
                  .memory_mib = memory_mib,
                  .mps_stuck = f.mps_stuck,
                  // A round takes up to about three store retry budgets (one interval each).
                  .stall_s = std::max(30.0, 10 * f.interval_s),
                  .proc_root = f.proc_root,
                  .mig_reshape = reshape,
                  .reshape_budget_s = f.reshape_budget_s},
                 *backend, store->get(), clock);
  if (f.once) {
    a.Tick();
    if (!a.Ready()) return Failed("GPU discovery failed (see the log line above)");
    PrintInventory(a.Inventory(), f.json);
    if (!a.Stats().published) return Failed("the inventory was not published (see the log above)");
    return {};
  }

  daemon_flags::InstallSignals();

  agent::AgentServer server(a);
  auto port = server.Start(listen->first, listen->second);
  if (!port) return Failed(port.error());
  spdlog::info("agent {}: {} backend, store {}, serving /metrics, /healthz and /readyz on {}", node,
               backend->name(), (*store)->Name(), JoinHostPort(listen->first, *port));
  do {
    a.Tick();
  } while (!daemon_flags::WaitForStop(f.interval_s));
  spdlog::info("agent {}: signal received, shutting down", node);
  server.Stop();
  return {};
}

}  // namespace

void AddAgent(CLI::App& app, Status* status) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* sub = app.add_subcommand(
      "agent", "Run the GPU node agent: NVML discovery, inventory to the store, /metrics");
  sub->add_option("--fake", flags->fake,
                  "Fake GPU backend: a YAML file of GPUs, MIG layouts and scripted readings "
                  "(docs/runtime.md); without it, NVML")
      ->check(CLI::ExistingFile);
  sub->add_option("--nvml-library", flags->nvml_library, "NVML library to dlopen")
      ->capture_default_str();
  sub->add_option("--node", flags->node,
                  "Node name (default: the fake file's node, else the host name)")
      ->envname("NODE_NAME");
  sub->add_option("--proc-root", flags->proc_root,
                  "The host's /proc, where a GPU process's cgroup names its pod (run with "
                  "hostPID, or mount the host's /proc and name it here)")
      ->capture_default_str();
  sub->add_option("--listen", flags->listen, "host:port for /metrics, /healthz and /readyz")
      ->capture_default_str();
  daemon_flags::AddStoreFlags(sub, flags->store, "Where the inventory goes");
  sub->add_option("--interval", flags->interval_s, "Seconds between discovery rounds, 0.1..3600")
      ->check(Seconds(kMinInterval, kMaxInterval))
      ->capture_default_str();
  sub->add_option("--heartbeat-ttl", flags->heartbeat_ttl_s,
                  "Seconds after which a silent agent's node counts as dead, 1..86400 and at "
                  "least twice --interval")
      ->check(Seconds(kMinHeartbeatTtl, kMaxHeartbeatTtl))
      ->capture_default_str();
  sub->add_option("--mps-stuck-samples", flags->mps_stuck.min_samples,
                  "A GPU's MPS server counts as stuck after this many suspect samples in a row "
                  "(docs/runtime.md), 1..1000")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  sub->add_option("--mps-stuck-seconds", flags->mps_stuck.min_span_s,
                  "The suspect samples must also span at least this many seconds, 0..86400")
      ->check(Seconds(0, 86400))
      ->capture_default_str();
  sub->add_option("--mig-reshape", flags->mig_reshape,
                  "The scheduler's MIG reshape requests: apply them (needs root, as nvidia-smi "
                  "mig does), plan them only (dry-run: the steps are reported, nothing changes), "
                  "or refuse them (off); each is answered in the store")
      ->check(CLI::IsMember({"apply", "dry-run", "off"}))
      ->capture_default_str();
  sub->add_option("--reshape-budget", flags->reshape_budget_s,
                  "Seconds a reshape may take before it is rolled back, 0.1..600")
      ->check(Seconds(0.1, 600))
      ->capture_default_str();
  sub->add_flag("--once", flags->once, "Discover and publish once, print the inventory, and exit");
  sub->add_flag("--json", flags->json, "With --once: print the inventory as JSON");
  sub->callback([flags, status] { *status = RunAgent(*flags); });
}

}  // namespace tessera::cli
