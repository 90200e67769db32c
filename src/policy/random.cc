#include "policy/random.h"

#include "policy/fit.h"

namespace tessera::policy {

std::optional<Candidate> RandomFit::Score(const Workload& w, NodeIndex node,
                                          const ClusterState& c) {
  std::optional<Placement> p;
  if (w.gpu.sharing() && w.gpu.mig_profile.empty()) {
    // Reservoir sampling over the fitting GPUs: each is chosen with equal probability. Only
    // the chosen GPU's placement is built.
    int fitting = 0;
    GpuIndex chosen = -1;
    const model::Node& n = c.node(node);
    for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
      const model::Gpu& gpu = c.gpu(g);
      bool fits = false;
      for (int slot = 0; slot < gpu.partition_count && !fits; ++slot) {
        fits = PartitionFits(w, gpu, c.partition(ClusterState::PartitionOf(g, slot)));
      }
      if (fits && rng_.Below(++fitting) == 0) chosen = g;
    }
    if (chosen >= 0) p = PlacementOnGpu(w, node, chosen, c);
  } else {
    p = FirstFitPlacement(w, node, c);
  }
  if (!p) return std::nullopt;
  return Candidate{100 * rng_.Uniform(), std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
