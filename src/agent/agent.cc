#include "agent/agent.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <random>
#include <set>

#include "agent/mig_reshaper.h"
#include "agent/pod_resolver.h"
#include "store/mig_reshape.h"

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

void Agent::AnswerReshapes() {
  if (store_ == nullptr) return;
  std::vector<store::GpuInventory> gpus;
  {
    std::lock_guard lock(mu_);
    if (!discovered_) return;
    gpus = gpus_;
  }
  for (const auto& g : gpus) {
    if (g.lost) continue;
    const std::string key = store::MigReshapeRequestKey(options_.node, g.uuid);
    auto doc = store_->GetProfile(key);
    if (!doc) return;  // the store is out: the rest of Tick reports it
    if (!*doc) continue;
    auto it = reshape_answered_.find(g.uuid);
    if (it != reshape_answered_.end() && it->second == **doc) continue;
    AnswerReshape(g, key, **doc);
  }
}

void Agent::AnswerReshape(const store::GpuInventory& gpu, const std::string& key,
                          const std::string& document) {
  const std::string status_key = store::MigReshapeStatusKey(options_.node, gpu.uuid);
  store::MigReshapeStatus status{
      .node = options_.node, .gpu_uuid = gpu.uuid, .agent_id = agent_id_};
  auto put = [&] { return store_->PutProfile(status_key, store::ToJson(status)).has_value(); };
  auto request = store::MigReshapeRequestFromJson(document, key);
  if (request) {
    status.mig = request->mig;
    status.requested_by = request->requested_by;
    status.requested_at = request->requested_at;
    // Answered already, by this agent before a restart or by an earlier one?
    auto old = store_->GetProfile(status_key);
    if (!old) return;  // asked again next round
    if (*old) {
      auto s = store::MigReshapeStatusFromJson(**old, status_key);
      if (s && s->Answers(*request) && s->final()) {
        reshape_answered_[gpu.uuid] = document;
        return;
      }
    }
    if (request->gpu_uuid != gpu.uuid || request->node != options_.node) {
      request =
          Fail("{}: the request names GPU {} on node {}", key, request->gpu_uuid, request->node);
    }
  }
  ReshapeOutcome out;
  if (!request) {
    out.state = ReshapeOutcome::State::kFailed;
    out.error = MigError{MigFault::kInvalid, request.error().message};
  } else {
    status.state = "applying";
    if (!put()) return;  // asked again next round
    std::lock_guard backend_lock(backend_mu_);
    if (options_.mig_reshape == AgentOptions::MigReshape::kOff) {
      out.state = ReshapeOutcome::State::kFailed;
      out.error = MigError{MigFault::kNotSupported,
                           "this agent does not apply MIG reshapes (tessera agent "
                           "--mig-reshape off)"};
    } else if (MigControl* mig = backend_.mig_control(); mig != nullptr) {
      out = ReshapeMig(*mig, gpu, request->mig, clock_, options_.reshape_budget_s,
                       options_.mig_reshape == AgentOptions::MigReshape::kDryRun);
    } else {
      out.state = ReshapeOutcome::State::kFailed;
      out.error = MigError{
          MigFault::kNotSupported,
          fmt::format("the {} backend cannot create or destroy MIG instances", backend_.name())};
    }
  }
  status.state = ReshapeStateName(out.state);
  if (out.error) {
    status.fault = MigFaultName(out.error->fault);
    status.error = out.error->message;
  }
  status.steps = out.steps;
  status.rolled_back = out.rolled_back;
  status.restored = out.restored;
  status.elapsed_s = out.elapsed_s;
  const std::string steps =
      out.steps.empty() ? "nothing to change" : fmt::format("{}", fmt::join(out.steps, "; "));
  if (out.state == ReshapeOutcome::State::kFailed) {
    spdlog::error(
        "agent {}: GPU {} ({}): MIG reshape to '{}' failed ({}): {}{}", options_.node, gpu.index,
        gpu.uuid, status.mig, status.fault, status.error,
        out.rolled_back
            ? fmt::format("; {}: {}", out.restored ? "rolled back" : "ROLLBACK INCOMPLETE", steps)
            : "");
  } else {
    spdlog::info("agent {}: GPU {} ({}): MIG reshape to '{}' {} in {:.2f} s: {}", options_.node,
                 gpu.index, gpu.uuid, status.mig,
                 out.state == ReshapeOutcome::State::kDone ? "done" : "planned (dry run)",
                 out.elapsed_s, steps);
  }
  {
    std::lock_guard lock(mu_);
    ++(out.state == ReshapeOutcome::State::kFailed ? stats_.reshapes_failed : stats_.reshapes_done);
  }
  if (!put()) return;  // answered again next round (a layout already in place takes no step)
  reshape_answered_[gpu.uuid] = document;
}

void Agent::TakeDiscoveryLocked(Expected<std::vector<store::GpuInventory>>& found,
                                const std::optional<Expected<std::vector<GpuSample>>>& samples) {
  if (!found) {
    ++stats_.backend_errors;
    Note(last_backend_error_, "GPU discovery", found.error().message);
    // Until a first discovery, that is why the agent is not ready; afterwards it serves
    // what it last knew.
    if (!discovered_) {
      health_.Set(discovery_name_, fmt::format("{}: {}", discovery_name_, found.error().message));
    }
    return;
  }
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
    spdlog::info("agent {}: inventory generation {}: {} GPU(s){}", options_.node, stats_.generation,
                 now.size(), discovered_ ? " (changed)" : "");
    gpus_ = std::move(now);
    dirty_ = true;
    discovered_ = true;
  }
}

Agent::StoreRound Agent::CallStore(const std::optional<store::NodeInventory>& to_publish,
                                   int64_t generation) {
  StoreRound round;
  if (to_publish) {
    if (auto ok = store_->PutInventory(*to_publish); ok) {
      round.published = true;
    } else {
      round.error = ok.error().message;
    }
  }
  if (round.error.empty()) {
    if (auto ok = store_->Heartbeat(options_.node, options_.heartbeat_ttl_s); !ok) {
      round.error = ok.error().message;
    }
  }
  if (round.error.empty() && clock_.Now() >= next_attribution_) {
    if (auto all = store_->ListPlacements(); all) {
      round.pods.emplace();
      for (const auto& p : *all) {
        if (p.node != options_.node || p.pod.empty()) continue;
        // Also a placement with no slices: its pod may run GPU processes all the same.
        round.by_uid[p.workload] = {p.pod, p.namespace_};
        for (const auto& s : p.slices) {
          (*round.pods)[s.partition_uuid].push_back({p.pod, p.namespace_});
        }
      }
      next_attribution_ = clock_.Now() + options_.attribution_interval_s;
    } else {
      round.error = all.error().message;
    }
    if (round.error.empty() && !to_publish) {
      if (auto held = store_->GetInventory(options_.node); !held) {
        round.error = held.error().message;
      } else {
        round.inventory_lost =
            !*held || (*held)->agent_id != agent_id_ || (*held)->generation != generation;
      }
    }
  }
  return round;
}

void Agent::FinishStoreRoundLocked(const std::optional<store::NodeInventory>& to_publish,
                                   StoreRound& round) {
  // Publish only clears dirty_ if no newer change arrived meanwhile (same generation).
  if (round.published && to_publish->generation == stats_.generation) dirty_ = false;
  if (round.inventory_lost && !dirty_) {
    spdlog::warn("agent {}: the store no longer holds inventory generation {}; publishing it again",
                 options_.node, stats_.generation);
    ++stats_.republishes;
    dirty_ = true;
  }
  if (round.published) ++stats_.publishes;
  if (round.pods) {
    pods_ = std::move(*round.pods);
    pods_by_uid_ = std::move(round.by_uid);
  }
  if (!round.error.empty()) ++stats_.store_errors;
  stats_.published = !dirty_;
  Note(last_store_error_, "store", round.error);
  health_.Set(store_->Name(), round.error);
}

void Agent::Tick() {
  // Reshapes first, so this round's discovery publishes the layout they made.
  AnswerReshapes();
  // Store calls may block for the store's retry budget: they run without mu_, so /metrics and
  // /healthz keep answering during a store outage. Only this thread writes dirty_ and stats_'
  // store fields.
  std::optional<store::NodeInventory> to_publish;
  int64_t generation = 0;
  {
    std::lock_guard backend_lock(backend_mu_);
    auto found = backend_.Discover();
    // The MPS detectors need a sample every round, scraped or not (taken before mu_, which
    // /metrics and /healthz wait on).
    std::optional<Expected<std::vector<GpuSample>>> samples;
    if (found) samples = backend_.Sample(*found);
    std::lock_guard lock(mu_);
    TakeDiscoveryLocked(found, samples);
    if (discovered_) health_.Set(discovery_name_, "");
    if (store_ == nullptr || !discovered_) {
      health_.Beat(kLoop, options_.stall_s);
      return;
    }
    if (dirty_) to_publish = InventoryLocked();
    generation = stats_.generation;
  }
  StoreRound round = CallStore(to_publish, generation);
  std::lock_guard lock(mu_);
  FinishStoreRoundLocked(to_publish, round);
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
      "tessera_agent_backend_errors_total{{Hostname=\"{0}\"}} {6}\n"
      "# HELP tessera_agent_mig_reshapes_total The scheduler's MIG reshape requests answered, by "
      "result (done: applied or planned in a dry run; failed: refused, failed or rolled back).\n"
      "# TYPE tessera_agent_mig_reshapes_total counter\n"
      "tessera_agent_mig_reshapes_total{{Hostname=\"{0}\",result=\"done\"}} {7}\n"
      "tessera_agent_mig_reshapes_total{{Hostname=\"{0}\",result=\"failed\"}} {8}\n"
      "# HELP tessera_agent_inventory_republishes_total Times the store no longer held the "
      "published inventory when read back (a Redis restarted empty, a deleted key) and it was "
      "published again.\n"
      "# TYPE tessera_agent_inventory_republishes_total counter\n"
      "tessera_agent_inventory_republishes_total{{Hostname=\"{0}\"}} {9}\n",
      EscapeLabel(options_.node), stats_.generation, static_cast<int>(gpus_.size()) - lost, lost,
      stats_.publishes, stats_.store_errors, stats_.backend_errors, stats_.reshapes_done,
      stats_.reshapes_failed, stats_.republishes);
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
