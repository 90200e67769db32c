#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace tessera::sim {

double WorkloadOutcome::achieved_qps() const {
  if (!start_s || !end_s || *end_s <= *start_s) return 0;
  return queries_done / (*end_s - *start_s);
}

double WorkloadOutcome::pending_s() const {
  if (start_s) return *start_s - workload.arrival_s;
  return end_s ? *end_s - workload.arrival_s : 0;
}

bool Engine::Event::operator>(const Event& o) const {
  if (t != o.t) return t > o.t;
  if (kind != o.kind) return kind > o.kind;
  return seq > o.seq;
}

Engine::Engine(model::ClusterState& cluster, policy::Policy& policy, GroundTruth& truth, Rng& rng,
               EngineOptions options)
    : cluster_(cluster),
      policy_(policy),
      truth_(truth),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : own_clock_),
      scheduler_(
          cluster, policy, clock_, rng,
          sched::Hooks{.bind = [this](const model::Workload& w, const model::Placement& p,
                                      const model::Environment&) -> Expected<void> {
                         Bind(w, p);
                         return {};
                       },
                       .reshape =
                           [this](model::GpuIndex g, const std::optional<model::MigLayout>&) {
                             Push(clock_.Now() + options_.reshape_s, Kind::kReshapeDone, g);
                           },
                       .evict = [this](const model::Workload& w,
                                       const policy::Eviction& e) -> Expected<void> {
                         if (!e.requeue) {
                           Finish(w.id, true, "evicted: " + e.reason);
                           return {};
                         }
                         Suspend(w.id);
                         TESSERA_CHECK(scheduler_.Submit(w).has_value());
                         return {};
                       },
                       .resized = [this](const model::Workload& w,
                                         const model::Placement&) -> Expected<void> {
                         auto it = running_.find(w.id);
                         if (it == running_.end()) return {};
                         rerate_.insert(rerate_.end(), it->second.gpus.begin(),
                                        it->second.gpus.end());
                         return {};
                       },
                       .unschedulable = {}}) {
  gpu_util_.assign(cluster_.gpu_count(), 0);
  partition_util_.assign(static_cast<size_t>(cluster_.gpu_count()) * model::kMaxPartitions, 0);
  unpublished_flag_.assign(cluster_.gpu_count(), 1);
  for (model::GpuIndex g = 0; g < cluster_.gpu_count(); ++g) unpublished_.push_back(g);
  gpu_power_.assign(cluster_.gpu_count(), 0);
  gpu_load_.assign(cluster_.gpu_count(), 0);
  for (model::GpuIndex g = 0; g < cluster_.gpu_count(); ++g) {
    gpu_power_[g] = truth_.GpuPower(g, 0, cluster_);
    total_power_ += gpu_power_[g];
  }
}

Expected<void> Engine::Add(model::Workload w) {
  if (w.queries <= 0) return Fail("workload {}: a simulated workload needs queries > 0", w.id);
  if (index_of_.contains(w.id)) return Fail("workload {} added twice", w.id);
  index_of_[w.id] = outcomes_.size();
  Push(w.arrival_s, Kind::kArrival, static_cast<int64_t>(outcomes_.size()));
  outcomes_.push_back({std::move(w)});
  return {};
}

void Engine::Push(double t, Kind kind, int64_t subject, uint64_t version) {
  events_.push({t, kind, seq_++, subject, version});
}

void Engine::AdvanceTo(double t) {
  const double dt = t - last_t_;
  if (dt > 0) {
    energy_j_ += total_power_ * dt;
    if (!running_.empty()) {
      util_time_ += total_util_ * dt;
      sm_time_ += total_load_ * dt;
      active_time_ += dt;
    }
  }
  last_t_ = t;
  clock_.Set(t);
  truth_.SetTime(t);
}

std::vector<model::GpuIndex> Engine::GpusOf(const model::Placement& p) const {
  std::vector<model::GpuIndex> gpus;
  for (const model::Slice& s : p.slices) gpus.push_back(cluster_.partition(s.partition).gpu);
  return gpus;
}

void Engine::Bind(const model::Workload& w, const model::Placement& p) {
  WorkloadOutcome& o = outcomes_[index_of_.at(w.id)];
  const double now = clock_.Now();
  if (!o.start_s) o.start_s = now;  // a moved workload's execution runs from its first start
  o.node = p.node;
  if (!p.slices.empty()) {
    const model::Partition& part = cluster_.partition(p.slices[0].partition);
    o.partition = part.uuid;
    o.profile =
        part.whole()
            ? "whole"
            : model::GetGpuModel(cluster_.gpu(part.gpu).model).mig_profiles[part.profile].name;
    o.milli = p.slices[0].milli;
  }
  o.remote_slices = static_cast<int>(std::count_if(p.slices.begin(), p.slices.end(),
                                                   [](const model::Slice& s) { return s.remote; }));
  Running r;
  r.index = index_of_.at(w.id);
  r.remaining = static_cast<double>(w.queries);
  r.since = now;
  if (auto moved = suspended_.find(w.id); moved != suspended_.end()) {
    r.remaining = moved->second.remaining;
    r.version = moved->second.version;
    r.resume_at = now + options_.move_restart_s;
    suspended_.erase(moved);
  }
  r.run_start = std::max(now, r.resume_at);
  r.gpus = GpusOf(p);
  for (const auto& [cpu_node, gpu_node] : cluster_.RemoteStreams(p)) {
    r.network_nodes.push_back(cpu_node);
    r.network_nodes.push_back(gpu_node);
  }
  if (options_.rerate_node_neighbours) r.network_nodes.push_back(p.node);
  if (!r.network_nodes.empty()) {
    RerateNetwork(r.network_nodes);  // before it joins remote_running_: the others' loads moved
    remote_running_.push_back(w.id);
  }
  if (!usage_pending_ && truth_.UsageAt(w, 0)) {
    usage_pending_ = true;
    Push(now, Kind::kUsage, 0);
  }
  if (!load_pending_ && options_.load_interval_s > 0 && truth_.HasOfferedLoad(w)) {
    load_pending_ = true;
    Push(now + options_.load_interval_s, Kind::kLoad, 0);
  }
  running_.emplace(w.id, std::move(r));
  rerate_.insert(rerate_.end(), running_.at(w.id).gpus.begin(), running_.at(w.id).gpus.end());
  if (p.slices.empty()) rerate_ids_.push_back(w.id);
}

void Engine::RerateNetwork(const std::vector<model::NodeIndex>& nodes) {
  for (model::WorkloadId id : remote_running_) {
    const Running& other = running_.at(id);
    const bool shares = std::any_of(nodes.begin(), nodes.end(), [&](model::NodeIndex n) {
      return std::find(other.network_nodes.begin(), other.network_nodes.end(), n) !=
             other.network_nodes.end();
    });
    if (!shares) continue;
    rerate_.insert(rerate_.end(), other.gpus.begin(), other.gpus.end());
    if (other.gpus.empty()) rerate_ids_.push_back(id);
  }
}

std::optional<Engine::Running> Engine::Stop(model::WorkloadId id) {
  auto it = running_.find(id);
  if (it == running_.end()) return std::nullopt;
  Running r = std::move(it->second);
  running_.erase(it);
  r.remaining = std::max(0.0, r.remaining - Progress(r, clock_.Now()));
  if (options_.telemetry) options_.telemetry->Forget(outcomes_[r.index].workload.name);
  rerate_.insert(rerate_.end(), r.gpus.begin(), r.gpus.end());
  if (!r.network_nodes.empty()) {
    std::erase(remote_running_, id);
    RerateNetwork(r.network_nodes);
  }
  RequestCycle();
  return r;
}

void Engine::Finish(model::WorkloadId id, bool failed, const std::string& why) {
  const std::optional<Running> r = Stop(id);
  if (!r) return;
  WorkloadOutcome& o = outcomes_[r->index];
  const double now = clock_.Now();
  o.queries_done = failed ? static_cast<double>(o.workload.queries) - r->remaining
                          : static_cast<double>(o.workload.queries);
  o.end_s = now;
  o.failed = failed;
  o.failure = why;
  if (cluster_.Find(id)) TESSERA_CHECK(scheduler_.Finish(id).has_value());
  ++settled_;
  end_s_ = now;
}

double Engine::Progress(const Running& r, double now) const {
  return r.qps * std::max(0.0, now - std::max(r.since, r.resume_at));
}

void Engine::Suspend(model::WorkloadId id) {
  std::optional<Running> r = Stop(id);
  if (!r) return;
  WorkloadOutcome& o = outcomes_[r->index];
  ++o.moves;
  RollBackToCheckpoint(o, *r);
  suspended_.insert_or_assign(id, std::move(*r));
}

void Engine::RollBackToCheckpoint(WorkloadOutcome& o, Running& r) {
  const int64_t every = o.workload.checkpoint_queries;
  if (every <= 0) return;
  // Back to the last checkpoint: floor(done / every) × every queries are kept.
  const double total = static_cast<double>(o.workload.queries);
  const double done = total - r.remaining;
  const double kept = std::floor(done / static_cast<double>(every)) * static_cast<double>(every);
  o.lost_queries += done - kept;
  r.remaining = total - kept;
}

std::vector<WorkloadUsage> Engine::RunningUsage(double now) {
  std::vector<model::WorkloadId> ids;
  ids.reserve(running_.size());
  for (const auto& [id, r] : running_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<WorkloadUsage> out;
  for (model::WorkloadId id : ids) {
    Running& r = running_.at(id);
    const model::PlacedWorkload* pw = cluster_.Find(id);
    if (pw == nullptr) continue;
    WorkloadUsage x{
        .id = id,
        .placement = &pw->placement,
        .use = truth_.UsageAt(outcomes_[r.index].workload, std::max(0.0, now - r.run_start)),
        .order = r.index};
    x.activity = x.use && truth_.UsageStatesActivity(outcomes_[r.index].workload);
    if (x.use && now < r.run_start) x.use = UsagePoint{};  // a crashed container holds nothing
    if (x.use) {
      x.growth_mib = x.use->memory_mib - r.last_memory;
      r.last_memory = x.use->memory_mib;
    }
    out.push_back(x);
  }
  return out;
}

void Engine::PublishUsage(double now, const UsageSample& sample) {
  for (const WorkloadUsage& x : sample.workloads) {
    if (!x.use) continue;
    const std::string& name = outcomes_[index_of_.at(x.id)].workload.name;
    options_.telemetry->AddMemorySample(name, now, x.use->memory_mib);
    if (!x.activity) continue;  // its SM activity is its offered load's (PublishTelemetry)
    options_.telemetry->AddSmActivitySample(name, now, x.use->sm);
    options_.telemetry->AddBandwidthSample(name, now, x.use->bandwidth);
  }
  for (const auto& [index, p] : sample.partitions) {
    if (!p.traced) continue;
    const std::string& uuid = cluster_.partition(index).uuid;
    options_.telemetry->AddMemorySample(uuid, now, std::max(0.0, p.sum.memory_mib));
    if (!p.activity) continue;
    options_.telemetry->AddSmActivitySample(uuid, now, std::clamp(p.sum.sm, 0.0, 1.0));
    options_.telemetry->AddBandwidthSample(uuid, now, std::clamp(p.sum.bandwidth, 0.0, 1.0));
  }
}

void Engine::SampleUsage() {
  usage_pending_ = false;
  const double now = clock_.Now();
  UsageSample sample = SumUsage(RunningUsage(now));
  for (model::WorkloadId id : KillOutOfMemory(cluster_, sample, options_.oom_rule)) OomKill(id);
  // What the GPUs hold until the next sample (the memory integral of EngineResult).
  for (const auto& [index, p] : sample.partitions) {
    memory_time_ += std::max(0.0, p.sum.memory_mib) * options_.usage_interval_s;
  }
  if (options_.telemetry) PublishUsage(now, sample);
  const bool traced = std::any_of(sample.workloads.begin(), sample.workloads.end(),
                                  [](const WorkloadUsage& x) { return x.use.has_value(); });
  if (traced) {
    usage_pending_ = true;
    Push(now + options_.usage_interval_s, Kind::kUsage, 0);
  }
}

void Engine::OomKill(model::WorkloadId id) {
  Running& r = running_.at(id);
  WorkloadOutcome& o = outcomes_[r.index];
  const double now = clock_.Now();
  ++o.oom_kills;
  r.remaining = std::max(0.0, r.remaining - Progress(r, now));
  r.since = now;
  RollBackToCheckpoint(o, r);
  if (now - r.run_start >= options_.oom_backoff_reset_s) r.crashes_in_a_row = 0;
  const double backoff = std::min(options_.oom_relaunch_max_s,
                                  options_.oom_relaunch_s * std::pow(2.0, r.crashes_in_a_row));
  ++r.crashes_in_a_row;
  r.resume_at = now + backoff;
  r.run_start = r.resume_at;
  r.last_memory = 0;
  ++r.version;  // the completion pushed for the killed run is stale
  if (r.qps > 0) {
    Push(r.resume_at + r.remaining / r.qps, Kind::kCompletion, static_cast<int64_t>(r.index),
         r.version);
  }
}

void Engine::SetGpuUtil(model::GpuIndex g, double util, double load) {
  total_util_ += util - gpu_util_[g];
  gpu_util_[g] = util;
  total_load_ += load - gpu_load_[g];
  gpu_load_[g] = load;
  const double power = truth_.GpuPower(g, load, cluster_);
  total_power_ += power - gpu_power_[g];
  gpu_power_[g] = power;
}

void Engine::Settle() {
  // Recompute rates of every workload on a GPU whose co-location changed; failures found
  // here change co-location again, so repeat until nothing changes.
  while (!rerate_.empty() || !rerate_ids_.empty()) {
    std::vector<model::GpuIndex> gpus;
    gpus.swap(rerate_);
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    std::vector<model::WorkloadId> ids;
    ids.swap(rerate_ids_);
    for (model::GpuIndex g : gpus) {
      for (const model::Partition& part : cluster_.partitions_of(g)) {
        for (const model::Client& c : part.clients) ids.push_back(c.workload);
      }
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const double now = clock_.Now();
    std::vector<std::pair<model::WorkloadId, std::string>> failures;
    for (model::WorkloadId id : ids) {
      auto it = running_.find(id);
      if (it == running_.end()) continue;
      Running& r = it->second;
      r.remaining = std::max(0.0, r.remaining - Progress(r, now));
      r.since = now;
      const RunRate rate = truth_.Rate(*cluster_.Find(id), cluster_);
      if (rate.fails) {
        failures.emplace_back(id, rate.failure);
        r.qps = 0;
        r.busy = 0;
        r.load = 0;
        continue;
      }
      r.qps = rate.qps;
      r.busy = std::clamp(rate.gpu_busy, 0.0, 1.0);
      r.load = std::clamp(rate.sm_load, 0.0, 1.0);
      r.capacity = rate.capacity_qps;
      ++r.version;
      if (r.qps > 0) {
        Push(std::max(now, r.resume_at) + r.remaining / r.qps, Kind::kCompletion,
             static_cast<int64_t>(r.index), r.version);
      }
    }
    // Engine utilisation per GPU: each partition is busy for the (capped) sum of its clients'
    // busy fractions, weighted by its share of the GPU. Power follows the SM load, the sum of
    // the clients' sm_load (already weighted by their share).
    for (model::GpuIndex g : gpus) {
      double util = 0, load = 0;
      for (int slot = 0; slot < cluster_.gpu(g).partition_count; ++slot) {
        const model::PartitionIndex p = model::ClusterState::PartitionOf(g, slot);
        const model::Partition& part = cluster_.partition(p);
        double busy = 0;
        for (const model::Client& c : part.clients) {
          auto it = running_.find(c.workload);
          if (it != running_.end()) {
            busy += it->second.busy;
            load += it->second.load;
          }
        }
        util += part.compute_share * std::min(1.0, busy);
        partition_util_[p] = std::min(1.0, busy);
      }
      SetGpuUtil(g, util, std::min(1.0, load));
      if (!unpublished_flag_[g]) {
        unpublished_flag_[g] = 1;
        unpublished_.push_back(g);
      }
    }
    for (const auto& [id, why] : failures) Finish(id, true, why);
  }
}

bool Engine::LoadTick() {
  load_pending_ = false;
  bool any = false;
  for (const auto& [id, r] : running_) {
    if (!truth_.HasOfferedLoad(outcomes_[r.index].workload)) continue;
    rerate_.insert(rerate_.end(), r.gpus.begin(), r.gpus.end());
    if (r.gpus.empty()) rerate_ids_.push_back(id);
    any = true;
  }
  if (!any) return false;
  load_pending_ = true;
  RequestCycle();  // live-state policies follow the load (muxflow's dynamic SM)
  Push(clock_.Now() + options_.load_interval_s, Kind::kLoad, 0);
  return true;
}

void Engine::RecordLoad() {
  const double now = clock_.Now();
  for (const auto& [id, r] : running_) {
    WorkloadOutcome& o = outcomes_[r.index];
    if (!truth_.HasOfferedLoad(o.workload)) continue;
    if (now < r.resume_at) {
      o.load.push_back({now, 0, 0});  // its container is not back yet: it serves nothing
    } else {
      o.load.push_back({now, r.capacity, r.qps});
    }
  }
  const double gpus = std::max(1, cluster_.gpu_count());
  load_ticks_.push_back({now, total_util_ / gpus, total_load_ / gpus});
}

void Engine::PublishTelemetry() {
  // Only GPUs whose utilisation was recomputed since the last sample (all, at the first).
  for (model::GpuIndex g : unpublished_) {
    unpublished_flag_[g] = 0;
    const model::Gpu& gpu = cluster_.gpu(g);
    for (int slot = 0; slot < gpu.partition_count; ++slot) {
      const model::PartitionIndex p = model::ClusterState::PartitionOf(g, slot);
      const model::Partition& part = cluster_.partition(p);
      options_.telemetry->SetUtilization(part.uuid, partition_util_[p]);
      // The rate each client serves now (its inference server's request counter).
      for (const model::Client& client : part.clients) {
        auto r = running_.find(client.workload);
        if (r != running_.end()) {
          const std::string& name = outcomes_[r->second.index].workload.name;
          options_.telemetry->SetWorkloadQps(name, r->second.qps);
          options_.telemetry->SetSmActivity(name, r->second.load);
        }
      }
    }
    options_.telemetry->SetUtilization(gpu.uuid, gpu_util_[g]);  // the whole GPU's partition
    options_.telemetry->SetSmActivity(gpu.uuid, gpu_load_[g]);
  }
  unpublished_.clear();
}

void Engine::RequestCycle() {
  if (cycle_pending_) return;
  cycle_pending_ = true;
  Push(clock_.Now(), Kind::kCycle, 0);
}

bool Engine::Done() const { return settled_ == outcomes_.size(); }

EngineResult Engine::Run() {
  TESSERA_CHECK(!ran_);
  ran_ = true;
  double first_arrival = -1;
  if (options_.telemetry) Push(0, Kind::kTelemetry, 0);
  while (!events_.empty() && !Done()) {
    const Event e = events_.top();
    bool record_load = false;
    if (e.t > options_.horizon_s) break;
    events_.pop();
    AdvanceTo(e.t);
    switch (e.kind) {
      case Kind::kCompletion: {
        const model::WorkloadId id = outcomes_[e.subject].workload.id;
        auto it = running_.find(id);
        if (it == running_.end() || it->second.version != e.version) break;  // stale
        Finish(id, false, "");
        break;
      }
      case Kind::kReshapeDone:
        scheduler_.ReshapeDone(static_cast<model::GpuIndex>(e.subject));
        RequestCycle();
        break;
      case Kind::kArrival: {
        WorkloadOutcome& o = outcomes_[e.subject];
        if (first_arrival < 0) first_arrival = e.t;
        if (auto ok = scheduler_.Submit(o.workload); !ok) {
          o.end_s = e.t;
          o.failed = true;
          o.failure = ok.error().message;
          ++settled_;
        }
        RequestCycle();
        break;
      }
      case Kind::kUsage:
        SampleUsage();
        if (options_.cycle_after_usage) RequestCycle();
        break;
      case Kind::kLoad:
        record_load = LoadTick();
        break;
      case Kind::kTelemetry:
        PublishTelemetry();
        Push(e.t + options_.telemetry_interval_s, Kind::kTelemetry, 0);
        break;
      case Kind::kCycle:
        cycle_pending_ = false;
        scheduler_.RunCycle();
        if (scheduler_.pending_count() > 0 && (!running_.empty() || policy_.HoldsBack())) {
          // Something may free up without an event of ours (telemetry-driven policies), or the
          // policy postpones on a count of cycles (Policy::HoldsBack).
          Push(e.t + options_.cycle_interval_s, Kind::kCycle, 0);
          cycle_pending_ = true;
        }
        break;
    }
    Settle();
    if (record_load) RecordLoad();  // the services' rates as re-rated at this tick
  }
  EngineResult result;
  result.first_arrival_s = std::max(0.0, first_arrival);
  result.end_s = end_s_;
  result.stop_s = last_t_;
  const double makespan = end_s_ - result.first_arrival_s;
  const double gpus = std::max(1, cluster_.gpu_count());
  result.gpu_util_mean = makespan > 0 ? util_time_ / (gpus * makespan) : 0;
  result.energy_j = energy_j_;
  result.gpu_util_integral = util_time_;
  result.sm_activity_integral = sm_time_;
  result.gpu_memory_integral = memory_time_;
  result.load_ticks = std::move(load_ticks_);
  result.power_w_mean = last_t_ > 0 ? energy_j_ / last_t_ : 0;
  result.scheduler = scheduler_.totals();
  result.workloads = std::move(outcomes_);
  return result;
}

}  // namespace tessera::sim
