#include "sim/physics.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/rng.h"

namespace tessera::sim {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The co-runners' load on the shared server is kept below 1: beyond it the first-order model
// would predict an unbounded wait.
constexpr double kMaxFrontLoad = 0.9;

// A slice's share of its GPU's SMs: its MIG instance's compute slices × its MPS thread share.
double SmShare(const model::GpuModel& m, int profile, int32_t milli) {
  double share = milli / 1000.0;
  if (profile >= 0) {
    share *= static_cast<double>(m.mig_profiles[profile].compute_slices) / m.mig_compute_slices;
  }
  return share;
}

}  // namespace

std::map<std::string, PhysicsOptions::MpsConstants> MeasuredMpsConstants() {
  // `tessera predict contention --data data/h200-campaign`, fitted on all 32 MPS pairs.
  return {{"H200-141GB", {.front_kappa = 0.07, .sm_kappa = 0.15}}};
}

Physics::Physics(AppCatalog catalog, uint64_t seed, PhysicsOptions options)
    : catalog_(std::move(catalog)),
      seed_(seed),
      options_(options),
      reference_(model::FindGpuModel(catalog_.reference_gpu).value_or(0)) {}

Physics::Isolated Physics::IsolatedRate(const AppSpec& app, model::GpuModelId gpu, int profile,
                                        int32_t milli) const {
  const std::vector<AppSpec>& apps = catalog_.apps;
  const std::less<const AppSpec*> before;  // a total order, also for unrelated pointers
  const bool ours =
      !apps.empty() && !before(&app, apps.data()) && before(&app, apps.data() + apps.size());
  constexpr int kField = 1 << 16;  // each part of the key in 16 bits
  if (!ours || apps.size() >= kField || gpu < 0 || gpu >= kField || profile + 1 < 0 ||
      profile + 1 >= kField || milli < 0 || milli >= kField) {
    return ComputeIsolated(app, gpu, profile, milli);
  }
  const uint64_t key = static_cast<uint64_t>(&app - apps.data()) << 48 |
                       static_cast<uint64_t>(gpu) << 32 | static_cast<uint64_t>(profile + 1) << 16 |
                       static_cast<uint64_t>(milli);
  if (auto it = isolated_.find(key); it != isolated_.end()) return it->second;
  if (isolated_.size() >= kMaxNoise) isolated_.clear();
  return isolated_[key] = ComputeIsolated(app, gpu, profile, milli);
}

Physics::Isolated Physics::ComputeIsolated(const AppSpec& app, model::GpuModelId gpu, int profile,
                                           int32_t milli) const {
  const model::GpuModel& m = model::GetGpuModel(gpu);
  const model::GpuModel& ref = model::GetGpuModel(reference_);
  const double compute_share = SmShare(m, profile, milli);
  double bandwidth_share = 1;
  std::string profile_name = "whole";
  if (profile >= 0) {
    const model::MigProfile& p = m.mig_profiles[profile];
    bandwidth_share = static_cast<double>(p.memory_slices) / m.mig_memory_slices;
    profile_name = p.name;
  }
  // Opaque models have no published speed: treat them as the reference GPU.
  const double rc = m.opaque ? 1.0 : m.fp16_tflops / ref.fp16_tflops;
  const double rb = m.opaque ? 1.0 : m.bandwidth_gbs / ref.bandwidth_gbs;
  const double compute = app.compute_s / (compute_share * rc);
  const double memory = app.memory_s / (bandwidth_share * rb);
  Isolated out{.qps = 0,
               .gpu_s = compute + memory,
               .fixed_s = app.fixed_s,
               .host_s = app.host_s,
               .memory_fraction = compute + memory > 0 ? memory / (compute + memory) : 0,
               .compute_share = compute_share};
  const int pct = static_cast<int>(std::lround(milli / 10.0));
  if (auto it = app.measured.find(ConfigKey(m.name, profile_name, pct)); it != app.measured.end()) {
    // The measurement is the truth; the roofline's fixed part stays (at most 95 % of it).
    const double measured_t = 1.0 / it->second;
    out.fixed_s = std::min(app.fixed_s, 0.95 * measured_t);
    out.host_s = std::min(app.host_s, 0.95 * measured_t - out.fixed_s);
    out.gpu_s = measured_t - out.fixed_s - out.host_s;
  } else if (SmallShareRuleHolds(m)) {
    if (compute_share < options_.fail_below_share) {
      out.too_small = true;
      out.qps = 0;
      return out;
    }
    if (compute_share > 0 && compute_share < options_.fixed_floor_share) {
      out.fixed_s *= options_.fixed_floor_share / compute_share;
    }
  }
  out.qps = 1.0 / (out.gpu_s + out.fixed_s + out.host_s);
  return out;
}

bool Physics::SmallShareRuleHolds(const model::GpuModel& m) const {
  const std::vector<std::string>& only = options_.small_share_models;
  return only.empty() || std::find(only.begin(), only.end(), m.name) != only.end();
}

bool Physics::TooSmall(model::GpuModelId gpu, int profile, int32_t milli) const {
  if (options_.fail_below_share <= 0) return false;
  const model::GpuModel& m = model::GetGpuModel(gpu);
  return SmShare(m, profile, milli) < options_.fail_below_share && SmallShareRuleHolds(m);
}

double Physics::BestIsolatedQps(const AppSpec& app,
                                std::span<const model::GpuModelId> models) const {
  double best = 0;
  for (model::GpuModelId id : models) {
    const model::GpuModel& m = model::GetGpuModel(id);
    for (int profile = -1; profile < static_cast<int>(m.mig_profiles.size()); ++profile) {
      const int64_t memory = profile < 0 ? m.memory_mib : m.mig_profiles[profile].memory_mib;
      for (int32_t milli : {1000, 500, 250}) {
        if (app.footprint_mib > memory * milli / 1000) continue;
        best = std::max(best, IsolatedRate(app, id, profile, milli).qps);
      }
    }
  }
  return best;
}

double Physics::NoiseFactor(model::WorkloadId id) const {
  if (options_.noise_sd <= 0) return 1;
  if (auto it = noise_.find(id); it != noise_.end()) return it->second;
  Rng rng(Mix(seed_ ^ Mix(static_cast<uint64_t>(id))));
  const double z = rng.Normal(0, options_.noise_sd);
  if (noise_.size() >= kMaxNoise) noise_.clear();
  return noise_[id] = 1 + std::clamp(z, -options_.noise_max, options_.noise_max);
}

RunRate Physics::Rate(const model::PlacedWorkload& pw, const model::ClusterState& c) {
  RunRate r = RateIn(pw, c);
  if (r.fails || pw.placement.slices.empty()) return r;
  if (!pw.placement.has_remote() && !options_.link_colocation) return r;
  const double slowdown = RemoteSlowdown(pw, c);
  if (slowdown == 1) return r;
  r.qps /= slowdown;
  r.capacity_qps /= slowdown;
  r.gpu_busy /= slowdown;  // the GPU waits on the network
  r.sm_load /= slowdown;
  return r;
}

const std::vector<double>& Physics::NetworkLoads(const model::ClusterState& c) {
  if (network_cluster_ == &c && network_version_ == c.version()) return network_load_;
  network_cluster_ = &c;
  network_version_ = c.version();
  network_load_.assign(static_cast<size_t>(c.node_count()), 0.0);
  for (const auto& [id, pw] : c.placed()) {
    if (!pw.placement.has_remote()) continue;
    const AppSpec* app = catalog_.Find(pw.workload.app);
    if (app == nullptr) continue;
    for (const auto& [cpu_node, gpu_node] : c.RemoteStreams(pw.placement)) {
      network_load_[static_cast<size_t>(cpu_node)] += app->remote.network_share;
      network_load_[static_cast<size_t>(gpu_node)] += app->remote.network_share;
    }
  }
  if (!options_.link_colocation) return network_load_;
  for (const auto& [id, pw] : c.placed()) {
    const AppSpec* app = catalog_.Find(pw.workload.app);
    if (app == nullptr || app->link.empty()) continue;
    // Storage I/O only where the job has a GPU to feed; a network-intensive job's traffic always.
    const double disk = pw.placement.slices.empty() ? 0.0 : app->link.disk_share;
    network_load_[static_cast<size_t>(pw.placement.node)] += disk + app->link.load;
  }
  return network_load_;
}

double Physics::OwnLinkLoad(const AppSpec& app, const model::PlacedWorkload& pw, model::NodeIndex n,
                            const model::ClusterState& c) const {
  double own = 0;
  for (const auto& [cpu_node, gpu_node] : c.RemoteStreams(pw.placement)) {
    own += ((cpu_node == n) + (gpu_node == n)) * app.remote.network_share;
  }
  if (options_.link_colocation && pw.placement.node == n) {
    own += (pw.placement.slices.empty() ? 0.0 : app.link.disk_share) + app.link.load;
  }
  return own;
}

double Physics::RemoteSlowdown(const model::PlacedWorkload& pw, const model::ClusterState& c) {
  const AppSpec* app = catalog_.Find(pw.workload.app);
  if (app == nullptr) return 1;
  const std::vector<double>& load = NetworkLoads(c);
  // Its own traffic is part of its profile (measured alone): count only the others'.
  const auto others = [&](model::NodeIndex n) {
    return std::clamp(load[static_cast<size_t>(n)] - OwnLinkLoad(*app, pw, n, c), 0.0, 1.0);
  };
  double worst = 1;
  for (const auto& [cpu_node, gpu_node] : c.RemoteStreams(pw.placement)) {
    worst = std::max(worst, app->remote.Slowdown(std::max(others(cpu_node), others(gpu_node))));
  }
  if (!options_.link_colocation) return worst;
  // 002 ≈430: local runs too are re-rated by what shares their machine — here its link.
  return worst + app->link.disk_share * options_.link_stretch * others(pw.placement.node);
}

Physics::CoRunners Physics::CoRunnersOf(const model::PlacedWorkload& pw,
                                        const model::Partition& part,
                                        const model::ClusterState& c) const {
  const model::Workload& w = pw.workload;
  const model::Gpu& gpu = c.gpu(part.gpu);
  CoRunners co;
  for (const model::Partition& p : c.partitions_of(part.gpu)) {
    for (const model::Client& other : p.clients) {
      if (other.workload == w.id) continue;
      const model::PlacedWorkload* opw = c.Find(other.workload);
      const AppSpec* oapp = opw ? catalog_.Find(opw->workload.app) : nullptr;
      if (!oapp) continue;
      const Isolated o = IsolatedRate(*oapp, gpu.model, p.profile, other.milli);
      const double uo = Utilisation(other.workload, o.qps);
      if (&p == &part) {
        co.front += o.fixed_duty() * uo;
        if (other.best_effort) {
          co.be_sm += o.compute_share * o.gpu_duty() * uo;
        } else {
          co.sm += o.gpu_duty() * uo;
        }
        const double active =
            std::min(1.0, (o.gpu_s + options_.fixed_active * o.fixed_s) * o.qps) * uo;
        co.others_active += active;
        if (!other.best_effort) co.guaranteed_active += active;
        ++co.sharers;
      } else {
        co.mig_demand += o.gpu_duty() * o.memory_fraction * uo;
      }
    }
  }
  return co;
}

Physics::SharedTime Physics::ShareTime(const AppSpec& app, const Isolated& self,
                                       const model::Gpu& gpu, bool best_effort,
                                       const CoRunners& co) const {
  using Sharing = PhysicsOptions::Sharing;
  const bool sliced = options_.sharing != Sharing::kMps && co.sharers > 1;
  SharedTime out{.fixed_s = self.fixed_s, .gpu_s = self.gpu_s, .time_share = 1};
  if (!sliced) {
    // The fixed part waits on a shared server loaded to rho by the co-runners' fixed parts.
    double front_kappa = options_.mps_front_kappa, sm_kappa = options_.mps_sm_kappa;
    if (!options_.mps_by_gpu.empty()) {
      auto own = options_.mps_by_gpu.find(model::GetGpuModel(gpu.model).name);
      if (own != options_.mps_by_gpu.end()) {
        front_kappa = own->second.front_kappa;
        sm_kappa = own->second.sm_kappa;
      }
    }
    const double rho = std::min(kMaxFrontLoad, front_kappa * co.front);
    out.fixed_s = self.fixed_s * (1 + app.sensitivity * (1 / (1 - rho) - 1));
    out.gpu_s = self.gpu_s * (1 + sm_kappa * app.sensitivity * co.sm +
                              options_.be_sm_kappa * app.sensitivity * co.be_sm);
  } else if (!best_effort) {
    // Its kernels wait out the others' time slices (or, with priority, only the preemption).
    const double stretch =
        options_.sharing == Sharing::kTimeSlice
            ? 1 + std::min(1.0, co.others_active)
            : 1 + options_.ts_priority_overhead * std::min(1.0, co.others_active);
    const double active_fixed = options_.fixed_active * self.fixed_s;
    out.gpu_s = self.gpu_s * stretch;
    out.fixed_s = (self.fixed_s - active_fixed) + active_fixed * stretch;
  } else {
    // It runs in the engine time the guaranteed clients leave.
    const double left =
        std::clamp(options_.sharing == Sharing::kTimeSlice
                       ? std::max(1.0 - co.guaranteed_active, 1.0 / co.sharers)
                       : 1.0 - co.guaranteed_active * (1 + options_.ts_priority_overhead),
                   0.0, 1.0);
    // Only its time on the engine waits for slices; its host time does not.
    const double engine_s = self.gpu_s + self.fixed_s, alone_s = engine_s + self.host_s;
    out.time_share = self.host_s > 0 && left > 0 ? alone_s / (self.host_s + engine_s / left) : left;
  }
  return out;
}

RunRate Physics::RateIn(const model::PlacedWorkload& pw, const model::ClusterState& c) const {
  const model::Workload& w = pw.workload;
  const AppSpec* app = catalog_.Find(w.app);
  if (!app) return {0, 0, true, "unknown application '" + w.app + "'"};
  const double noise = NoiseFactor(w.id);
  if (pw.placement.slices.empty()) {
    const double t =
        app->fixed_s + app->host_s + options_.cpu_slowdown * (app->compute_s + app->memory_s);
    return {noise / t, 0, false, "", 0, noise / t};
  }
  const model::Slice& s = pw.placement.slices.front();
  const model::Partition& part = c.partition(s.partition);
  const model::Gpu& gpu = c.gpu(part.gpu);

  // Memory: its own reservation, or what the others left of the partition.
  int64_t limit = s.memory_mib;
  if (limit <= 0) {
    limit = part.memory_mib;
    for (const model::Client& other : part.clients) {
      if (other.workload != w.id) limit -= other.memory_mib;
    }
  }
  if (app->footprint_mib > limit) {
    return {0, 0, true,
            fmt::format("out of memory: needs {} MiB, limit {} MiB", app->footprint_mib, limit)};
  }

  // Alone on its slice, then slowed by what the others on its GPU do, shared as they share.
  const Isolated self = IsolatedRate(*app, gpu.model, part.profile, s.milli);
  if (self.too_small) {
    return {0, 0, true,
            fmt::format("compute limit {:.1f} % of the GPU, below the {:.0f} % a slice needs here",
                        100 * self.compute_share, 100 * options_.fail_below_share)};
  }
  const CoRunners co = CoRunnersOf(pw, part, c);
  const SharedTime shared = ShareTime(*app, self, gpu, s.best_effort, co);
  const double busy_gpu = shared.gpu_s, time_share = shared.time_share;
  double t = shared.fixed_s + busy_gpu + self.host_s;
  if (!part.whole()) {
    t *= 1 + options_.mig_max * std::min(1.0, co.mig_demand) * std::min(1.0, app->sensitivity);
  }
  const double capacity = noise * static_cast<double>(pw.placement.slices.size()) / t * time_share;
  // An online service is busy only for the load it is offered.
  const double u = Utilisation(w.id, capacity);
  // Kernels execute during the SM-bound part and the active share of the fixed part; waiting
  // on co-runners is idle (DCGM GR_ENGINE_ACTIVE).
  const double active =
      std::min(1.0, (busy_gpu + options_.fixed_active * self.fixed_s) / t) * time_share * u;
  // Power follows the SMs kept busy: its share of the GPU's SMs for the SM-bound work.
  const double sm_load = self.compute_share * self.gpu_s / t * time_share * u;
  return {capacity * u, active, false, "", sm_load, capacity};
}

double Physics::Utilisation(model::WorkloadId id, double capacity_qps) const {
  auto it = offered_.find(id);
  if (it == offered_.end() || capacity_qps <= 0) return 1;
  return std::clamp(it->second.QpsAt(now_) / capacity_qps, 0.0, 1.0);
}

double Physics::GpuPower(model::GpuIndex g, double load, const model::ClusterState& c) {
  const model::GpuModel& m = model::GetGpuModel(c.gpu(g).model);
  load = std::clamp(load, 0.0, 1.0);
  if (auto it = options_.power_by_gpu.find(m.name); it != options_.power_by_gpu.end()) {
    return it->second.idle_w + (it->second.full_w - it->second.idle_w) * load;
  }
  const auto& flat = options_.flat_power_models;
  if (options_.flat_power_rise >= 0 && std::find(flat.begin(), flat.end(), m.name) != flat.end())
    return m.idle_watts * (1 + options_.flat_power_rise * load);
  return m.idle_watts + (m.max_watts - m.idle_watts) * load;
}

std::optional<UsagePoint> Physics::UsageAt(const model::Workload& w, double since_start_s) const {
  const AppSpec* app = catalog_.Find(w.app);
  if (app == nullptr || app->usage.empty()) return std::nullopt;
  double offset = 0;
  if (app->usage.burst && app->usage.burst->staggered) {
    // A hash, not a generator: it is asked at every usage sample (53 bits to [0, 1)).
    const uint64_t h = Mix(seed_ ^ 0xb0257ULL ^ Mix(static_cast<uint64_t>(w.id)));
    // On the clock, not the container's: a relaunched replica meets its burst when it was due.
    offset = app->usage.burst->period_s * static_cast<double>(h >> 11) * 0x1.0p-53 +
             (now_ - since_start_s);
  }
  return app->usage.At(since_start_s, offset);
}

bool Physics::UsageStatesActivity(const model::Workload& w) const {
  const AppSpec* app = catalog_.Find(w.app);
  return app == nullptr || !app->usage.memory_only;
}

}  // namespace tessera::sim
