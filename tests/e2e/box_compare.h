#pragma once
// The simulator's side of a box run and the comparison (docs/cluster-box.md): `tessera simulate
// --experiment thesis` on the same policy, seed and time scale, its workloads.csv read back, and
// per run the attainment, mean |achieved − SLO| / SLO and makespan of both sides, each pod's node
// and slice on both, and whether the run holds the parity the box promises.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "e2e/box_run.h"

namespace tessera::e2e {

struct SimPod {
  int64_t id = 0;
  std::string app;
  double slo_qps = 0, achieved_qps = 0, arrival_s = 0;
  bool failed = false;
  std::optional<double> start_s, end_s;
  std::string node, partition, profile;
  int32_t milli = 0;
  int moves = 0;
};

// Runs `tessera simulate` for the run's policy and seed into dir/sim and reads back the pods of
// its scenario. Throws std::runtime_error when it fails, with what it printed.
std::vector<SimPod> RunSimulator(const RunSpec& spec);

// The simulator's scheduling cycle (sim::EngineOptions::cycle_interval_s): while pods wait it
// decides once per cycle on every event since the last, where the daemons decide on each watch
// event. Two events within one cycle are a tie the two sides may decide differently.
inline constexpr double kResolutionS = 1.0;

// One run compared: {"policy", "seed", "sim": {...}, "box": {...}, "pods": [...], "placements":
// {"same", "different", "ties"}, "checks": {...}, "ok"}.
nlohmann::json Compare(const RunSpec& spec, const RunResult& box, const std::vector<SimPod>& sim);

// One run's summary as Compare wrote it: the row of the table and of the page.
struct RunRow {
  std::string policy;
  uint64_t seed = 0;
  double attainment_sim = 0, attainment_box = 0;  // percent
  double diff_sim = 0, diff_box = 0;              // mean |achieved − SLO| / SLO
  double makespan_sim = 0, makespan_box = 0;
  int same = 0, different = 0, ties = 0, after_tie = 0, moves_sim = 0, moves_box = 0;
  std::string failed;  // the checks that failed, comma-separated; "" when all held
};
RunRow RowOf(const nlohmann::json& run);

// The page: every run's figures side by side, the checks, and each pod's placement on both sides.
std::string ComparisonPage(const nlohmann::json& report);

}  // namespace tessera::e2e
