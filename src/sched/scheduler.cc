#include "sched/scheduler.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sched/preemption.h"

namespace tessera::sched {
namespace {

constexpr std::string_view kNoOffer = "no offer from the policy";

}  // namespace

Scheduler::Scheduler(ClusterState& cluster, policy::Policy& policy, const Clock& clock, Rng& rng,
                     Hooks hooks, SchedulerOptions options)
    : cluster_(cluster),
      policy_(policy),
      clock_(clock),
      rng_(rng),
      hooks_(std::move(hooks)),
      options_(options) {}

std::string RequestShape(const Workload& w, policy::Policy::OfferInputs inputs) {
  std::string shape = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|", w.app, w.slo_qps > 0,
                                  model::ToString(w.klass), w.cpu_milli, w.memory_mib, w.gpu.count,
                                  w.gpu.milli, w.gpu.memory_mib, w.gpu.mig_profile);
  for (model::GpuModelId m : w.gpu.models) shape += fmt::format("{},", m);
  // The exact value (shortest round trip): two SLOs are one shape only when they are equal.
  if (inputs.slo_value) shape += fmt::format("{}{}", kSloPart, w.slo_qps);
  return shape;
}

std::string_view WithoutSlo(std::string_view shape) {
  const size_t at = shape.rfind(kSloPart);
  return at == std::string_view::npos ? shape : shape.substr(0, at);
}

Expected<void> Scheduler::Submit(Workload w) {
  if (auto ok = w.Validate(); !ok) return ok;
  if (queued_.contains(w.id) || parked_ids_.contains(w.id) || cluster_.Find(w.id)) {
    return Fail("workload {} is already known", w.id);
  }
  if (w.arrival_s == 0) w.arrival_s = clock_.Now();
  Enqueue(std::move(w));
  return {};
}

void Scheduler::Enqueue(Workload w) {
  // By priority, the highest first (kube-scheduler's PrioritySort), then FIFO by (arrival, id):
  // arrivals come nearly in order, so the place is found from the back.
  auto later = [&w](const Queued& q) {
    if (q.workload.priority != w.priority) return q.workload.priority < w.priority;
    return q.workload.arrival_s != w.arrival_s ? q.workload.arrival_s > w.arrival_s
                                               : q.workload.id > w.id;
  };
  auto it = pending_.end();
  while (it != pending_.begin() && later(*std::prev(it))) --it;
  std::string shape = RequestShape(w, policy_.OffersDependOn());
  if (hooks_.admission_key) {
    // Before the SLO's part, which WithoutSlo cuts from the end.
    const size_t at = shape.rfind(kSloPart);
    shape.insert(at == std::string::npos ? shape.size() : at, "|admits=" + hooks_.admission_key(w));
  }
  ++shapes_[shape];
  const WorkloadId id = w.id;
  queued_[id] = pending_.insert(it, Queued{std::move(w), std::move(shape)});
  ++arrivals_;
}

void Scheduler::Dequeue(Queue::iterator it) {
  auto s = shapes_.find(it->shape);
  if (--s->second == 0) shapes_.erase(s);
  queued_.erase(it->workload.id);
  pending_.erase(it);
}

std::vector<const Workload*> Scheduler::pending() const {
  std::vector<const Workload*> out;
  out.reserve(pending_.size());
  for (const Queued& q : pending_) out.push_back(&q.workload);
  return out;
}

std::vector<Scheduler::Verdict>* Scheduler::VerdictsFor(const std::string& shape) {
  const policy::Policy::OfferInputs inputs = policy_.OffersDependOn();
  if (!inputs.node_local_filter || inputs.live_state) return nullptr;
  const size_t nodes = cluster_.node_count();
  if (inputs.filter_epoch != verdicts_epoch_) {
    verdicts_.clear();
    verdict_entries_ = 0;
    verdicts_epoch_ = inputs.filter_epoch;
  }
  // Filter never reads the SLO's value: workloads that differ only in it share verdicts.
  verdict_key_.assign(inputs.slo_value ? WithoutSlo(shape) : std::string_view(shape));
  auto it = verdicts_.find(verdict_key_);
  if (it == verdicts_.end()) {
    if (verdict_entries_ + nodes > kMaxVerdicts) {
      verdicts_.clear();
      verdict_entries_ = 0;
    }
    it = verdicts_.emplace(verdict_key_, std::vector<Verdict>{}).first;
  }
  if (it->second.size() < nodes) {
    verdict_entries_ += nodes - it->second.size();
    it->second.resize(nodes);
  }
  return &it->second;
}

std::optional<bool> Scheduler::SelectByRanking(const Workload& w, const std::string& shape) {
  auto it = rankings_.find(shape);
  if (it == rankings_.end()) {
    size_t bytes = 0;
    for (const auto& [s, r] : rankings_) bytes += r.bytes();
    if (bytes > kMaxRankingBytes) rankings_.clear();
    it = rankings_.emplace(shape, KeptRanking{}).first;
  }
  KeptRanking& ranking = it->second;
  // Filter is called here, not kept: a node is re-rated because it changed, which is when a
  // kept verdict would be stale.
  ranking.Sync(cluster_, [&](model::NodeIndex n) -> KeptRanking::Rating {
    // The shape carries the admission rules, so a node's admission is kept with its rating.
    if (const std::string_view refused = hooks_.admits ? hooks_.admits(w, n) : std::string_view();
        !refused.empty()) {
      return {std::nullopt, refused};
    }
    if (const std::string_view reason = policy_.Filter(w, n, cluster_).reason; !reason.empty()) {
      return {std::nullopt, reason};
    }
    if (!policy_.ScoreInto(w, n, cluster_, scratch_)) return {std::nullopt, kNoOffer};
    return {scratch_.score, {}};
  });
  if (ranking.unusable()) return std::nullopt;
  if (const std::optional<model::NodeIndex> n = ranking.Best()) {
    if (!policy_.ScoreInto(w, *n, cluster_, best_)) return std::nullopt;
    return true;
  }
  ranking.Reasons(reasons_);  // no node offers: every node's reason, kept by the ranking
  return false;
}

std::optional<policy::Candidate> Scheduler::SelectNode(const Workload& w, const std::string& shape,
                                                       std::string& why) {
  const policy::Policy::OfferInputs inputs = policy_.OffersDependOn();
  const bool first = options_.tie_break == TieBreak::kFirst && !hooks_.scored;
  reasons_.clear();
  offers_.clear();
  std::optional<bool> ranked;
  if (first && inputs.node_local_filter && inputs.node_local_score && !inputs.live_state) {
    ranked = SelectByRanking(w, shape);
  }
  std::vector<Verdict>* verdicts = ranked ? nullptr : VerdictsFor(shape);
  bool found = false;
  int ties = 0;
  if (ranked) {
    found = *ranked;
  } else if (first && inputs.score_ceilings) {
    found = SelectByCeiling(w, verdicts);
  } else {
    for (model::NodeIndex n = 0; n < cluster_.node_count(); ++n) {
      if (const std::string_view reason = FilterReason(w, n, verdicts); !reason.empty()) {
        CountReason(reason);
        continue;
      }
      if (found && !hooks_.scored) {
        // A node that cannot reach the best offer so far cannot win or tie: not scored.
        const std::optional<double> ceiling = policy_.ScoreCeiling(w, n, cluster_);
        if (ceiling && *ceiling < best_.score) continue;
      }
      if (!policy_.ScoreInto(w, n, cluster_, scratch_)) {
        CountReason(kNoOffer);
        continue;
      }
      if (hooks_.scored) offers_.push_back({n, scratch_.score});
      if (!found || scratch_.score > best_.score) {
        std::swap(best_, scratch_);
        found = true;
        ties = 1;
      } else if (scratch_.score == best_.score && options_.tie_break == TieBreak::kRandom &&
                 rng_.Below(++ties) == 0) {
        std::swap(best_, scratch_);  // reservoir sampling: each tied node wins with equal chance
      }
    }
  }
  if (found) return std::move(best_);
  std::sort(reasons_.begin(), reasons_.end());
  why = fmt::format("0/{} nodes are available:", cluster_.node_count());
  for (const auto& [reason, count] : reasons_) why += fmt::format(" {} {},", count, reason);
  if (why.back() == ',') why.pop_back();
  return std::nullopt;
}

bool Scheduler::SelectByCeiling(const Workload& w, std::vector<Verdict>* verdicts) {
  // The feasible nodes with their ceilings (none, or NaN: scored first), then a max-heap: the
  // highest ceiling on top, the lower node among equal ones.
  by_ceiling_.clear();
  for (model::NodeIndex n = 0; n < cluster_.node_count(); ++n) {
    if (const std::string_view reason = FilterReason(w, n, verdicts); !reason.empty()) {
      CountReason(reason);
      continue;
    }
    const std::optional<double> ceiling = policy_.ScoreCeiling(w, n, cluster_);
    if (ceiling && *ceiling == -std::numeric_limits<double>::infinity()) {
      CountReason(kNoOffer);  // the policy knows it has none here
      continue;
    }
    by_ceiling_.emplace_back(
        ceiling && !std::isnan(*ceiling) ? *ceiling : std::numeric_limits<double>::infinity(), n);
  }
  const auto below = [](const std::pair<double, model::NodeIndex>& a,
                        const std::pair<double, model::NodeIndex>& b) {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  };
  std::make_heap(by_ceiling_.begin(), by_ceiling_.end(), below);
  bool found = false;
  model::NodeIndex best_node = -1;
  while (!by_ceiling_.empty()) {
    std::pop_heap(by_ceiling_.begin(), by_ceiling_.end(), below);
    const auto [ceiling, n] = by_ceiling_.back();
    by_ceiling_.pop_back();
    // No node left could beat or tie the best offer.
    if (found && ceiling < best_.score) break;
    if (!policy_.ScoreInto(w, n, cluster_, scratch_)) {
      CountReason(kNoOffer);
      continue;
    }
    if (!found || scratch_.score > best_.score ||
        (scratch_.score == best_.score && n < best_node)) {
      std::swap(best_, scratch_);
      best_node = n;
      found = true;
    }
  }
  return found;
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
  parked_ids_.insert(w.id);
  ++stats.parked;
  hooks_.reshape(g, cand.reshape->layout);
  return true;
}

CycleStats Scheduler::RunCycle() {
  CycleStats stats;
  // Nothing arrived and nothing changed since a fruitless cycle: it stays fruitless.
  const bool fruitless_again = fruitless_ && !policy_.OffersDependOn().live_state &&
                               *fruitless_ == std::make_pair(cluster_.version(), arrivals_);
  if (!fruitless_again) {
    fruitless_.reset();
    if (!pending_.empty() && PlacePending(stats)) {
      fruitless_ = std::make_pair(cluster_.version(), arrivals_);
    }
  }
  if (options_.preemption) Preempt(stats);
  ProactiveReshapes(stats);
  const policy::CycleActions actions = policy_.AfterCycle(cluster_);
  Evict(actions.evictions, stats);
  Resize(actions.resizes, stats);
  if (stats.reshapes > 0 || stats.evicted > 0 || stats.resized > 0) fruitless_.reset();
  Accumulate(stats);
#ifdef TESSERA_CHECK_INVARIANTS
  // Sanitizer builds (the test command) verify the whole cluster after every cycle that changed
  // it, so every test and every simulated experiment they run has its invariants checked; on
  // big clusters every n-th such cycle (a check walks every GPU and workload).
  if (stats.bound + stats.reshapes + stats.evicted + stats.resized > 0) {
    const size_t size = cluster_.gpu_count() + cluster_.placed_count();
    if (changed_cycles_++ % std::max<size_t>(1, size / 512) == 0) {
      if (auto ok = cluster_.CheckInvariants(); !ok) {
        Die("scheduler: the cluster's invariants broke in a cycle: " + ok.error().message);
      }
    }
  }
#endif
  return stats;
}

bool Scheduler::PlacePending(CycleStats& stats) {
  // The cycle's order: the queue itself (walked in place: a saturated queue holds tens of
  // thousands), or the policy's (which a batch sees too).
  if (!policy_.CustomOrder() && !policy_.Batches()) return PlaceEach({}, stats);
  std::vector<const Workload*> ordered = pending();
  std::vector<Queue::iterator> order;
  if (policy_.CustomOrder()) {
    policy_.Order(ordered);
    // The policy orders within a priority, never across (the queue is by priority already;
    // with one priority, as in every simulated experiment, nothing is sorted).
    const auto higher = [](const Workload* a, const Workload* b) {
      return a->priority > b->priority;
    };
    if (!std::is_sorted(ordered.begin(), ordered.end(), higher)) {
      std::stable_sort(ordered.begin(), ordered.end(), higher);
    }
    for (const Workload* w : ordered) order.push_back(queued_.at(w->id));
  }

  if (!policy_.Batches()) return PlaceEach(order, stats);
  if (std::optional<std::vector<policy::Candidate>> batch = policy_.PlaceBatch(ordered, cluster_)) {
    CommitBatch(std::move(*batch), stats);
    return false;
  }
  return PlaceEach(order, stats);
}

void Scheduler::CommitBatch(std::vector<policy::Candidate> batch, CycleStats& stats) {
  for (policy::Candidate& cand : batch) {
    auto it = queued_.find(cand.placement.workload);
    if (it == queued_.end()) {
      ++stats.policy_errors;
      continue;
    }
    ++stats.attempted;
    const Queue::iterator q = it->second;
    if (hooks_.admits) {
      if (const std::string_view refused = hooks_.admits(q->workload, cand.placement.node);
          !refused.empty()) {
        ++stats.unschedulable;
        const std::string why = fmt::format("the batch chose node {}, which refuses it: {}",
                                            cluster_.node(cand.placement.node).name, refused);
        last_reason_[q->workload.id] = why;
        if (hooks_.unschedulable) hooks_.unschedulable(q->workload, why, false);
        continue;
      }
    }
    if (Commit(q->workload, std::move(cand), stats)) Dequeue(q);
  }
  // Dropping applies to a batch too: what it left waiting fits nowhere this cycle (an
  // arrive-only replay counts it failed, and must not see it bound at a later arrival).
  if (!options_.drop_unschedulable) return;
  for (Queue::iterator q = pending_.begin(); q != pending_.end();) {
    const Queue::iterator left = q++;
    const Workload& w = left->workload;
    ++stats.attempted;
    ++stats.unschedulable;
    ++stats.dropped;
    const std::string why = "the batch placed it nowhere";
    last_reason_[w.id] = why;
    if (hooks_.unschedulable) hooks_.unschedulable(w, why, true);
    Dequeue(left);
  }
}

bool Scheduler::PlaceEach(const std::vector<Queue::iterator>& order, CycleStats& stats) {
  // Shapes that found no node this cycle, with the reason, until a reshape or resize.
  std::unordered_map<std::string, std::string> failed;
  // For a policy whose failures stand for higher SLOs (OfferInputs::slo_monotone): per shape
  // without its SLO, the lowest SLO that found no node this cycle, and its reason.
  const policy::Policy::OfferInputs inputs = policy_.OffersDependOn();
  const bool monotone = inputs.slo_value && inputs.slo_monotone;
  std::unordered_map<std::string_view, std::pair<double, std::string>> lowest_failed;
  const bool drop = options_.drop_unschedulable;
  const size_t n = order.empty() ? pending_.size() : order.size();
  Queue::iterator next = pending_.begin();
  for (size_t i = 0; i < n; ++i) {
    const Queue::iterator q = order.empty() ? next++ : order[i];
    if (options_.max_binds_per_cycle > 0 && stats.bound >= options_.max_binds_per_cycle) break;
    // Every shape still queued has failed: nothing further can be placed this cycle.
    if (!drop && !failed.empty() && failed.size() == shapes_.size()) break;
    const Workload& w = q->workload;
    auto known = failed.find(q->shape);
    if (known == failed.end() && monotone) {
      auto low = lowest_failed.find(WithoutSlo(q->shape));
      if (low != lowest_failed.end() && w.slo_qps >= low->second.first) {
        known = failed.emplace(q->shape, low->second.second).first;
      }
    }
    if (known != failed.end() && !drop) continue;
    ++stats.attempted;
    std::string why;
    std::optional<policy::Candidate> best;
    if (known != failed.end()) {
      why = known->second;
    } else {
      best = SelectNode(w, q->shape, why);
    }
    if (!best) {
      ++stats.unschedulable;
      last_reason_[w.id] = why;
      if (known == failed.end()) {
        const auto added = failed.emplace(q->shape, why).first;
        // Keyed by a view of `failed`'s own copy of the shape (its nodes never move; both
        // maps are cleared together), not of the queue's, which may drop the workload.
        if (monotone) {
          const std::string_view base = WithoutSlo(added->first);
          auto [low, fresh] = lowest_failed.try_emplace(base, w.slo_qps, why);
          if (!fresh && w.slo_qps < low->second.first) low->second = {w.slo_qps, why};
        }
      }
      if (hooks_.unschedulable) hooks_.unschedulable(w, why, drop);
      if (drop) {
        ++stats.dropped;
        Dequeue(q);
      }
      continue;
    }
    if (hooks_.scored) hooks_.scored(w, *best, offers_);
    const bool changes_cluster_shape = best->reshape.has_value() || !best->resizes.empty();
    if (Commit(w, std::move(*best), stats)) Dequeue(q);
    if (changes_cluster_shape) {
      lowest_failed.clear();
      failed.clear();
    }
  }
  // Fruitless when every shape still queued found no node in the state the cycle ends in
  // (binds after a failure only took resources away).
  if (drop || pending_.empty()) return false;
  for (const auto& [shape, count] : shapes_) {
    if (!failed.contains(shape)) return false;
  }
  return true;
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

void Scheduler::Evict(const std::vector<policy::Eviction>& evictions, CycleStats& stats) {
  for (const policy::Eviction& e : evictions) {
    const WorkloadId id = e.workload;
    const model::PlacedWorkload* pw = cluster_.Find(id);
    if (!pw) {
      ++stats.policy_errors;
      continue;
    }
    const Workload w = pw->workload;
    const model::Placement was = pw->placement;
    TESSERA_CHECK(cluster_.Remove(id).has_value());
    if (hooks_.evict && !hooks_.evict(w, e)) {
      // Still running where it was: its slices are as free as the moment before.
      TESSERA_CHECK(cluster_.Place(w, was).has_value());
      ++stats.evictions_declined;
      continue;
    }
    ++stats.evicted;
  }
}

void Scheduler::Preempt(CycleStats& stats) {
  if (pending_.empty() || cluster_.placed_count() == 0) return;
  // A search that found nothing stays fruitless while nothing arrived and nothing changed
  // (a policy that reads live state aside): waiting pods cost nothing per cycle.
  const auto now = std::make_pair(cluster_.version(), arrivals_);
  if (preempt_fruitless_ == now && !policy_.OffersDependOn().live_state) return;
  int lowest = std::numeric_limits<int>::max();
  for (const auto& [id, pw] : cluster_.placed()) lowest = std::min(lowest, pw.workload.priority);
  // Request shapes (with their admission rules) searched this cycle and found no preemption.
  std::unordered_set<std::string_view> searched;
  for (const Queued& q : pending_) {  // by priority, the highest first
    const Workload& w = q.workload;
    if (w.priority <= lowest) break;  // nobody from here on outranks anything running
    if (hooks_.may_preempt && !hooks_.may_preempt(w)) continue;
    if (!searched.insert(q.shape).second) continue;
    const std::optional<Preemption> found =
        FindPreemption(w, cluster_, policy_, hooks_.admits, hooks_.preemptible);
    if (!found) continue;
    const std::string by = w.name.empty() ? fmt::format("workload {}", w.id) : w.name;
    const int evicted = stats.evicted;
    for (const WorkloadId victim : found->victims) {
      const int declined = stats.evictions_declined;
      const model::PlacedWorkload* pw = cluster_.Find(victim);
      const std::string reason =
          fmt::format("preempted by {} (priority {} > {}) on node {}", by, w.priority,
                      pw->workload.priority, cluster_.node(found->node).name);
      Evict({{.workload = victim, .requeue = false, .reason = reason, .preemption = true}}, stats);
      if (stats.evictions_declined > declined) break;
    }
    if (stats.evicted > evicted) ++stats.preemptions;
    return;  // one preemptor per cycle: the next cycle places it
  }
  preempt_fruitless_ = now;
}

void Scheduler::Resize(const std::vector<policy::ResizeTo>& resizes, CycleStats& stats) {
  for (const policy::ResizeTo& r : resizes) {
    const model::PlacedWorkload* pw = cluster_.Find(r.workload);
    if (!pw || pw->placement.slices == r.slices) {
      if (!pw) ++stats.policy_errors;
      continue;
    }
    const std::vector<model::Slice> before = pw->placement.slices;
    if (!cluster_.Resize(r.workload, r.slices)) {  // a policy bug: counted, nothing changed
      ++stats.policy_errors;
      continue;
    }
    if (hooks_.resized && !hooks_.resized(pw->workload, pw->placement)) {
      TESSERA_CHECK(cluster_.Resize(r.workload, before).has_value());
      continue;
    }
    ++stats.resized;
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
    parked_ids_.erase(p.workload.id);
    if (!ReserveAndBind(p.workload, p.placement, stats)) Enqueue(std::move(p.workload));
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
  auto it = queued_.find(id);
  if (it == queued_.end()) return false;
  Dequeue(it->second);
  return true;
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
  totals_.resized += s.resized;
  totals_.parked += s.parked;
  totals_.preemptions += s.preemptions;
}

}  // namespace tessera::sched
