#include "policy/best_fit.h"

#include "policy/fit.h"

namespace tessera::policy {

int64_t NodeFreeGpuMilli(const ClusterState& c, NodeIndex n) {
  int64_t free = 0;
  for (const model::Gpu& g : c.gpus_of(n)) free += g.available ? g.free_milli : 0;
  return free;
}

int BestFit::ScoreOf(int64_t cpu_free, int64_t gpu_free, int64_t cpu_req, int64_t gpu_req) {
  const double left = 0.5 * static_cast<double>(cpu_free - cpu_req) / kMaxSpecCpuMilli +
                      0.5 * static_cast<double>(gpu_free - gpu_req) / kMaxSpecGpuMilli;
  return static_cast<int>((1.0 - left) * 100);
}

std::optional<Candidate> ResourceScoredOffer(const Workload& w, NodeIndex node,
                                             const ClusterState& c, ResourceScore score_of) {
  std::optional<Placement> p = BestFitPlacement(w, node, c);
  if (!p) return std::nullopt;
  Candidate cand;
  cand.score = score_of(c.node(node).free_cpu_milli(), NodeFreeGpuMilli(c, node), w.cpu_milli,
                        static_cast<int64_t>(w.gpu.count) * w.gpu.milli);
  cand.placement = std::move(*p);
  return cand;
}

std::optional<Candidate> BestFit::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  return ResourceScoredOffer(w, node, c, &ScoreOf);
}

}  // namespace tessera::policy
