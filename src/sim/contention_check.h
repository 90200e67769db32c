#pragma once
// ContentionCheck: the simulator's co-location model (Physics; docs/simulator.md
// "Interference", seed 000 Ch. 6.4) held against pairs measured on a real GPU by
// tools/characterise (a directory with its profile.csv and interference.csv, all on one GPU
// model's whole GPU).
//
// Each measured application gets a roofline on that GPU from its alone rates at MPS 100/50/25:
// t(p) = a / p + b (p the MPS thread share; non-negative least squares in relative error).
// Whole-GPU MPS points cannot tell the bandwidth-bound part from the fixed part (neither
// changes with p), so b is read two ways (`ConstantPart`): as fixed time (host work, launches;
// the thesis's reading of small engines, Ch. 6.2) or as memory time. The measured alone rates
// stay as `measured` overrides, so only the model's contention terms are under test.
//
// Each measured pair is then placed as it ran — both clients at 50 % MPS of one whole GPU
// (kind "mps"), or both without MPS (kind "timeslice", Physics's time-slicing) — and the
// victim's predicted rate (noise off) compared with its measured rate beside the aggressor:
// relative error |predicted − measured| / measured.
//
// Fit: the MPS channel's constants (front_kappa, sm_kappa) and the time-slice model's
// fixed_active are fitted by grid search on mean relative error, two-fold: pairs alternate
// between folds in file order, each fold's constants are judged on the other fold's pairs
// (held out), and a fit on all pairs gives the constants to use for that GPU model. The
// thesis world's constants are never changed by this: a fit is an option of its own
// (PhysicsOptions::mps_by_gpu).
//
// Pure function of its inputs; an Error names the file and what is missing.

#include <string>
#include <vector>

#include "base/error.h"
#include "sim/physics.h"

namespace tessera::sim {

enum class ConstantPart { kFixed, kMemory };

struct ContentionPair {
  std::string kind, victim, aggressor;
  double alone_qps = 0;      // the victim alone in the pair's setting (50 % MPS, or whole)
  double measured_qps = 0;   // beside the aggressor, measured
  double predicted_qps = 0;  // beside the aggressor, Physics
  int fold = 0;
  double error() const { return std::abs(predicted_qps - measured_qps) / measured_qps; }
};

struct ContentionFit {
  // MPS: front_kappa, sm_kappa; time-slicing: fixed_active (in `front_kappa`'s place).
  double front_kappa = 0, sm_kappa = 0, fixed_active = 0;
  double train_median = 0;     // median relative error on the pairs fitted on
  double held_out_median = 0;  // on the other fold (folds only)
};

struct ContentionKindCheck {
  std::string kind;                   // "mps" or "timeslice"
  std::vector<ContentionPair> pairs;  // at the simulator's default constants
  double default_median = 0;
  std::vector<ContentionFit> folds;          // two
  double held_out_median = 0;                // over every pair, each judged by the fold without it
  ContentionFit all;                         // fitted on every pair
  std::vector<ContentionPair> fitted_pairs;  // at `all`'s constants
};

struct ContentionCheck {
  std::string gpu;  // the catalog's model name
  ConstantPart constant_part = ConstantPart::kFixed;
  PhysicsOptions defaults;
  std::vector<ContentionKindCheck> kinds;  // those the data has, "mps" first
  // Each application's fitted roofline on `gpu`: a (compute) and b (fixed or memory), seconds.
  struct Roofline {
    std::string app;
    double a = 0, b = 0, max_relative_error = 0;
  };
  std::vector<Roofline> rooflines;
};

[[nodiscard]] Expected<ContentionCheck> CheckContention(const std::string& dir,
                                                        ConstantPart constant_part);

}  // namespace tessera::sim
