#pragma once
// Fragmentation of GPU nodes against a workload mix, as the FGD paper defines it ("Beware of
// Fragmentation", Weng et al., USENIX ATC'23, §3.2–§4.1) and its simulator computes it
// (hkust-adsl/kubernetes-scheduler-simulator, pkg/utils/frag.go).
//
//  - ShapeDistribution: the "typical pods" M — the most frequent pod shapes (CPU, GPU count,
//    GPU share, allowed GPU models) covering a given share of a workload list (95% in the
//    paper's experiments), each weighted by its frequency, renormalised to sum to 1. Built from a
//    trace by the experiment, parsed from a policy's options, or learned online from arrivals.
//  - FragmentMilli(node, M) = Σ_m p_m · F_n(m): for one shape m, if the node cannot host it
//    (too little CPU, too few GPUs of an allowed model with enough free share), all of the node's
//    free GPU milli is fragment; otherwise only the free milli of GPUs that could not take one
//    of its GPUs (free share below its request, or a model it does not allow). A CPU-only shape
//    counts the node's whole free GPU milli as fragment, as the reference simulator does (its
//    "XL/XR" classes are summed with Q1/Q2/Q4/no-access); memory is not part of the measure.
//
// A GPU is one pool of milli here, as in the paper; on a MIG GPU the pool is the GPU's free
// compute (ClusterState::Gpu::free_milli), an approximation the paper does not cover.
// Pure values and functions; thread-safe.

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "base/error.h"
#include "model/cluster.h"

namespace tessera::policy {

// A pod shape as FGD sees it: what decides where a pod fits, nothing else.
struct PodShape {
  int64_t cpu_milli = 0;
  int gpu_count = 0;
  int gpu_milli = 0;        // per GPU, 1..1000; 0 for a CPU-only shape
  uint64_t model_mask = 0;  // bit m = GpuModelId m allowed; 0 = any model
  double weight = 0;        // probability within its distribution

  bool SameShape(const PodShape& o) const {
    return cpu_milli == o.cpu_milli && gpu_count == o.gpu_count && gpu_milli == o.gpu_milli &&
           model_mask == o.model_mask;
  }
  bool Allows(model::GpuModelId m) const { return model_mask == 0 || (model_mask >> m) & 1; }
};

// The shape of a workload (weight 0). A GPU-sharing workload keeps its share; a whole-GPU one
// has gpu_milli 1000.
PodShape ShapeOf(const model::Workload& w);

class ShapeDistribution {
 public:
  ShapeDistribution() = default;
  // Shapes sorted by frequency (ties: larger CPU, share, count first, as the reference
  // simulator's reverse sort), taken one at a time until they cover `coverage` of `workloads`,
  // then renormalised. Empty input gives an empty distribution.
  static ShapeDistribution Typical(std::span<const model::Workload> workloads,
                                   double coverage = 0.95);
  // The same from shapes whose weight is a count (or any non-negative frequency).
  static ShapeDistribution TypicalFromCounts(std::vector<PodShape> counted, double coverage);
  // [{"cpu_milli":..,"gpu_count":..,"gpu_milli":..,"gpu_models":["T4",..],"weight":..}, ...]
  // weights are renormalised; an unknown model or a bad value is an Error naming the entry.
  [[nodiscard]] static Expected<ShapeDistribution> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;

  std::span<const PodShape> shapes() const { return shapes_; }
  bool empty() const { return shapes_.empty(); }
  explicit ShapeDistribution(std::vector<PodShape> shapes);  // renormalises the weights

 private:
  std::vector<PodShape> shapes_;
};

// The free resources of one node, the only input of the fragmentation measure. GPUs beyond the
// 32nd of a node are not seen by the measure (no such node exists in the traces or the catalog's
// servers; a larger one is judged on its first 32 GPUs).
inline constexpr int kMaxFragGpus = 32;
struct NodeFree {
  int64_t cpu_milli = 0;
  int gpus = 0;
  std::array<int32_t, kMaxFragGpus> free_milli{};  // 0 for an unavailable GPU
  std::array<model::GpuModelId, kMaxFragGpus> model{};

  int64_t TotalFree() const;
};

// Reads node n (ready or not: a node that is not ready has no free GPU).
NodeFree NodeFreeOf(const model::ClusterState& c, model::NodeIndex n);

// F_n(m): the fragment (GPU milli) of the node for one shape.
double ShapeFragmentMilli(const NodeFree& node, const PodShape& shape);
// Σ_m p_m · F_n(m).
double FragmentMilli(const NodeFree& node, const ShapeDistribution& typical);

}  // namespace tessera::policy
