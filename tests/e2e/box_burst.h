#pragma once
// muxflow's evictions on the box (docs/cluster-box.md): seed 001's short burst scenario
// (sim::ShortBurstScenario: two T4s, a service on each whose memory bursts once, two offline
// jobs) run by the simulator in this process and by the box, compared. The promise: on the box,
// too, SysMonitor reads the burst through the agents and Prometheus and evicts the jobs
// through the Eviction API before the services run out of memory, and the jobs come back from
// their checkpoints and finish — the same evictions on the same GPUs as the simulator's.
#include <nlohmann/json.hpp>
#include <string>

#include "e2e/box_run.h"

namespace tessera::e2e {

// The policy both sides run: muxflow at the scenario's scale (rounds every 5 s, a 10-s hold).
inline constexpr const char* kBurstPolicy = R"(muxflow{"period_s":5,"base_hold_s":10})";

// The RunSpec of the burst scenario for `seed` (its own directory under `out`).
RunSpec BurstSpec(uint64_t seed, const std::string& out, const std::string& tessera,
                  const std::string& exporter);

// Runs the simulator's side of `spec` and compares it with the box's `box`:
// {"scenario": "burst", "policy", "seed", "sim": {evictions, service_oom, jobs_done, jobs},
//  "box": {the same, "eviction_api": pods evicted through the API, "reasons": the leader's
//  eviction lines}, "jobs": [{name, sim: {gpu, moves, end_s}, box: {...}}], "checks", "ok"}.
// Checks: every job done on both sides; the box evicted through the Eviction API for
// SysMonitor; as many evictions as the simulator; each application's jobs end on the same GPUs
// ("swapped" counts jobs of one application that traded GPUs: a tie of the matching); no
// service ran out of memory; no pod bound twice; the run did not time out.
nlohmann::json CompareBurst(const RunSpec& spec, const RunResult& box);

// The page of a report {"date", "runs": [CompareBurst…]}: each run's checks, both sides'
// figures, each job's GPU, moves and end on both sides, and the leader's eviction lines.
std::string BurstPage(const nlohmann::json& report);

}  // namespace tessera::e2e
