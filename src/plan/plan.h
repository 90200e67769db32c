#pragma once
// Capacity planning (docs/planning.md): the cheapest set of GPUs, and how to cut and share them,
// on which every service meets its throughput objective at peak with a chosen confidence.
//
// The model. A replica runs on one slice kind: a MIG instance of one profile on a GPU cut into
// a layout NVIDIA supports (model/mig.h), or an MPS share (100, 50 or 25 %: the thesis's one,
// two and four equal splits) of a GPU with MIG off. A replica of service s on kind k is counted
// on rate(s, k) = the lower end of the predictor's interval at the confidence (one-sided: the
// central interval of coverage 2c − 1) × (1 − the interference its MPS neighbours may cost it).
// The neighbours are unknown when the rates are set, so that cost is the worst the predictor
// knows: on a 50 % share the most any service of the input takes from s next to it (the
// predictor's "mps" interference, measured at 50 % shares), on a 25 % share three times that
// (capped at 1). No interference is known for a MIG instance or a 100 % share. A kind is open
// to s only where its memory holds s (the instance's memory, or the share of the GPU's).
// s is served when Σ rate over its replicas ≥ its SLO and it has at least min_replicas.
//
// Two solvers over the same model (solve.h): the exact integer program and a heuristic, and the
// baseline every replica on a whole GPU. The plan is then checked on the simulator's ground
// truth (twin.h).

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/mig.h"
#include "plan/input.h"
#include "predict/predictor.h"
#include "sim/apps.h"

namespace tessera::plan {

struct PlanOptions {
  double confidence = 0.9;          // of each replica's counted rate, in [0.5, 0.999]
  int max_replicas = 1000;          // per service: more means no GPU model can serve its SLO
  double exact_time_limit_s = 120;  // SolveExact's, past which it returns the best plan found
};

struct SliceKind {
  int gpu = 0;            // index into the menu (Problem::gpus)
  int profile = -1;       // MIG profile index of the GPU model; -1: a share of a whole GPU
  int mps_percent = 100;  // whole GPU only
  std::string config;     // the predictor's column, "A30-24GB/1g.6gb/100"
  int64_t memory_mib = 0;
  // Of the GPU: MIG compute slices, or quarters of a whole GPU.
  int units = 0;
  int units_per_gpu = 0;
  // Its share of the GPU for costing: MPS %/100; a MIG instance's larger fraction of the GPU's
  // compute and memory slices (a 1g.10gb holds 1/7 of an A100's SMs but 2/8 of its memory).
  double share = 0;
  std::string Label() const;  // "A30-24GB 1g.6gb", "V100-32GB 50 % MPS"
};

struct ServiceOption {
  int kind = 0;
  double rate = 0;          // QPS one replica is counted on
  double predicted = 0;     // the predictor's isolated QPS
  double sigma = 0;         // σ of its log
  double interference = 0;  // fraction counted lost to MPS neighbours
};

struct ServiceNeed {
  double demand = 0;  // SLO at peak, QPS
  int min_replicas = 1;
  std::vector<ServiceOption> options;  // the kinds open to it, rate > 0
};

// The replicas a service needs when all of them take option o: max(min_replicas, ⌈demand /
// rate⌉) (a Deployment's pods share one template, so one slice request).
inline int ReplicasFor(const ServiceNeed& need, const ServiceOption& o) {
  return std::max(need.min_replicas, static_cast<int>(std::ceil(need.demand / o.rate - 1e-9)));
}

struct Problem {
  std::vector<GpuOffer> gpus;
  std::vector<SliceKind> kinds;
  std::vector<ServiceNeed> services;  // in the input's order
  // Per menu entry: the MIG layouts NVIDIA supports as counts of each profile (index =
  // profile), distinct and maximal; empty for a GPU without MIG.
  std::vector<std::vector<std::vector<int>>> layouts;
  std::vector<std::vector<model::MigLayout>> layout_shapes;  // the same, as layouts
  PlanOptions options;
};

// The rates of every service on every kind of the menu. An Error naming the service for an
// application the predictor does not know and no features, or one no kind can hold or serve
// within max_replicas.
[[nodiscard]] Expected<Problem> BuildProblem(const PlanInput& input,
                                             const predict::Predictor& predictor,
                                             const sim::AppCatalog& catalog,
                                             const PlanOptions& options = {});

// The menu's kinds and MIG layouts, no service yet (what BuildProblem starts from; tests build
// problems on it by hand).
Problem MenuProblem(const std::vector<GpuOffer>& gpus, const PlanOptions& options = {});

// The same problem with only whole GPUs at 100 %: the baseline "one whole GPU per replica".
Problem WholeGpusOnly(const Problem& problem);

// A replica in a plan: which service, on which kind, and where on its GPU.
struct Seat {
  int service = 0;
  int kind = 0;
  int instance = -1;  // MIG: the instance's index in PlannedGpu::layout; -1 under MPS
};

struct PlannedGpu {
  int gpu = 0;                          // menu index
  std::optional<model::MigLayout> mig;  // nullopt: MIG off, seats are MPS shares
  std::vector<Seat> seats;
};

struct Plan {
  std::string solver;  // "exact", "heuristic", "whole-gpus"
  std::vector<PlannedGpu> gpus;
  double cost = 0;               // Σ price of its GPUs
  double lower_bound = 0;        // SolveExact: no plan costs less (= cost when proven); else 0
  std::vector<int> replicas;     // per service
  std::vector<double> capacity;  // per service: Σ counted rates
  int gpu_count() const { return static_cast<int>(gpus.size()); }
};

}  // namespace tessera::plan
