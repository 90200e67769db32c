#include "sim/profiler.h"

#include <fmt/core.h>

#include <algorithm>

#include "base/rng.h"
#include "predict/config_key.h"

namespace tessera::sim {
namespace {

struct Config {
  model::GpuModelId model;
  int profile;  // -1: whole GPU
  int percent;
  std::string key;
};

// Every (model, whole or plain MIG profile, MPS %) configuration of `models`, in order.
std::vector<Config> Enumerate(const std::vector<model::GpuModelId>& models,
                              const std::vector<int>& percents) {
  std::vector<Config> out;
  for (model::GpuModelId id : models) {
    const model::GpuModel& m = model::GetGpuModel(id);
    for (int profile = -1; profile < static_cast<int>(m.mig_profiles.size()); ++profile) {
      if (profile >= 0 && m.mig_profiles[profile].media_extensions) continue;
      const std::string_view part =
          profile < 0 ? predict::kWholeGpu : std::string_view(m.mig_profiles[profile].name);
      for (int pct : percents)
        out.push_back({id, profile, pct, predict::ConfigKey(m.name, part, pct)});
    }
  }
  return out;
}

// Enumerate's configurations less those every engine fails on: not measured (the thesis's grid
// stopped at a quarter, Ch. 6.1; below it runs failed, Ch. 9.2.1).
std::vector<Config> MeasuredConfigs(const Physics& physics,
                                    const std::vector<model::GpuModelId>& models,
                                    const std::vector<int>& percents) {
  std::vector<Config> configs = Enumerate(models, percents);
  std::erase_if(configs, [&](const Config& c) {
    return physics.TooSmall(c.model, c.profile, c.percent * 10);
  });
  return configs;
}

bool Listed(const std::vector<std::string>& list, const std::string& key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

// The catalog ids of `gpu_models`, each once, in order; refuses an unknown one.
Expected<std::vector<model::GpuModelId>> ResolveModels(const std::vector<std::string>& gpu_models) {
  std::vector<model::GpuModelId> ids;
  for (const std::string& name : gpu_models) {
    const std::optional<model::GpuModelId> id = model::FindGpuModel(name);
    if (!id) return Fail("profiler: unknown GPU model '{}'", name);
    if (std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  return ids;
}

// Refuses new and full apps not in `catalog` (or both), too few full runs and an unknown
// interference GPU; returns that GPU.
Expected<model::GpuModelId> CheckOptions(const AppCatalog& catalog,
                                         const ProfilerOptions& options) {
  for (const std::string& app : options.new_apps) {
    if (!catalog.Find(app)) return Fail("profiler: new app '{}' is not in the catalogue", app);
    if (Listed(options.full_apps, app))
      return Fail("profiler: app '{}' cannot be both new and fully profiled", app);
  }
  for (const std::string& app : options.full_apps) {
    if (!catalog.Find(app))
      return Fail("profiler: fully profiled app '{}' is not in the catalogue", app);
  }
  if (options.full_runs < 1) return Fail("profiler: full_runs must be at least 1");
  const std::optional<model::GpuModelId> pair_gpu = model::FindGpuModel(options.interference_gpu);
  if (!pair_gpu) return Fail("profiler: unknown interference GPU '{}'", options.interference_gpu);
  return *pair_gpu;
}

// The configurations (indices of `count`) an application is measured on: all for a full app,
// 1 or 2 for a new one, each with probability `density` (at least one) otherwise.
std::vector<size_t> ChooseConfigs(bool is_new, bool is_full, size_t count, double density,
                                  Rng& rng) {
  std::vector<size_t> chosen;
  if (is_full) {
    for (size_t k = 0; k < count; ++k) chosen.push_back(k);
  } else if (is_new) {
    const size_t want = 1 + rng.Below(2);
    while (chosen.size() < std::min(want, count)) {
      const size_t k = rng.Below(count);
      if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) chosen.push_back(k);
    }
  } else {
    for (size_t k = 0; k < count; ++k) {
      if (rng.Uniform(0, 1) < density) chosen.push_back(k);
    }
    if (chosen.empty()) chosen.push_back(rng.Below(count));
  }
  return chosen;
}

// Measures every application of the catalogue alone on its chosen configurations, noisily.
void SampleProfile(const Physics& physics, const ProfilerOptions& options,
                   const std::vector<Config>& configs, Rng& rng, predict::ProfileMatrix& profile) {
  const double sd = options.noise_sd;
  auto noisy = [&](double v) { return v * (1 + std::clamp(rng.Normal(0, sd), -3 * sd, 3 * sd)); };
  for (const Config& c : configs) profile.AddCol(c.key);
  for (const AppSpec& app : physics.catalog().apps) {
    const int row = profile.AddRow(app.key);
    const bool is_new = Listed(options.new_apps, app.key);
    const bool is_full = Listed(options.full_apps, app.key);
    const std::vector<size_t> chosen =
        ChooseConfigs(is_new, is_full, configs.size(), options.density, rng);
    for (size_t k : chosen) {
      const Config& c = configs[k];
      const double qps = physics.IsolatedQps(app, c.model, c.profile, c.percent * 10);
      // Every run is its own observation: the cell keeps their mean, count and spread (the
      // run-to-run variance a policy's margin reads).
      const int runs = is_full ? options.full_runs : 1;
      const int col = *profile.FindCol(c.key);
      for (int i = 0; i < runs; ++i) profile.Observe(row, col, noisy(qps));
    }
  }
}

}  // namespace

Profiler::Profiler(const Physics& physics, ProfilerOptions options)
    : physics_(physics), options_(std::move(options)) {}

std::vector<std::string> Profiler::Configs(const std::vector<model::GpuModelId>& models) const {
  std::vector<std::string> out;
  for (Config& c : MeasuredConfigs(physics_, models, options_.mps_percents)) {
    out.push_back(std::move(c.key));
  }
  return out;
}

Expected<void> Profiler::SampleInterference(model::GpuModelId gpu, Rng& rng,
                                            predict::InterferenceMatrices& interference) const {
  const double sd = options_.noise_sd;
  auto noisy = [&](double v) { return v * (1 + std::clamp(rng.Normal(0, sd), -3 * sd, 3 * sd)); };
  model::ClusterState bench;
  if (auto ok = bench.AddNode(model::UniformNode("profiler", gpu, 1, 1 << 20, 1 << 30)); !ok) {
    return std::unexpected(ok.error());
  }
  const model::PartitionIndex part = model::ClusterState::PartitionOf(0, 0);
  const int64_t half = bench.partition(part).memory_mib / 2;
  auto place = [&](model::WorkloadId id, const std::string& app) {
    model::Workload w;
    w.id = id;
    w.app = app;
    w.gpu.count = 1;
    return bench.Place(w, {id, 0, {{part, 500, half}}});
  };
  const auto& apps = physics_.catalog().apps;
  for (const AppSpec& victim : apps) {
    for (const AppSpec& aggressor : apps) {
      if (rng.Uniform(0, 1) >= options_.pair_share) continue;
      if (!place(1, victim.key))
        return Fail("profiler: cannot place {} on the bench GPU", victim.key);
      const RunRate alone = physics_.RateIn(*bench.Find(1), bench);
      RunRate shared{};
      if (place(2, aggressor.key)) {
        shared = physics_.RateIn(*bench.Find(1), bench);
        (void)bench.Remove(2);
      }
      (void)bench.Remove(1);
      if (alone.fails || shared.fails || alone.qps <= 0 || shared.qps <= 0) continue;
      const double lost = std::clamp(1 - noisy(shared.qps) / noisy(alone.qps), 0.0, 1.0);
      if (auto ok = interference.Observe("mps", victim.key, aggressor.key, lost); !ok) {
        return std::unexpected(ok.error());
      }
    }
  }
  return {};
}

Expected<ProfileSamples> Profiler::Sample(const std::vector<std::string>& gpu_models,
                                          uint64_t seed) const {
  Expected<std::vector<model::GpuModelId>> ids = ResolveModels(gpu_models);
  if (!ids) return std::unexpected(ids.error());
  const std::vector<Config> configs = MeasuredConfigs(physics_, *ids, options_.mps_percents);
  if (configs.empty()) return Fail("profiler: no GPU models to profile");
  Expected<model::GpuModelId> pair_gpu = CheckOptions(physics_.catalog(), options_);
  if (!pair_gpu) return std::unexpected(pair_gpu.error());

  Rng rng(seed);
  ProfileSamples out;
  SampleProfile(physics_, options_, configs, rng, out.profile_);
  // Pairs at 50 % MPS each on one whole GPU: the victim alone, then beside the aggressor.
  if (auto ok = SampleInterference(*pair_gpu, rng, out.interference_); !ok) {
    return std::unexpected(ok.error());
  }
  return out;
}

}  // namespace tessera::sim
