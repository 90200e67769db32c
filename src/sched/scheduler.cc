#include "sched/scheduler.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_set>

namespace tessera::sched {

Scheduler::Scheduler(ClusterState& cluster, policy::Policy& policy, const Clock& clock, Rng& rng,
                     Hooks hooks, SchedulerOptions options)
    : cluster_(cluster),
      policy_(policy),
      clock_(clock),
      rng_(rng),
      hooks_(std::move(hooks)),
      options_(options) {}

Expected<void> Scheduler::Submit(Workload w) {
  if (auto ok = w.Validate(); !ok) return ok;
  const bool queued = std::any_of(pending_.begin(), pending_.end(),
                                  [&](const Workload& p) { return p.id == w.id; });
  bool parked = false;
  for (const auto& [gpu, list] : parked_) {
    for (const Parked& p : list) parked |= p.workload.id == w.id;
  }
  if (queued || parked || cluster_.Find(w.id)) return Fail("workload {} is already known", w.id);
  if (w.arrival_s == 0) w.arrival_s = clock_.Now();
  pending_.push_back(std::move(w));
  return {};
}

std::optional<policy::Candidate> Scheduler::SelectNode(const Workload& w, std::string& why) {
  std::optional<policy::Candidate> best;
  int ties = 0;
  // Filter reasons are a handful of static strings: a flat list, compared by address first,
  // keeps the hot loop free of allocations and string comparisons.
  reasons_.clear();
  auto count_reason = [this](std::string_view reason) {
    for (auto& [r, count] : reasons_) {
      if ((r.data() == reason.data() && r.size() == reason.size()) || r == reason) {
        ++count;
        return;
      }
    }
    reasons_.emplace_back(reason, 1);
  };
  for (model::NodeIndex n = 0; n < cluster_.node_count(); ++n) {
    const policy::Feasibility f = policy_.Filter(w, n, cluster_);
    if (!f.ok()) {
      count_reason(f.reason);
      continue;
    }
    std::optional<policy::Candidate> cand = policy_.Score(w, n, cluster_);
    if (!cand) {
      count_reason("no offer from the policy");
      continue;
    }
    if (!best || cand->score > best->score) {
      best = std::move(cand);
      ties = 1;
    } else if (cand->score == best->score && options_.tie_break == TieBreak::kRandom &&
               rng_.Below(++ties) == 0) {
      best = std::move(cand);  // reservoir sampling: each tied node wins with equal chance
    }
  }
  if (!best) {
    std::sort(reasons_.begin(), reasons_.end());
    why = fmt::format("0/{} nodes are available:", cluster_.node_count());
    for (const auto& [reason, count] : reasons_) why += fmt::format(" {} {},", count, reason);
    if (why.back() == ',') why.pop_back();
  }
  return best;
}

bool Scheduler::ReserveAndBind(const Workload& w, const model::Placement& p, CycleStats& stats,
                               const std::vector<policy::ResizeTo>& resizes) {
  // Neighbours' new limits first (they make the room), then the placement; all or nothing.
  std::vector<policy::ResizeTo> undo;
  auto rollback = [&] {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      TESSERA_CHECK(cluster_.Resize(it->workload, it->slices).has_value());
    }
  };
  for (const policy::ResizeTo& r : resizes) {
    const model::PlacedWorkload* pw = cluster_.Find(r.workload);
    std::vector<model::Slice> before = pw ? pw->placement.slices : std::vector<model::Slice>{};
    if (auto ok = cluster_.Resize(r.workload, r.slices); !ok) {
      rollback();
      ++stats.policy_errors;
      last_reason_[w.id] = "policy proposed an invalid resize: " + ok.error().message;
      return false;
    }
    undo.push_back({r.workload, std::move(before)});
  }
  if (auto ok = cluster_.Place(w, p); !ok) {
    rollback();
    ++stats.policy_errors;
    last_reason_[w.id] = "policy proposed an invalid placement: " + ok.error().message;
    return false;
  }
  if (hooks_.bind) {
    if (auto ok = hooks_.bind(w, p, cluster_.EnvironmentOf(p)); !ok) {
      ++stats.bind_failures;
      last_reason_[w.id] = "bind failed: " + ok.error().message;
      TESSERA_CHECK(cluster_.Remove(w.id).has_value());
      rollback();
      return false;
    }
  }
  ++stats.bound;
  last_reason_.erase(w.id);
  return true;
}

bool Scheduler::Commit(const Workload& w, policy::Candidate cand, CycleStats& stats) {
  if (!cand.reshape) return ReserveAndBind(w, cand.placement, stats, cand.resizes);
  const GpuIndex g = cand.reshape->gpu;
  if (auto ok = cluster_.Reshape(g, cand.reshape->layout); !ok) {
    ++stats.policy_errors;
    last_reason_[w.id] = "policy proposed an invalid reshape: " + ok.error().message;
    return false;
  }
  ++stats.reshapes;
  if (!hooks_.reshape) return ReserveAndBind(w, cand.placement, stats, cand.resizes);
  cluster_.SetGpuAvailable(g, false);
  parked_[g].push_back({w, std::move(cand.placement)});
  ++stats.parked;
  hooks_.reshape(g, cand.reshape->layout);
  return true;
}

CycleStats Scheduler::RunCycle() {
  CycleStats stats;
  std::vector<const Workload*> order;
  order.reserve(pending_.size());
  for (const Workload& w : pending_) order.push_back(&w);
  policy_.Order(order);

  std::unordered_set<WorkloadId> done;
  if (std::optional<std::vector<policy::Candidate>> batch = policy_.PlaceBatch(order, cluster_)) {
    for (policy::Candidate& cand : *batch) {
      auto it = std::find_if(order.begin(), order.end(),
                             [&](const Workload* w) { return w->id == cand.placement.workload; });
      if (it == order.end() || done.contains((*it)->id)) {
        ++stats.policy_errors;
        continue;
      }
      ++stats.attempted;
      if (Commit(**it, std::move(cand), stats)) done.insert((*it)->id);
    }
  } else {
    for (const Workload* w : order) {
      if (options_.max_binds_per_cycle > 0 && stats.bound >= options_.max_binds_per_cycle) break;
      ++stats.attempted;
      std::string why;
      std::optional<policy::Candidate> best = SelectNode(*w, why);
      if (!best) {
        ++stats.unschedulable;
        last_reason_[w->id] = why;
        if (options_.drop_unschedulable) {
          ++stats.dropped;
          done.insert(w->id);
        }
        if (hooks_.unschedulable) hooks_.unschedulable(*w, why, options_.drop_unschedulable);
        continue;
      }
      if (Commit(*w, std::move(*best), stats)) done.insert(w->id);
    }
  }
  if (!done.empty()) {
    std::erase_if(pending_, [&](const Workload& w) { return done.contains(w.id); });
  }
  ProactiveReshapes(stats);
  Evictions(stats);
  Accumulate(stats);
  return stats;
}

void Scheduler::ProactiveReshapes(CycleStats& stats) {
  // GPUs never change model: the MIG-capable ones are listed once (again if GPUs are added), so
  // a cycle on a cluster without them costs nothing here.
  if (mig_capable_gpus_seen_ != cluster_.gpu_count()) {
    mig_capable_gpus_.clear();
    for (GpuIndex g = 0; g < cluster_.gpu_count(); ++g) {
      if (model::GetGpuModel(cluster_.gpu(g).model).mig_capable()) mig_capable_gpus_.push_back(g);
    }
    mig_capable_gpus_seen_ = cluster_.gpu_count();
  }
  for (GpuIndex g : mig_capable_gpus_) {
    const model::Gpu& gpu = cluster_.gpu(g);
    if (!gpu.available || !gpu.idle()) continue;
    std::optional<std::optional<model::MigLayout>> to = policy_.Reshape(g, cluster_);
    if (!to || *to == gpu.mig) continue;
    if (auto ok = cluster_.Reshape(g, *to); !ok) {
      ++stats.policy_errors;
      continue;
    }
    ++stats.reshapes;
    if (hooks_.reshape) {
      cluster_.SetGpuAvailable(g, false);
      parked_[g];  // nothing waits, but ReshapeDone must make it available again
      hooks_.reshape(g, *to);
    }
  }
}

void Scheduler::Evictions(CycleStats& stats) {
  for (WorkloadId id : policy_.Evict(cluster_)) {
    const model::PlacedWorkload* pw = cluster_.Find(id);
    if (!pw) {
      ++stats.policy_errors;
      continue;
    }
    const Workload w = pw->workload;
    TESSERA_CHECK(cluster_.Remove(id).has_value());
    ++stats.evicted;
    if (hooks_.evict) hooks_.evict(w);
  }
}

CycleStats Scheduler::ReshapeDone(GpuIndex gpu) {
  CycleStats stats;
  auto it = parked_.find(gpu);
  cluster_.SetGpuAvailable(gpu, true);
  if (it == parked_.end()) return stats;
  std::vector<Parked> list = std::move(it->second);
  parked_.erase(it);
  for (Parked& p : list) {
    ++stats.attempted;
    if (!ReserveAndBind(p.workload, p.placement, stats)) pending_.push_back(std::move(p.workload));
  }
  Accumulate(stats);
  return stats;
}

Expected<void> Scheduler::Finish(WorkloadId id) {
  last_reason_.erase(id);
  return cluster_.Remove(id);
}

bool Scheduler::Cancel(WorkloadId id) {
  last_reason_.erase(id);
  return std::erase_if(pending_, [id](const Workload& w) { return w.id == id; }) > 0;
}

std::string Scheduler::LastReason(WorkloadId id) const {
  auto it = last_reason_.find(id);
  return it == last_reason_.end() ? "" : it->second;
}

void Scheduler::Accumulate(const CycleStats& s) {
  totals_.attempted += s.attempted;
  totals_.bound += s.bound;
  totals_.unschedulable += s.unschedulable;
  totals_.dropped += s.dropped;
  totals_.bind_failures += s.bind_failures;
  totals_.policy_errors += s.policy_errors;
  totals_.reshapes += s.reshapes;
  totals_.evicted += s.evicted;
  totals_.parked += s.parked;
}

}  // namespace tessera::sched
