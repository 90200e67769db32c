#include "agent/agent.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <random>
#include <set>

#include "agent/pod_resolver.h"

namespace tessera::agent {
namespace {
constexpr const char* kLoop = "discovery loop";
}  // namespace

Agent::Agent(AgentOptions options, GpuBackend& backend, store::Store* store, const Clock& clock)
    : options_(std::move(options)),
      backend_(backend),
      store_(store),
      clock_(clock),
      health_(clock),
      discovery_name_(fmt::format("GPU discovery ({})", backend.name())) {
  std::random_device rd;
  agent_id_ = fmt::format("{:08x}{:08x}", rd(), rd());
  health_.Beat(kLoop, options_.stall_s);
  health_.Declare(discovery_name_);
  if (store_ != nullptr) health_.Declare(store_->Name());
}

void Agent::Note(std::string& last, const std::string& source, const std::string& message) {
  if (message == last) return;
  if (message.empty()) {
    spdlog::info("agent {}: {} recovered", options_.node, source);
  } else {
    spdlog::error("agent {}: {}: {} (serving what it last knew)", options_.node, source, message);
  }
  last = message;
}

store::NodeInventory Agent::InventoryLocked() const {
  return store::NodeInventory{.node = options_.node,
                              .backend = backend_.name(),
                              .agent_id = agent_id_,
                              .generation = stats_.generation,
                              .cpu_milli = options_.cpu_milli,
                              .memory_mib = options_.memory_mib,
                              .gpus = gpus_};
}

void Agent::ObserveMpsLocked(std::vector<store::GpuInventory>& gpus,
                             const std::vector<GpuSample>& samples) {
  const double now = clock_.Now();
  for (size_t i = 0; i < gpus.size(); ++i) {
    store::GpuInventory& g = gpus[i];
    MpsStuckDetector& d = mps_.try_emplace(g.uuid, options_.mps_stuck).first->second;
    // GPUs past the samples are the lost ones the agent keeps: nothing read, no evidence.
    const GpuSample none;
    const GpuSample& s = i < samples.size() ? samples[i] : none;
    // Activity of the whole GPU (any kernel running); unknown on a MIG GPU or a lost one.
    std::optional<double> activity;
    if (s.gpu_util_pct) activity = *s.gpu_util_pct / 100;
    const std::string reason = d.reason();  // the last suspect sample's, before this one
    if (d.Observe(now, s.mps, activity)) {
      if (d.stuck()) {
        spdlog::error(
            "agent {}: GPU {} ({}): MPS server stuck: {} for {} samples over {:.0f} s (the "
            "workloads sharing it may not be served until it is reset; docs/runtime.md)",
            options_.node, g.index, g.uuid, d.reason(), d.streak(), d.streak_s());
      } else {
        spdlog::info("agent {}: GPU {} ({}): MPS server no longer stuck (was: {})", options_.node,
                     g.index, g.uuid, reason);
      }
    }
    g.mps_stuck = d.stuck();
  }
}

void Agent::Tick() {
  // Store calls may block for the store's retry budget: they run without mu_, so /metrics and
  // /healthz keep answering during a store outage. Only this thread writes dirty_ and stats_'
  // store fields.
  store::NodeInventory to_publish;
  bool publish = false;
  {
    std::lock_guard backend_lock(backend_mu_);
    auto found = backend_.Discover();
    // The MPS detectors need a sample every round, scraped or not (taken before mu_, which
    // /metrics and /healthz wait on).
    std::optional<Expected<std::vector<GpuSample>>> samples;
    if (found) samples = backend_.Sample(*found);
    std::lock_guard lock(mu_);
    if (!found) {
      ++stats_.backend_errors;
      Note(last_backend_error_, "GPU discovery", found.error().message);
      // Until a first discovery, that is why the agent is not ready; afterwards it serves
      // what it last knew.
      if (!discovered_) {
        health_.Set(discovery_name_, fmt::format("{}: {}", discovery_name_, found.error().message));
      }
    } else {
      Note(last_backend_error_, "GPU discovery", "");
      std::vector<store::GpuInventory> now = std::move(*found);
      std::set<std::string> seen;
      for (const auto& g : now) seen.insert(g.uuid);
      for (const auto& old : gpus_) {
        if (!seen.contains(old.uuid)) {
          store::GpuInventory gone = old;
          gone.lost = true;
          now.push_back(std::move(gone));
        }
      }
      if (*samples) {
        Note(last_sample_error_, "GPU readings", "");
        ObserveMpsLocked(now, **samples);
      } else {
        ++stats_.backend_errors;
        Note(last_sample_error_, "GPU readings", samples->error().message);
        for (auto& g : now) {  // no evidence either way this round: keep the verdicts
          auto it = mps_.find(g.uuid);
          g.mps_stuck = it != mps_.end() && it->second.stuck();
        }
      }
      if (!discovered_ || now != gpus_) {
        ++stats_.generation;
        spdlog::info("agent {}: inventory generation {}: {} GPU(s){}", options_.node,
                     stats_.generation, now.size(), discovered_ ? " (changed)" : "");
        gpus_ = std::move(now);
        dirty_ = true;
        discovered_ = true;
      }
    }
    if (discovered_) health_.Set(discovery_name_, "");
    if (store_ == nullptr || !discovered_) {
      health_.Beat(kLoop, options_.stall_s);
      return;
    }
    publish = dirty_;
    if (publish) to_publish = InventoryLocked();
  }
  std::string store_error;
  bool published = false;
  if (publish) {
    if (auto ok = store_->PutInventory(to_publish); ok) {
      published = true;
    } else {
      store_error = ok.error().message;
    }
  }
  if (store_error.empty()) {
    if (auto ok = store_->Heartbeat(options_.node, options_.heartbeat_ttl_s); !ok) {
      store_error = ok.error().message;
    }
  }
  std::optional<Attribution> pods;
  PodsByUid by_uid;
  if (store_error.empty() && clock_.Now() >= next_attribution_) {
    if (auto all = store_->ListPlacements(); all) {
      pods.emplace();
      for (const auto& p : *all) {
        if (p.node != options_.node || p.pod.empty()) continue;
        // Also a placement with no slices: its pod may run GPU processes all the same.
        by_uid[p.workload] = {p.pod, p.namespace_};
        for (const auto& s : p.slices) (*pods)[s.partition_uuid].push_back({p.pod, p.namespace_});
      }
      next_attribution_ = clock_.Now() + options_.attribution_interval_s;
    } else {
      store_error = all.error().message;
    }
  }
  std::lock_guard lock(mu_);
  // Publish only clears dirty_ if no newer change arrived meanwhile (same generation).
  if (published && to_publish.generation == stats_.generation) dirty_ = false;
  if (published) ++stats_.publishes;
  if (pods) {
    pods_ = std::move(*pods);
    pods_by_uid_ = std::move(by_uid);
  }
  if (!store_error.empty()) ++stats_.store_errors;
  stats_.published = !dirty_;
  Note(last_store_error_, "store", store_error);
  health_.Set(store_->Name(), store_error);
  health_.Beat(kLoop, options_.stall_s);
}

std::string Agent::Metrics() {
  std::lock_guard backend_lock(backend_mu_);
  std::lock_guard lock(mu_);
  std::string out;
  if (discovered_) {
    auto samples = backend_.Sample(gpus_);
    if (samples) {
      Note(last_sample_error_, "GPU readings", "");
      for (GpuSample& g : *samples) {
        for (ProcessSample& p : g.processes) {
          if (p.pod_uid.empty()) p.pod_uid = PodUidOfPid(options_.proc_root, p.pid).value_or("");
        }
      }
      out = RenderDcgmMetrics(options_.node, gpus_, *samples, pods_);
      out += RenderPodMetrics(options_.node, gpus_, *samples, pods_by_uid_, pods_).text;
    } else {
      ++stats_.backend_errors;
      Note(last_sample_error_, "GPU readings", samples.error().message);
    }
    out += RenderMpsMetrics(options_.node, gpus_, mps_);  // as of the last Tick
  }
  int lost = 0;
  for (const auto& g : gpus_) lost += g.lost ? 1 : 0;
  out += fmt::format(
      "# HELP tessera_agent_inventory_generation Inventory generation this agent published.\n"
      "# TYPE tessera_agent_inventory_generation gauge\n"
      "tessera_agent_inventory_generation{{Hostname=\"{0}\"}} {1}\n"
      "# HELP tessera_agent_gpus GPUs known to the agent, by state.\n"
      "# TYPE tessera_agent_gpus gauge\n"
      "tessera_agent_gpus{{Hostname=\"{0}\",state=\"ok\"}} {2}\n"
      "tessera_agent_gpus{{Hostname=\"{0}\",state=\"lost\"}} {3}\n"
      "# HELP tessera_agent_publishes_total Inventories written to the store.\n"
      "# TYPE tessera_agent_publishes_total counter\n"
      "tessera_agent_publishes_total{{Hostname=\"{0}\"}} {4}\n"
      "# HELP tessera_agent_store_errors_total Store calls that failed.\n"
      "# TYPE tessera_agent_store_errors_total counter\n"
      "tessera_agent_store_errors_total{{Hostname=\"{0}\"}} {5}\n"
      "# HELP tessera_agent_backend_errors_total GPU discovery or readings that failed.\n"
      "# TYPE tessera_agent_backend_errors_total counter\n"
      "tessera_agent_backend_errors_total{{Hostname=\"{0}\"}} {6}\n",
      EscapeLabel(options_.node), stats_.generation, static_cast<int>(gpus_.size()) - lost, lost,
      stats_.publishes, stats_.store_errors, stats_.backend_errors);
  return out;
}

bool Agent::Ready() const {
  std::lock_guard lock(mu_);
  return discovered_;
}

store::NodeInventory Agent::Inventory() const {
  std::lock_guard lock(mu_);
  return InventoryLocked();
}

AgentStats Agent::Stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace tessera::agent
