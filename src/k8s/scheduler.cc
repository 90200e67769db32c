// Before anything that includes <resolv.h> (cpp-httplib does), whose `_res` macro breaks Eigen.
#include "predict/predictor.h"
//
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <span>

#include "k8s/cluster_view.h"
#include "k8s/scheduler.h"
#include "model/mig.h"
#include "policy/registry.h"
#include "predict/config_key.h"
#include "telemetry/telemetry.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// "score 97.5 (next: gpu-2 96.0, gpu-4 90.1)": the chosen node's score and the best three
// others, so the Scheduled event can say why this node (DESIGN §3 explain).
std::string ScoreSummary(std::span<const sched::Offer> offers, model::NodeIndex chosen,
                         const model::ClusterState& c) {
  std::string out;
  std::vector<sched::Offer> others;
  for (const sched::Offer& o : offers) {
    if (o.node == chosen) {
      out = fmt::format("score {:.1f}", o.score);
    } else {
      others.push_back(o);
    }
  }
  std::stable_sort(others.begin(), others.end(),
                   [](const sched::Offer& a, const sched::Offer& b) { return a.score > b.score; });
  if (!others.empty()) {
    out += " (next:";
    for (size_t i = 0; i < others.size() && i < 3; ++i) {
      out += fmt::format(" {} {:.1f}{}", c.node(others[i].node).name, others[i].score,
                         i + 1 < std::min<size_t>(others.size(), 3) ? "," : "");
    }
    out += ")";
  }
  return out;
}

constexpr const char* kSchedulingLoop = "scheduling loop";
constexpr const char* kElectionLoop = "leader election";

// What changes when a node's agent publishes a new inventory ("" for none).
std::string InventoryStamp(const std::optional<store::NodeInventory>& inv) {
  return inv ? fmt::format("{}/{}", inv->agent_id, inv->generation) : std::string();
}

}  // namespace

Scheduler::Scheduler(ApiClient& api, store::Store& store, const Clock& clock,
                     SchedulerConfig config)
    : api_(api),
      store_(store),
      clock_(clock),
      config_(std::move(config)),
      binder_(api, store, config_.scheduler_name),
      elector_(api, clock, config_.leader),
      health_(clock, LogHealthChange),
      api_name_("api server " + api.credentials().server),
      evictor_(api, binder_, clock, config_.evictions),
      rng_(config_.seed) {
  health_.Declare(api_name_);
  health_.Declare(store_.Name());
}

// The name preemption's evictions are counted and shown under (metrics, status page, Events).
const std::string kPreemption = "preemption";

Scheduler::~Scheduler() { Stop(); }

policy::PolicyContext Scheduler::PolicyInputs() {
  return {.rng = &rng_,
          .clock = &clock_,
          .predictor = config_.predictor,
          .telemetry = config_.telemetry,
          .learner = config_.learner,
          .job_profiles = config_.job_profiles,
          .can_move = config_.evictions.mode != EvictionOptions::Mode::kOff,
          .qps_window_s = config_.qps_min_age_s};
}

Expected<void> Scheduler::Start() {
  const policy::PolicyContext ctx = PolicyInputs();
  auto p = policy::MakePolicy(config_.policy, ctx, config_.policy_options);
  if (!p) return std::unexpected(p.error());
  if (config_.leader.identity.empty()) return Fail("scheduler: leader identity is empty");
  if (config_.learner != nullptr) {
    // Only the loop thread observes (policies' AfterCycle, replays): no lock needed.
    config_.learner->set_observation_sink(
        [this](const std::string& app, const std::string& config, double qps) {
          if (!replaying_) unsaved_.push_back({0, app, config, qps});
        });
  }
  auto push = [this](bool pod) {
    return [this, pod](EventType type, const json& object) {
      {
        std::lock_guard lock(mu_);
        changes_.push_back({pod, type, object});
      }
      cv_.notify_all();
    };
  };
  InformerOptions po = config_.informer;
  po.path = "/api/v1/pods";
  InformerOptions no = config_.informer;
  no.path = "/api/v1/nodes";
  pods_informer_ = std::make_unique<Informer>(api_, po, push(true));
  nodes_informer_ = std::make_unique<Informer>(api_, no, push(false));
  pods_informer_->Start();
  nodes_informer_->Start();
  stop_ = false;
  {
    std::lock_guard lock(mu_);
    election_answered_at_ = clock_.Now();  // no round yet: not "no answer" from the start
  }
  health_.Beat(kElectionLoop, config_.stall_s);
  health_.Beat(kSchedulingLoop, config_.stall_s);
  elector_thread_ = std::thread([this] { Elect(); });
  loop_ = std::thread([this] { Loop(); });
  probe_thread_ = std::thread([this] { Probe(); });
  return {};
}

void Scheduler::Stop() {
  if (!loop_.joinable()) return;
  stop_ = true;
  cv_.notify_all();
  loop_.join();
  if (config_.learner != nullptr) config_.learner->set_observation_sink({});
  elector_thread_.join();
  probe_thread_.join();
  if (!killed_) elector_.Release();
  pods_informer_->Stop();
  nodes_informer_->Stop();
}

void Scheduler::Kill() {
  killed_ = true;
  Stop();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Scheduler::Elect() {
  while (!stop_ && !killed_) {
    auto r = elector_.TryAcquireOrRenew();
    health_.Beat(kElectionLoop, config_.stall_s);
    std::unique_lock lock(mu_);
    // Reported (and logged once per change) by the probe, not on every round.
    election_error_ = r ? "" : r.error().message;
    if (r) election_answered_at_ = clock_.Now();
    cv_.wait_for(lock, std::chrono::duration<double>(config_.leader.retry_period_s),
                 [this] { return stop_ || killed_; });
  }
}

void Scheduler::Probe() {
  while (!stop_ && !killed_) {
    CheckDependencies();
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(config_.probe_interval_s),
                 [this] { return stop_ || killed_; });
  }
}

void Scheduler::CheckDependencies() {
  const double now = clock_.Now();
  std::string api;
  double answered_at = 0;
  {
    std::lock_guard lock(mu_);
    if (!election_error_.empty()) api = api_name_ + ": leader election: " + election_error_;
    answered_at = election_answered_at_;
  }
  const double stale = std::max(config_.leader.lease_duration_s, 3 * config_.leader.retry_period_s);
  if (api.empty() && now - answered_at > stale) {
    api = fmt::format("{}: leader election: no answer for {:.0f} s", api_name_, now - answered_at);
  }
  for (const auto& [what, informer] :
       {std::pair{"pods", pods_informer_.get()}, std::pair{"nodes", nodes_informer_.get()}}) {
    if (!api.empty()) break;
    const InformerStats s = informer->stats();
    if (!s.last_error.empty()) {
      api = fmt::format("{}: {}: {}", api_name_, what, s.last_error);
    } else if (!informer->synced()) {
      api = fmt::format("{}: {} not listed yet", api_name_, what);
    }
  }
  health_.Set(api_name_, api);
  auto ping = store_.Ping();
  health_.Set(store_.Name(), ping ? "" : ping.error().message);
  if (elector_.Leading()) {
    health_.SetRole("leader (" + config_.leader.identity + ")");
  } else {
    const std::string holder = elector_.holder();
    health_.SetRole(fmt::format("standby (Lease {}/{} held by {})", config_.leader.namespace_,
                                config_.leader.name, holder.empty() ? "nobody" : holder));
  }
}

void Scheduler::Loop() {
  while (!stop_ && !killed_) {
    health_.Beat(kSchedulingLoop, config_.stall_s);
    const bool leading = elector_.Leading();
    if (leading != leading_) {
      leading_ = leading;
      need_rebuild_ = true;
      spdlog::info("scheduler {}: {}", config_.leader.identity,
                   leading ? "leading: scheduling" : "not leading: standing by");
      if (!leading) {  // forget everything; whoever leads now owns the decisions
        core_.reset();
        known_.clear();
      }
      need_observations_ = leading;  // what the last leader learned, before scheduling
    }
    // Changes are applied even when standing by, so a take-over starts from a warm cache.
    // Whether both informers have listed is read before the batch is taken: an informer
    // delivers its list's objects before it says synced, so every object of that list is in
    // this batch. Read after, a list delivered half before the swap and half after would make
    // the scheduler lead on half the nodes.
    std::deque<Change> batch;
    bool synced = false;
    {
      std::lock_guard lock(mu_);
      synced = pods_informer_->synced() && nodes_informer_->synced();
      batch.swap(changes_);
      stats_.leading = leading_;
    }
    for (const Change& c : batch) Apply(c);
    if (leading_ && synced) Lead();

    std::unique_lock lock(mu_);
    const double wait = leading_ ? std::max(0.001, std::min(next_retry_, next_poll_) - clock_.Now())
                                 : config_.leader.retry_period_s;
    cv_.wait_for(lock, std::chrono::duration<double>(std::min(wait, 0.5)),
                 [this] { return !changes_.empty() || stop_ || killed_; });
  }
}

void Scheduler::Lead() {
  const double now = clock_.Now();
  if (need_observations_ && !LoadObservations()) return;  // retried on the next turn
  need_observations_ = false;
  if (now >= next_poll_) {
    CheckReshapes();
    if (InventoriesChanged()) need_rebuild_ = true;
    next_poll_ = now + config_.inventory_poll_s;
  }
  if (need_rebuild_) {
    if (!Rebuild()) return;  // retried on the next turn of the loop
    need_rebuild_ = false;
    dirty_ = true;
  }
  if (!core_) return;
  RetryEvictions();
  // A cycle when pods wait and something changed or their retry is due; and every retry_s
  // while pods run, so that a policy acting on running pods (learning, moving, evicting) gets
  // its AfterCycle with nothing pending too.
  const bool due = now >= next_retry_;
  const bool waiting = core_->pending_count() > 0;
  if (!(waiting && (dirty_ || due)) && !(due && cluster_->placed_count() > 0)) {
    if (!waiting) dirty_ = false;
    UpdateStatus();
    return;
  }
  dirty_ = false;
  next_retry_ = now + config_.retry_s;
  attempt_start_ = clock_.Now();
  const sched::CycleStats s = core_->RunCycle();
  WatchQps();  // placements change in cycles: whose QPS to read is decided here
  SaveObservations();
  UpdateStatus();
  std::lock_guard lock(mu_);
  ++stats_.cycles;
  stats_.bind_failures += s.bind_failures;
  stats_.evictions_declined += s.evictions_declined;
  stats_.pending = core_->pending_count();
  std::erase_if(unschedulable_, [this](model::WorkloadId id) { return !known_.contains(id); });
  stats_.unschedulable_pending = unschedulable_.size();
  stats_.placed = cluster_->placed_count();
}

void Scheduler::Attempted(const std::string& result) {
  const double now = clock_.Now();
  const double took = std::max(0.0, now - attempt_start_);
  attempt_start_ = now;
  std::lock_guard lock(mu_);
  SchedulerStats::Attempts& a = stats_.attempts[result];
  ++a.count;
  a.sum_s += took;
  for (size_t i = 0; i < a.buckets.size(); ++i) {
    if (took <= SchedulerStats::kLatencyBuckets[i]) {
      ++a.buckets[i];
      break;
    }
  }
}

void Scheduler::Apply(const Change& c) {
  if (!c.pod) {
    auto node = NodeFromJson(c.object);
    if (!node) {
      spdlog::warn("skipping node: {}", node.error().message);
      return;
    }
    if (c.type == EventType::kDeleted) {
      need_rebuild_ |= nodes_.erase(node->name) > 0;
      return;
    }
    auto it = nodes_.find(node->name);
    for (const std::string& why : node->taints_skipped) {
      spdlog::warn("node {}: taint left out: {}", node->name, why);
    }
    const bool same = it != nodes_.end() && it->second.ready == node->ready &&
                      it->second.unschedulable == node->unschedulable &&
                      it->second.labels == node->labels && it->second.taints == node->taints &&
                      it->second.cpu_milli == node->cpu_milli &&
                      it->second.memory_mib == node->memory_mib;
    nodes_[node->name] = *node;
    need_rebuild_ |= !same;
    return;
  }
  auto pod = PodFromJson(c.object);
  if (!pod) {
    // A pod whose resources cannot be read: name it, skip it, keep going.
    const std::string key = Informer::KeyOf(c.object);
    spdlog::warn("skipping pod {}: {}", key, pod.error().message);
    if (c.type != EventType::kDeleted && c.object.contains("metadata")) {
      const json& m = c.object["metadata"];
      const json& spec = c.object.contains("spec") ? c.object["spec"] : json::object();
      if (spec.is_object() && StringMember(spec, "schedulerName") == config_.scheduler_name &&
          StringMember(spec, "nodeName").empty() && leading_) {
        Pod stub;
        stub.namespace_ = StringMember(m, "namespace", "default");
        stub.name = StringMember(m, "name");
        stub.uid = StringMember(m, "uid");
        stub.resource_version = StringMember(m, "resourceVersion");
        if (!stub.name.empty()) Warn(stub, "FailedScheduling", pod.error().message);
      }
    }
    return;
  }
  OnPod(c.type, *pod);
}

void Scheduler::Warn(const Pod& pod, const std::string& reason, const std::string& message) {
  const double now = clock_.Now();
  auto it = last_warning_.find(pod.uid);
  if (it != last_warning_.end() && it->second.first == message &&
      now - it->second.second < config_.event_repeat_s) {
    return;
  }
  last_warning_[pod.uid] = {message, now};
  binder_.PostEvent({pod.namespace_, pod.name, pod.uid}, "Warning", reason, message);
}

void Scheduler::OnPod(EventType type, const Pod& pod) {
  const bool gone = type == EventType::kDeleted;
  const std::optional<model::WorkloadId> known_id = ids_.Find(pod.uid);
  if (gone) {
    pods_.erase(pod.uid);
    invalid_.erase(pod.uid);
    last_warning_.erase(pod.uid);
    queued_at_.erase(pod.uid);
    evictor_.Forget(pod.uid);
  } else {
    pods_[pod.uid] = pod;
  }
  if (!leading_ || need_rebuild_ || !core_) return;  // a rebuild reads pods_ afresh

  const bool releases = gone || pod.Terminal() || pod.deleting;
  if (known_id && known_.contains(*known_id)) {
    const model::WorkloadId id = *known_id;
    if (releases) {
      Release(id, gone ? "deleted" : pod.deleting ? "terminating" : pod.phase);
    } else if (!known_[id].placed && !pod.node_name.empty()) {
      core_->Cancel(id);  // bound by someone else
      known_.erase(id);
    } else if (!known_[id].placed &&
               (pod.node_rules.Key() != known_[id].rules.Key() || !pod.rules_error.empty())) {
      // Still waiting, with other node rules (tolerations may be added to a pod; a gated pod's
      // selector and affinity may change): queued again under the new ones.
      core_->Cancel(id);
      known_.erase(id);
      SubmitPod(pod);
    }
    return;
  }
  if (releases || !Ours(pod) || !pod.node_name.empty()) return;
  // An invalid pod is retried only when it changes (its annotations may have been fixed).
  SubmitPod(pod);
}

void Scheduler::SubmitPod(const Pod& pod) {
  const model::WorkloadId id = ids_.IdOf(pod.uid);
  auto w = WorkloadFromPod(pod, id);
  if (w && !pod.rules_error.empty()) w = Fail("{}", pod.rules_error);
  if (!w) {
    auto inv = invalid_.find(pod.uid);
    if (inv == invalid_.end() || inv->second != w.error().message) {
      spdlog::warn("{}", w.error().message);
      std::lock_guard lock(mu_);
      ++stats_.invalid_pods;
    }
    invalid_[pod.uid] = w.error().message;
    Warn(pod, "FailedScheduling", w.error().message);
    return;
  }
  invalid_.erase(pod.uid);
  queued_at_.try_emplace(pod.uid, clock_.Now());
  DeclareFeatures(pod, *w);
  // Known before the core queues it: the queue asks for its node rules (AdmissionKey).
  known_[id] = Known{{pod.namespace_, pod.name, pod.uid}, false};
  known_[id].rules = pod.node_rules;
  known_[id].preempts = pod.preempts;
  if (auto ok = core_->Submit(std::move(*w)); !ok) {
    spdlog::warn("pod {}: {}", pod.Key(), ok.error().message);
    known_.erase(id);
    return;
  }
  dirty_ = true;
  std::lock_guard lock(mu_);
  stats_.pending = core_->pending_count();
}

void Scheduler::DeclareFeatures(const Pod& pod, const model::Workload& w) {
  if (config_.learner == nullptr || w.features.empty()) return;
  Expected<bool> changed = config_.learner->SetFeatures(w.app, w.features);
  if (!changed) {
    // Scheduled all the same, on what the predictor already knows of the application.
    spdlog::warn("pod {}: features not used: {}", pod.Key(), changed.error().message);
    Warn(pod, "FeaturesIgnored", changed.error().message);
    return;
  }
  if (!*changed) return;
  if (auto ok = config_.learner->Refit(); !ok) {
    spdlog::warn("pod {}: refit after its features: {}", pod.Key(), ok.error().message);
  }
}

void Scheduler::Release(model::WorkloadId id, const std::string& why) {
  Known k = known_[id];
  known_.erase(id);
  if (!k.placed) {
    core_->Cancel(id);
    return;
  }
  if (auto ok = core_->Finish(id); !ok) spdlog::warn("pod {}: {}", k.ref.name, ok.error().message);
  if (auto r = store_.RemovePlacement(k.ref.uid); !r) {
    spdlog::warn("pod {}/{}: store: {}", k.ref.namespace_, k.ref.name, r.error().message);
  }
  spdlog::debug("pod {}/{} released its slices ({})", k.ref.namespace_, k.ref.name, why);
  dirty_ = true;
  std::lock_guard lock(mu_);
  ++stats_.finished;
}

bool Scheduler::InventoriesChanged() {
  bool changed = false;
  for (const auto& [name, node] : nodes_) {
    auto inv = store_.GetInventory(name);
    if (!inv) {
      spdlog::debug("store: {}", inv.error().message);  // /readyz and the probe's log say it
      return false;
    }
    const std::string seen = InventoryStamp(*inv);
    auto it = inventory_seen_.find(name);
    changed |= it == inventory_seen_.end() || it->second != seen;
  }
  return changed;
}

bool Scheduler::Rebuild() {
  if (!RelistPods()) return false;
  std::unique_ptr<model::ClusterState> cluster = ClusterFromInventories();
  if (!cluster) return false;
  // What was known before keeps a bound pod's age (its QPS is read only once old enough).
  const std::unordered_map<model::WorkloadId, Known> before = std::exchange(known_, {});
  std::set<std::string> bound_uids;
  int restored = 0;
  for (const auto& [uid, pod] : pods_) {
    if (pod.node_name.empty() || pod.Terminal()) continue;
    bound_uids.insert(uid);
    restored += RestoreBoundPod(*cluster, pod, before);
  }
  // After the restore: a held-out GPU still carries the pods bound to it.
  HoldOutGpus(*cluster);
  DropUnbackedPlacements(bound_uids);
  StartCore(std::move(cluster));
  int pending = 0;
  for (const auto& [uid, pod] : pods_) {
    if (!Ours(pod) || !pod.node_name.empty() || pod.Terminal() || pod.deleting) continue;
    SubmitPod(pod);
    ++pending;
  }
  spdlog::info("scheduler {}: rebuilt: {} nodes, {} GPUs, {} placements restored, {} pending",
               config_.leader.identity, cluster_->node_count(), cluster_->gpu_count(), restored,
               pending);
  std::lock_guard lock(mu_);
  ++stats_.rebuilds;
  return true;
}

bool Scheduler::RelistPods() {
  // Bound pods come from a fresh LIST, not the informer's cache: the previous leader's last
  // bindings may still be on their way down our watch.
  auto listed = ListObjects(api_, "/api/v1/pods");
  if (!listed) {
    spdlog::debug("rebuild: {}", listed.error().message);  // retried every turn; see /readyz
    return false;
  }
  pods_.clear();
  for (const json& obj : *listed) {
    if (auto pod = PodFromJson(obj)) pods_[pod->uid] = std::move(*pod);
  }
  return true;
}

std::unique_ptr<model::ClusterState> Scheduler::ClusterFromInventories() {
  auto cluster = std::make_unique<model::ClusterState>();
  cluster->set_mig_mode_fixed(true);  // the agents never change MIG mode
  inventory_seen_.clear();
  std::map<std::string, std::string> stuck;  // GPU uuid -> node
  for (const auto& [name, node] : nodes_) {
    model::NodeSpec spec;
    auto inv = store_.GetInventory(name);
    if (!inv) {
      // Retried every turn; the probe logs the outage once and /readyz names it.
      spdlog::debug("store unreachable, keeping the old cluster view: {}", inv.error().message);
      return nullptr;
    }
    inventory_seen_[name] = InventoryStamp(*inv);
    if (*inv) {
      for (const store::GpuInventory& g : (**inv).gpus) {
        if (g.mps_stuck && !g.lost) stuck.emplace(g.uuid, name);
      }
      auto s = store::ToNodeSpec(**inv);
      if (s) {
        spec = std::move(*s);
      } else {
        spdlog::warn("node {}: inventory unusable: {}", name, s.error().message);
      }
    }
    // The API server's view of the node wins over the agent's for CPU, memory and labels.
    spec.name = name;
    if (node.cpu_milli > 0) spec.cpu_milli = node.cpu_milli;
    if (node.memory_mib > 0) spec.memory_mib = node.memory_mib;
    for (const auto& [k, v] : node.labels) spec.labels[k] = v;
    auto added = cluster->AddNode(spec);
    if (!added) {
      spdlog::warn("node {}: {}", name, added.error().message);
      continue;
    }
    cluster->SetNodeReady(*added, node.ready && !node.unschedulable);
  }
  NoteMpsStuck(stuck);
  return cluster;
}

void Scheduler::HoldOutGpus(model::ClusterState& cluster) {
  size_t reshape_held = 0;
  for (model::GpuIndex g = 0; g < cluster.gpu_count(); ++g) {
    auto h = held_out_.find(cluster.gpu(g).uuid);
    const bool failed_reshape = h != held_out_.end() && h->second.active;
    reshape_held += failed_reshape;
    if (failed_reshape || mps_stuck_.contains(cluster.gpu(g).uuid)) {
      cluster.SetGpuAvailable(g, false);
    }
  }
  std::lock_guard lock(mu_);
  stats_.gpus_mps_stuck = mps_stuck_.size();
  stats_.gpus_reshape_held = reshape_held;
}

void Scheduler::NoteMpsStuck(const std::map<std::string, std::string>& stuck) {
  for (const auto& [uuid, node] : stuck) {
    if (mps_stuck_.contains(uuid)) continue;
    spdlog::warn(
        "GPU {} on {}: its agent judges the MPS server stuck; the GPU takes no new pods until "
        "it recovers (its running pods are left to the operator)",
        uuid, node);
  }
  for (const std::string& uuid : mps_stuck_) {
    if (!stuck.contains(uuid)) {
      spdlog::info("GPU {}: its MPS server is no longer reported stuck", uuid);
    }
  }
  mps_stuck_.clear();
  for (const auto& [uuid, node] : stuck) mps_stuck_.insert(uuid);
}

bool Scheduler::RestoreBoundPod(model::ClusterState& cluster, const Pod& pod,
                                const std::unordered_map<model::WorkloadId, Known>& before) {
  const model::WorkloadId id = ids_.IdOf(pod.uid);
  model::Workload w;
  if (auto parsed = WorkloadFromPod(pod, id)) {
    w = std::move(*parsed);
  } else {  // it is bound all the same: it still uses the node's CPU and memory
    w.id = id;
    w.name = pod.Key();
    w.cpu_milli = pod.cpu_milli;
    w.memory_mib = pod.memory_mib;
  }
  std::optional<model::NodeIndex> n = cluster.FindNode(pod.node_name);
  if (!n) return false;  // a node we do not know (not Ready yet, or gone)
  model::Placement p{id, *n, {}};
  auto ann = pod.annotations.find(std::string(kAnnotationPlacement));
  const bool ours = ann != pod.annotations.end();
  if (ours) {
    auto rec = store::PlacementFromJson(ann->second, pod.Key() + " " + ann->first);
    if (!rec) {
      spdlog::error("{}", rec.error().message);
      return false;
    }
    if (rec->node != pod.node_name) {
      spdlog::error("pod {}: its placement names node {}, but it is bound to {}", pod.Key(),
                    rec->node, pod.node_name);
      return false;
    }
    auto placement = PlacementFromRecord(*rec, cluster, w);
    if (!placement) {
      spdlog::error("pod {}: {}", pod.Key(), placement.error().message);
      return false;
    }
    p = std::move(*placement);
    if (auto put = store_.PutPlacement(*rec); !put || !put->applied) {
      spdlog::error("pod {}: re-recording its placement: {}", pod.Key(),
                    put ? put->refusal : put.error().message);
    }
  } else {
    // Bound by another scheduler: it still uses the node's CPU and memory.
    w.gpu = {};
  }
  if (auto placed = cluster.Place(w, p); !placed) {
    spdlog::error("pod {}: cannot restore its placement: {}", pod.Key(), placed.error().message);
    return false;
  }
  if (ours) {
    // Bound before this rebuild: its age runs from when this scheduler first knew it bound
    // (or saw it Ready again), not from the rebuild.
    const auto prev = before.find(id);
    Known k = prev != before.end() && prev->second.placed ? prev->second : Known{};
    if (!k.placed) k.placed_at = clock_.Now();
    k.ref = {pod.namespace_, pod.name, pod.uid};
    k.placed = true;
    known_[id] = k;
  }
  return ours;
}

void Scheduler::DropUnbackedPlacements(const std::set<std::string>& bound_uids) {
  // Store placements no bound pod backs: a crash between the store write and the binding, or
  // a pod deleted while nobody led. Their slices are free again.
  auto recs = store_.ListPlacements();
  if (!recs) {
    spdlog::warn("store: {}", recs.error().message);
    return;
  }
  for (const store::PlacementRecord& r : *recs) {
    if (bound_uids.contains(r.workload)) continue;
    spdlog::info("store: dropping placement of unbound or deleted pod {}/{} ({})", r.namespace_,
                 r.pod, r.workload);
    if (auto ok = store_.RemovePlacement(r.workload); !ok) {
      spdlog::warn("store: {}", ok.error().message);
    }
  }
}

void Scheduler::StartCore(std::unique_ptr<model::ClusterState> cluster) {
  const policy::PolicyContext ctx = PolicyInputs();
  auto made = policy::MakePolicy(config_.policy, ctx, config_.policy_options);
  TESSERA_CHECK(made.has_value());  // validated in Start
  core_.reset();
  policy_ = std::move(*made);
  cluster_ = std::move(cluster);
  scored_ = {-1, ""};
  core_ = std::make_unique<sched::Scheduler>(
      *cluster_, *policy_, clock_, rng_,
      sched::Hooks{
          .bind = [this](const model::Workload& w, const model::Placement& p,
                         const model::Environment& env) { return BindHook(w, p, env); },
          .reshape = [this](model::GpuIndex g,
                            const std::optional<model::MigLayout>& l) { RequestReshape(g, l); },
          .evict = [this](const model::Workload& w,
                          const policy::Eviction& e) { return EvictHook(w, e); },
          .resized = [this](const model::Workload& w,
                            const model::Placement& p) { return ResizeHook(w, p); },
          .unschedulable = [this](const model::Workload& w, const std::string& why,
                                  bool) { Unschedulable(w, why); },
          .admits = [this](const model::Workload& w, model::NodeIndex n) { return Admits(w, n); },
          .admission_key =
              [this](const model::Workload& w) {
                auto it = known_.find(w.id);
                return it == known_.end() ? std::string() : it->second.rules.Key();
              },
          .scored =
              [this](const model::Workload& w, const policy::Candidate& chosen,
                     std::span<const sched::Offer> offers) {
                scored_ = {w.id, ScoreSummary(offers, chosen.placement.node, *cluster_)};
              },
          .may_preempt =
              [this](const model::Workload& w) {
                auto it = known_.find(w.id);
                return it != known_.end() && it->second.preempts;
              },
          .preemptible = [this](const model::Workload& w) { return Preemptible(w.id); }},
      sched::SchedulerOptions{.preemption = config_.preemption &&
                                            config_.evictions.mode == EvictionOptions::Mode::kOn});
}

std::string_view Scheduler::Admits(const model::Workload& w, model::NodeIndex n) {
  auto node = nodes_.find(cluster_->node(n).name);
  if (node == nodes_.end()) return {};  // the cluster is built from nodes_: not reached
  static const NodeRules kNone;         // a pod without rules is still refused by taints
  auto it = known_.find(w.id);
  const NodeRules& rules = it == known_.end() ? kNone : it->second.rules;
  if (!SelectorAdmits(rules, node->second.labels, node->first)) return kRefusedBySelector;
  if (const Taint* t = UntoleratedTaint(rules, node->second.taints)) {
    // kube-scheduler's words; kept, as the core's reasons must outlive the cycle.
    return *refusal_texts_
                .insert(fmt::format("node(s) had untolerated taint {{{}: {}}}", t->key, t->value))
                .first;
  }
  return {};
}

Expected<void> Scheduler::BindHook(const model::Workload& w, const model::Placement& p,
                                   const model::Environment& env) {
  auto it = known_.find(w.id);
  TESSERA_CHECK(it != known_.end());
  const PodRef ref = it->second.ref;
  const store::PlacementRecord rec = RecordOf(ref, p, *cluster_);
  auto ok = binder_.Bind(ref, rec, env, [this] { return !killed_ && elector_.Leading(); });
  health_.Beat(kSchedulingLoop, config_.stall_s);  // a long cycle of binds is progress
  Attempted(ok ? "scheduled" : "error");
  if (!ok) {
    spdlog::warn("{}", ok.error().message);
    return ok;
  }
  unschedulable_.erase(w.id);
  it->second.placed = true;
  it->second.placed_at = clock_.Now();
  {
    std::lock_guard lock(mu_);
    ++stats_.bound;
  }
  // The core reported this workload's offers just before reserving it (none for a batch).
  const std::string why = scored_.first == w.id ? scored_.second : "";
  const std::string slices = SlicesText(rec.slices);
  binder_.PostEvent(
      ref, "Normal", "Scheduled",
      fmt::format("Successfully assigned {}/{} to {}{}{}; policy {} {}", ref.namespace_, ref.name,
                  rec.node, slices.empty() ? "" : ": ", slices, config_.policy, why));
  last_warning_.erase(ref.uid);
  queued_at_.erase(ref.uid);
  return {};
}

void Scheduler::Unschedulable(const model::Workload& w, const std::string& why) {
  auto it = known_.find(w.id);
  if (it == known_.end()) return;
  Attempted("unschedulable");
  unschedulable_.insert(w.id);
  {
    std::lock_guard lock(mu_);
    ++stats_.unschedulable;
  }
  auto pod = pods_.find(it->second.ref.uid);
  if (pod != pods_.end()) Warn(pod->second, "FailedScheduling", why);
}

void Scheduler::RequestReshape(model::GpuIndex gpu, const std::optional<model::MigLayout>& layout) {
  const model::Gpu& g = cluster_->gpu(gpu);
  const model::GpuModel& m = model::GetGpuModel(g.model);
  store::MigReshapeRequest req{.node = cluster_->node(g.node).name,
                               .gpu_index = g.index,
                               .gpu_uuid = g.uuid,
                               .mig = layout ? model::LayoutToString(m, *layout) : std::string(),
                               .requested_by = config_.leader.identity,
                               .requested_at = MicroTimeNow()};
  // The agent on that node applies it, answers under MigReshapeStatusKey and publishes the
  // new inventory; CheckReshapes reads the answer and rebuilds, which re-queues the parked pods.
  if (auto ok = store_.PutProfile(store::MigReshapeRequestKey(req.node, req.gpu_uuid),
                                  store::ToJson(req));
      !ok) {
    // Unanswered, it times out in CheckReshapes like a request the agent never saw.
    spdlog::error("reshape of {} on {}: store: {}", req.gpu_uuid, req.node, ok.error().message);
  }
  spdlog::info("requested MIG reshape of {} on {} to '{}'", req.gpu_uuid, req.node, req.mig);
  const std::string uuid = req.gpu_uuid;
  reshapes_[uuid] = SentReshape{std::move(req), clock_.Now()};
  std::lock_guard lock(mu_);
  ++stats_.reshapes;
}

void Scheduler::CheckReshapes() {
  const double now = clock_.Now();
  for (auto& [uuid, h] : held_out_) {
    if (h.active && now >= h.until) {
      h.active = false;
      need_rebuild_ = true;
      spdlog::info("GPU {} is back in scheduling after its failed MIG reshape", uuid);
    }
  }
  for (auto it = reshapes_.begin(); it != reshapes_.end();) {
    const store::MigReshapeRequest& req = it->second.request;
    const std::string key = store::MigReshapeStatusKey(req.node, req.gpu_uuid);
    auto doc = store_.GetProfile(key);
    if (!doc) return;  // the store is out: asked again at the next poll
    std::optional<store::MigReshapeStatus> answer;
    if (*doc) {
      auto s = store::MigReshapeStatusFromJson(**doc, key);
      if (!s) {
        spdlog::warn("{}", s.error().message);
      } else if (s->Answers(req)) {
        answer = std::move(*s);
      }
    }
    const double age = now - it->second.sent;
    std::string why;
    if (answer && answer->state == "done") {
      spdlog::info("MIG reshape of {} on {} to '{}' done by the agent in {:.2f} s", req.gpu_uuid,
                   req.node, req.mig, answer->elapsed_s);
      held_out_.erase(req.gpu_uuid);
      it = reshapes_.erase(it);
      need_rebuild_ = true;  // also when nothing changed: the parked pods wait for a rebuild
      continue;
    }
    if (answer && answer->state == "planned") {
      why = "the agent only plans reshapes (tessera agent --mig-reshape dry-run)";
    } else if (answer && answer->final()) {
      why = fmt::format("{} ({})", answer->error, answer->fault);
      if (answer->rolled_back) {
        why += answer->restored ? "; the agent rolled it back"
                                : "; the agent's rollback was INCOMPLETE: check the GPU";
      }
    } else if (age > config_.reshape_timeout_s) {
      why = fmt::format("no answer from the agent on {} in {:.1f} s{}", req.node, age,
                        answer ? " (it is still applying it)" : "");
    } else {
      ++it;
      continue;
    }
    HeldOut& h = held_out_[req.gpu_uuid];
    ++h.failures;
    const double backoff =
        std::min(600.0, config_.reshape_backoff_s * std::pow(2.0, std::min(h.failures - 1, 10)));
    h.until = now + backoff;
    h.active = true;
    spdlog::error(
        "MIG reshape of {} on {} to '{}' failed: {}; the GPU is held out of "
        "scheduling for {:.0f} s",
        req.gpu_uuid, req.node, req.mig, why, backoff);
    {
      std::lock_guard lock(mu_);
      ++stats_.reshape_failures;
    }
    it = reshapes_.erase(it);
    need_rebuild_ = true;
  }
}

bool Scheduler::Preemptible(model::WorkloadId id) const {
  auto it = known_.find(id);
  if (it == known_.end() || !it->second.placed) return false;  // bound by another scheduler
  auto pod = pods_.find(it->second.ref.uid);
  return pod != pods_.end() && !pod->second.controller.empty() && !pod->second.deleting &&
         !evictor_.Waiting(pod->second.uid);
}

Expected<void> Scheduler::EvictHook(const model::Workload& w, const policy::Eviction& e) {
  auto it = known_.find(w.id);
  if (it == known_.end()) return Fail("not a pod this scheduler placed");
  auto pod = pods_.find(it->second.ref.uid);
  if (pod == pods_.end()) return Fail("pod {} is gone", w.name);
  // A refused eviction waits for its retry rather than asking the API server every cycle.
  if (evictor_.Waiting(pod->second.uid)) return Fail("a refused eviction waits for its retry");
  // Preemption is the core's, not the policy's: counted and shown under its own name.
  const std::string& by = e.preemption ? kPreemption : config_.policy;
  if (!evictor_.Try(pod->second, pod->second.node_name, by, e.reason)) {
    return Fail("not evicted");
  }
  Evicted(w.id);
  return {};
}

void Scheduler::Evicted(model::WorkloadId id) {
  // The pod terminates; its controller's replacement is a new pod, queued as any other.
  const Known k = known_[id];
  known_.erase(id);
  if (auto r = store_.RemovePlacement(k.ref.uid); !r) {
    spdlog::warn("pod {}/{}: store: {}", k.ref.namespace_, k.ref.name, r.error().message);
  }
  dirty_ = true;
  std::lock_guard lock(mu_);
  ++stats_.evicted;
}

void Scheduler::RetryEvictions() {
  for (Evictor::Retry& r : evictor_.Due()) {
    const std::optional<model::WorkloadId> id = ids_.Find(r.pod.uid);
    auto pod = pods_.find(r.pod.uid);
    // Only while it still runs where the policy wanted it off.
    if (!id || !known_.contains(*id) || !known_[*id].placed || pod == pods_.end() ||
        pod->second.node_name != r.node || pod->second.deleting) {
      continue;
    }
    if (!evictor_.Try(pod->second, r.node, r.policy, r.reason)) continue;
    if (auto ok = core_->Finish(*id); !ok)
      spdlog::warn("pod {}: {}", r.pod.Key(), ok.error().message);
    Evicted(*id);
  }
}

Expected<void> Scheduler::ResizeHook(const model::Workload& w, const model::Placement& now) {
  // MPS fixes a client's active-thread percentage when its CUDA context starts
  // (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is read at process start): the pod keeps its share and
  // the core its old limits. Said once per pod, as an Event and a count.
  const std::string why = fmt::format(
      "policy {} would set the MPS share to {} %; a running MPS client keeps the "
      "active-thread percentage it started with, so the share stays (re-creating the pod "
      "would apply it; Tessera does not)",
      config_.policy, now.slices.empty() ? 0 : now.slices[0].milli / 10);
  if (resize_warned_.insert(w.id).second) {
    spdlog::warn("pod {}: {}", w.name, why);
    auto it = known_.find(w.id);
    if (it != known_.end()) binder_.PostEvent(it->second.ref, "Warning", "ResizeRefused", why);
    std::lock_guard lock(mu_);
    ++stats_.resizes_refused;
  }
  return Fail("a running MPS client's limit cannot change");
}

namespace {
constexpr std::string_view kObservationsKey = "observations";
}  // namespace

bool Scheduler::LoadObservations() {
  if (config_.learner == nullptr) return true;
  auto doc = store_.GetProfile(kObservationsKey);
  if (!doc) {
    spdlog::debug("observations: store: {}", doc.error().message);
    return false;
  }
  observations_.clear();
  if (!*doc) return true;
  auto j = json::parse(**doc, nullptr, false);
  if (!j.is_object() || !j.contains("observations") || !j["observations"].is_array()) {
    spdlog::error("observations in the store are not the expected JSON; starting without them");
    return true;
  }
  int64_t replayed = 0;
  replaying_ = true;
  for (const json& o : j["observations"]) {
    if (!o.is_object() || !o.contains("seq") || !o["seq"].is_number_integer() ||
        !o.contains("qps") || !o["qps"].is_number()) {
      continue;
    }
    Observation ob{o["seq"].get<int64_t>(), StringMember(o, "app"), StringMember(o, "config"),
                   o["qps"].get<double>()};
    if (ob.seq > replayed_seq_) {
      if (auto ok = config_.learner->Observe(ob.app, ob.config, ob.qps); ok) {
        ++replayed;
      } else {
        spdlog::warn("observation {} in the store: {}", ob.seq, ok.error().message);
      }
      replayed_seq_ = ob.seq;
    }
    observations_.push_back(std::move(ob));
  }
  replaying_ = false;
  if (replayed > 0) {
    if (auto ok = config_.learner->Refit(); !ok) spdlog::warn("refit: {}", ok.error().message);
    spdlog::info("learned {} observations the last leader kept in the store", replayed);
  }
  std::lock_guard lock(mu_);
  stats_.observations_restored += replayed;
  return true;
}

void Scheduler::SaveObservations() {
  if (unsaved_.empty()) return;
  int64_t seq = observations_.empty() ? replayed_seq_ : observations_.back().seq;
  for (Observation& o : unsaved_) {
    o.seq = ++seq;
    observations_.push_back(std::move(o));
  }
  const auto added = static_cast<int64_t>(unsaved_.size());
  unsaved_.clear();
  replayed_seq_ = seq;  // ours: already in the learner
  while (observations_.size() > config_.max_observations) observations_.pop_front();
  json list = json::array();
  for (const Observation& o : observations_) {
    list.push_back({{"seq", o.seq}, {"app", o.app}, {"config", o.config}, {"qps", o.qps}});
  }
  const json doc = {{"version", 1}, {"observations", std::move(list)}};
  if (auto ok = store_.PutProfile(kObservationsKey, doc.dump()); !ok) {
    // Kept in memory; written with the next observation.
    spdlog::warn("observations: store: {}", ok.error().message);
  }
  std::lock_guard lock(mu_);
  stats_.observations += added;
}

void Scheduler::WatchQps() {
  if (!config_.watch_qps) return;
  std::map<std::string, std::string> want;
  const double now = clock_.Now();
  for (auto& [id, k] : known_) {
    if (!k.placed) continue;
    auto pod = pods_.find(k.ref.uid);
    if (pod == pods_.end()) continue;
    // Its age runs from its bind, or from when it became Ready again if it reported not Ready
    // (its server starting: a counter that has not run the whole window reads low). A pod
    // whose status has no Ready condition ages from its bind.
    if (pod->second.ready == false) {
      k.not_ready = true;
      continue;
    }
    if (k.not_ready && pod->second.ready) {
      k.not_ready = false;
      k.ready_at = now;
    }
    if (now - std::max(k.placed_at, k.ready_at) < config_.qps_min_age_s) continue;
    const model::PlacedWorkload* pw = cluster_->Find(id);
    if (pw == nullptr || pw->workload.slo_qps <= 0) continue;
    auto q = pod->second.annotations.find(std::string(kAnnotationQpsQuery));
    want[pod->second.Key()] = q == pod->second.annotations.end() ? "" : q->second;
  }
  if (want == qps_watched_) return;
  qps_watched_ = want;
  config_.watch_qps(std::move(want));
}

StatusGpu Scheduler::StatusOfGpu(model::GpuIndex gi) const {
  const model::Gpu& g = cluster_->gpu(gi);
  const model::GpuModel& m = model::GetGpuModel(g.model);
  StatusGpu sg{g.index,     g.uuid, m.name, g.mig ? model::LayoutToString(m, *g.mig) : "",
               g.available, "",     {}};
  if (mps_stuck_.contains(g.uuid)) {
    sg.held_out = "MPS server stuck";
  } else if (auto h = held_out_.find(g.uuid); h != held_out_.end() && h->second.active) {
    sg.held_out = "MIG reshape failed";
  }
  for (const model::Partition& part : cluster_->partitions_of(gi)) {
    const std::string profile =
        part.whole() ? std::string(predict::kWholeGpu) : m.mig_profiles[part.profile].name;
    StatusPartition sp{part.whole() ? "whole GPU" : fmt::format("MIG {} ({})", profile, part.uuid),
                       part.used_milli,
                       {}};
    for (const model::Client& client : part.clients) {
      const model::PlacedWorkload* pw = cluster_->Find(client.workload);
      if (pw == nullptr) continue;
      const model::Workload& w = pw->workload;
      StatusPod pod;
      pod.name = w.name;
      pod.slice = client.best_effort     ? "memory only"
                  : client.milli >= 1000 ? (part.whole() ? "whole GPU" : "MIG " + profile)
                                         : fmt::format("MPS {} %", client.milli / 10);
      if (w.slo_qps > 0) pod.slo_qps = w.slo_qps;
      if (config_.predictor != nullptr && !w.app.empty()) {
        pod.predicted_qps = config_.predictor->Isolated(
            w.app, predict::ConfigKey(m.name, profile, client.milli / 10));
      }
      if (config_.telemetry != nullptr) {
        pod.observed_qps = config_.telemetry->WorkloadQps(w.name);
        if (!pod.observed_qps) pod.observed_note = config_.telemetry->WhyNoQps(w.name);
      } else {
        pod.observed_note = "no telemetry (--prometheus)";
      }
      const std::optional<double> judged = pod.observed_qps ? pod.observed_qps : pod.predicted_qps;
      if (pod.slo_qps && judged) {
        pod.slo = *judged >= *pod.slo_qps ? StatusPod::Slo::kMet : StatusPod::Slo::kMissed;
      }
      sp.pods.push_back(std::move(pod));
    }
    sg.partitions.push_back(std::move(sp));
  }
  return sg;
}

void Scheduler::UpdateStatus() {
  const double now = clock_.Now();
  if (status_at_ >= 0 && now - status_at_ < 1) return;
  status_at_ = now;
  StatusView v;
  v.scheduler = config_.scheduler_name;
  v.identity = config_.leader.identity;
  v.policy = config_.policy;
  v.generated_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (model::NodeIndex n = 0; n < cluster_->node_count(); ++n) {
    const model::Node& node = cluster_->node(n);
    StatusNode sn{node.name, node.ready, {}};
    if (auto api = nodes_.find(node.name); api != nodes_.end()) {
      for (const Taint& t : api->second.taints) {
        if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
        sn.taints.push_back(t.value.empty() ? fmt::format("{}:{}", t.key, t.effect)
                                            : fmt::format("{}={}:{}", t.key, t.value, t.effect));
      }
    }
    for (int i = 0; i < node.gpu_count; ++i) sn.gpus.push_back(StatusOfGpu(node.first_gpu + i));
    v.nodes.push_back(std::move(sn));
  }
  for (const model::Workload* w : core_->pending()) {
    auto k = known_.find(w->id);
    if (k == known_.end()) continue;
    const std::string& uid = k->second.ref.uid;
    auto warned = last_warning_.find(uid);
    auto queued = queued_at_.find(uid);
    v.pending.push_back({w->name, warned == last_warning_.end() ? "" : warned->second.first,
                         queued == queued_at_.end() ? 0 : now - queued->second});
  }
  for (const EvictionRecord& r : evictor_.recent()) {
    v.recent.push_back({r.at, r.pod, r.result, r.reason});
  }
  std::lock_guard lock(mu_);
  for (const auto& [name, value] :
       {std::pair{"bound", stats_.bound}, std::pair{"bind failures", stats_.bind_failures},
        std::pair{"evicted", stats_.evicted},
        std::pair{"evictions not carried out", stats_.evictions_declined},
        std::pair{"resizes refused", stats_.resizes_refused},
        std::pair{"observations learned", stats_.observations},
        std::pair{"observations restored", stats_.observations_restored},
        std::pair{"reshapes", stats_.reshapes}, std::pair{"cycles", stats_.cycles}}) {
    v.counters[name] = value;
  }
  status_ = std::move(v);
}

StatusView Scheduler::Status() const {
  std::lock_guard lock(mu_);
  StatusView v = status_;
  v.role = health_.role();
  return v;
}

}  // namespace tessera::k8s
