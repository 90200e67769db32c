#include "sim/physics.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "base/rng.h"

namespace tessera::sim {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Physics::Physics(AppCatalog catalog, uint64_t seed, PhysicsOptions options)
    : catalog_(std::move(catalog)),
      seed_(seed),
      options_(options),
      reference_(model::FindGpuModel(catalog_.reference_gpu).value_or(0)) {}

Physics::Isolated Physics::IsolatedRate(const AppSpec& app, model::GpuModelId gpu, int profile,
                                        int32_t milli) const {
  const model::GpuModel& m = model::GetGpuModel(gpu);
  const model::GpuModel& ref = model::GetGpuModel(reference_);
  double compute_share = milli / 1000.0, bandwidth_share = 1;
  std::string profile_name = "whole";
  if (profile >= 0) {
    const model::MigProfile& p = m.mig_profiles[profile];
    compute_share *= static_cast<double>(p.compute_slices) / m.mig_compute_slices;
    bandwidth_share = static_cast<double>(p.memory_slices) / m.mig_memory_slices;
    profile_name = p.name;
  }
  // Opaque models have no published speed: treat them as the reference GPU.
  const double rc = m.opaque ? 1.0 : m.fp16_tflops / ref.fp16_tflops;
  const double rb = m.opaque ? 1.0 : m.bandwidth_gbs / ref.bandwidth_gbs;
  const double compute = app.compute_s / (compute_share * rc);
  const double memory = app.memory_s / (bandwidth_share * rb);
  double t = compute + memory + app.fixed_s;
  const double memory_fraction = compute + memory > 0 ? memory / (compute + memory) : 0;
  double busy = (compute + memory) / t;
  const int pct = static_cast<int>(std::lround(milli / 10.0));
  if (auto it = app.measured.find(ConfigKey(m.name, profile_name, pct)); it != app.measured.end()) {
    // The measurement is the truth; the roofline's split says how busy it keeps the GPU.
    const double measured_t = 1.0 / it->second;
    busy = std::clamp(1.0 - app.fixed_s / measured_t, 0.05, 1.0);
    t = measured_t;
  }
  return {1.0 / t, busy, memory_fraction};
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
  Rng rng(Mix(seed_ ^ Mix(static_cast<uint64_t>(id))));
  const double z = rng.Normal(0, options_.noise_sd);
  return 1 + std::clamp(z, -options_.noise_max, options_.noise_max);
}

RunRate Physics::Rate(const model::PlacedWorkload& pw, const model::ClusterState& c) {
  return RateIn(pw, c);
}

RunRate Physics::RateIn(const model::PlacedWorkload& pw, const model::ClusterState& c) const {
  const model::Workload& w = pw.workload;
  const AppSpec* app = catalog_.Find(w.app);
  if (!app) return {0, 0, true, "unknown application '" + w.app + "'"};
  const double noise = NoiseFactor(w.id);
  if (pw.placement.slices.empty()) {
    const double t = app->fixed_s + options_.cpu_slowdown * (app->compute_s + app->memory_s);
    return {noise / t, 0, false, ""};
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

  const Isolated self = IsolatedRate(*app, gpu.model, part.profile, s.milli);
  const double exposure = app->sensitivity * (self.memory_fraction + 0.25);
  // Bandwidth demand of everyone else on this partition (MPS) and on the GPU's other MIG
  // instances, from their isolated behaviour (no fixed point: interference is first order).
  double mps_demand = 0, mig_demand = 0;
  for (const model::Partition& p : c.partitions_of(part.gpu)) {
    for (const model::Client& other : p.clients) {
      if (other.workload == w.id) continue;
      const model::PlacedWorkload* opw = c.Find(other.workload);
      const AppSpec* oapp = opw ? catalog_.Find(opw->workload.app) : nullptr;
      if (!oapp) continue;
      const Isolated o = IsolatedRate(*oapp, gpu.model, p.profile, other.milli);
      const double demand = o.busy * o.memory_fraction;
      (&p == &part ? mps_demand : mig_demand) += demand;
    }
  }
  double slowdown = 1 + options_.mps_kappa * exposure * mps_demand;
  if (!part.whole()) {
    slowdown *= 1 + options_.mig_max * std::min(1.0, mig_demand) * std::min(1.0, app->sensitivity);
  }
  const double qps = self.qps / slowdown * noise * static_cast<double>(pw.placement.slices.size());
  return {qps, self.busy, false, ""};
}

double Physics::GpuPower(model::GpuIndex g, double util, const model::ClusterState& c) {
  const model::GpuModel& m = model::GetGpuModel(c.gpu(g).model);
  return m.idle_watts + (m.max_watts - m.idle_watts) * std::clamp(util, 0.0, 1.0);
}

}  // namespace tessera::sim
