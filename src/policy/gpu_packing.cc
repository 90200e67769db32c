#include "policy/gpu_packing.h"

#include <algorithm>
#include <array>

#include "policy/fit.h"

namespace tessera::policy {

std::optional<Candidate> GpuPacking::Score(const Workload& w, NodeIndex node,
                                           const ClusterState& c) {
  std::optional<Placement> p = BestFitPlacement(w, node, c);
  if (!p) return std::nullopt;
  if (w.gpu.count == 0) return Candidate{0, std::move(*p), std::nullopt};
  const auto gpus = c.gpus_of(node);
  int idle = 0;
  for (const model::Gpu& g : gpus) idle += g.available && g.free_milli == 1000;
  const int n = static_cast<int>(gpus.size());
  int score = 0;
  if (idle == n) {
    score = std::max(100 / 3 - n, n);
  } else {
    int opened = 0, free_ratio = 0;
    for (const model::Slice& s : p->slices) {
      const int32_t free = c.gpu(c.partition(s.partition).gpu).free_milli;
      if (free == 1000) ++opened;
      free_ratio += free * 100 / 1000;
    }
    score = opened > 0 ? std::max(100 / 2 - opened, 100 / 3) : std::max(100 - free_ratio / 10, 50);
  }
  return Candidate{static_cast<double>(score), std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
