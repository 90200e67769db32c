#pragma once
// Profiler: the predictor's only window on the simulator's ground truth (DESIGN §5;
// docs/simulator.md "Profiling: the predictor never sees Physics"). It plays the thesis's
// characterisation campaign (seed 000, Ch. 6): it runs applications alone on a sample of
// configurations and in pairs on a shared partition, and writes down what it measured, with
// measurement noise — a sparse profile matrix and sparse interference matrices, the collaborative
// filter's input.
//
// The separation is in the types, not a convention: Physics keeps its per-configuration truth
// private (only Profiler is its friend), and what leaves the Profiler is ProfileSamples —
// plain matrices that only a Profiler can make. The predictor and the policies sit below sim
// in the module graph and cannot name Physics at all.
//
// Sampling (all seeded):
//  - configurations: every GPU model given × (whole GPU, each plain MIG profile) × each MPS
//    active-thread percentage (100, 50, 25 — the thesis's 1, 2 and 4 equal splits);
//  - a known application is measured on each configuration with probability `density`
//    (default 40 %), and always on at least one; a characterised application (`full_apps`)
//    on every configuration, as the thesis did its six engines (Ch. 6.1: all configurations,
//    each experiment run at least ten times); a new application (`new_apps`) on only 1 or 2
//    configurations, as when a workload arrives that nobody profiled;
//  - interference: for a `pair_share` of ordered pairs (victim, aggressor), the fraction of
//    the victim's QPS lost when both run at 50 % MPS on one `interference_gpu`;
//  - every measurement is the truth × (1 + N(0, noise_sd)), clamped to ±3 sd; a full app's
//    cell holds `full_runs` such measurements (their mean, count and variance).

#include <cstdint>
#include <string>
#include <vector>

#include "base/rng.h"
#include "predict/interference.h"
#include "predict/matrix.h"
#include "sim/physics.h"

namespace tessera::sim {

struct ProfilerOptions {
  double density = 0.4;
  std::vector<std::string> new_apps;   // measured on 1-2 configurations only
  std::vector<std::string> full_apps;  // measured on every configuration, `full_runs` times
  int full_runs = 10;
  double pair_share = 0.3;
  std::string interference_gpu = "V100-32GB";
  std::vector<int> mps_percents = {100, 50, 25};
  double noise_sd = 0.02;
};

class ProfileSamples {
 public:
  const predict::ProfileMatrix& profile() const { return profile_; }
  const predict::InterferenceMatrices& interference() const { return interference_; }
  // Hand the matrices to a predictor (consumes the samples).
  predict::ProfileMatrix TakeProfile() { return std::move(profile_); }
  predict::InterferenceMatrices TakeInterference() { return std::move(interference_); }

 private:
  friend class Profiler;
  ProfileSamples() = default;
  predict::ProfileMatrix profile_;
  predict::InterferenceMatrices interference_;
};

class Profiler {
 public:
  Profiler(const Physics& physics, ProfilerOptions options = {});

  // Samples every application of the physics' catalogue on `gpu_models`' configurations.
  // Fails on an unknown GPU model or interference GPU, a new or full app not in the
  // catalogue, or one that is both.
  [[nodiscard]] Expected<ProfileSamples> Sample(const std::vector<std::string>& gpu_models,
                                                uint64_t seed) const;

  // The configuration keys sampled for these models, in sampling order.
  std::vector<std::string> Configs(const std::vector<model::GpuModelId>& models) const;

 private:
  // Measures a `pair_share` of ordered pairs on one `gpu`: the victim's share of QPS lost.
  [[nodiscard]] Expected<void> SampleInterference(
      model::GpuModelId gpu, Rng& rng, predict::InterferenceMatrices& interference) const;

  const Physics& physics_;
  ProfilerOptions options_;
};

}  // namespace tessera::sim
