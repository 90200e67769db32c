#include "policy/random.h"

#include "policy/fit.h"

namespace tessera::policy {

std::optional<Candidate> RandomFit::Score(const Workload& w, NodeIndex node,
                                          const ClusterState& c) {
  std::optional<Placement> p;
  if (w.gpu.sharing() && w.gpu.mig_profile.empty()) {
    // Reservoir sampling over the fitting GPUs: each is chosen with equal probability.
    int fitting = 0;
    const model::Node& n = c.node(node);
    for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
      std::optional<Placement> on = PlacementOnGpu(w, node, g, c);
      if (on && rng_.Below(++fitting) == 0) p = std::move(on);
    }
  } else {
    p = FirstFitPlacement(w, node, c);
  }
  if (!p) return std::nullopt;
  return Candidate{100 * rng_.Uniform(), std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
