#include "policy/gpu_clustering.h"

#include <algorithm>
#include <bit>

#include "policy/best_fit.h"
#include "policy/fit.h"

namespace tessera::policy {
namespace {

uint64_t TagOf(int count, int milli) {
  if (count == 1 && milli < 1000) return 1;
  return uint64_t{1} << std::min(count, 63);
}

}  // namespace

uint64_t GpuClustering::NodeTags(const ClusterState& c, NodeIndex n) {
  uint64_t tags = 0;
  const model::Node& node = c.node(n);
  for (GpuIndex g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    for (const model::Partition& part : c.partitions_of(g)) {
      for (const model::Client& client : part.clients) {
        if (client.milli < 1000) {
          tags |= 1;
          continue;
        }
        // A whole-GPU workload: its GPU count is how many GPUs of this node host it.
        int count = 0;
        for (GpuIndex h = node.first_gpu; h < node.first_gpu + node.gpu_count; ++h) {
          for (const model::Partition& q : c.partitions_of(h)) {
            count += std::any_of(q.clients.begin(), q.clients.end(), [&](const model::Client& x) {
              return x.workload == client.workload;
            });
          }
        }
        tags |= TagOf(count, 1000);
      }
    }
  }
  return tags;
}

std::optional<Candidate> GpuClustering::Score(const Workload& w, NodeIndex node,
                                              const ClusterState& c) {
  std::optional<Placement> p = BestFitPlacement(w, node, c);
  if (!p) return std::nullopt;
  if (w.gpu.count == 0) return Candidate{0, std::move(*p), std::nullopt};
  const uint64_t tags = NodeTags(c, node);
  const uint64_t mine = TagOf(w.gpu.count, w.gpu.milli);
  const int64_t t = 100 / 4 * (8000 - NodeFreeGpuMilli(c, node)) / 8000;
  int64_t score = 0;
  if (tags & mine) {
    score = t + (std::popcount(tags) == 1 ? 75 : 50);
  } else {
    score = t + (tags == 0 ? 25 : 0);
  }
  return Candidate{static_cast<double>(score), std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
