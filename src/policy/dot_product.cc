#include "policy/dot_product.h"

#include "policy/best_fit.h"
#include "policy/fit.h"

namespace tessera::policy {

int DotProduct::ScoreOf(int64_t cpu_free, int64_t gpu_free, int64_t cpu_req, int64_t gpu_req) {
  const double dot = (cpu_free / kMaxSpecCpuMilli) * (cpu_req / kMaxSpecCpuMilli) +
                     (gpu_free / kMaxSpecGpuMilli) * (gpu_req / kMaxSpecGpuMilli);
  return static_cast<int>(100 * (1 - dot / 2));
}

std::optional<Candidate> DotProduct::Score(const Workload& w, NodeIndex node,
                                           const ClusterState& c) {
  std::optional<Placement> p = BestFitPlacement(w, node, c);
  if (!p) return std::nullopt;
  const int score = ScoreOf(c.node(node).free_cpu_milli(), NodeFreeGpuMilli(c, node), w.cpu_milli,
                            static_cast<int64_t>(w.gpu.count) * w.gpu.milli);
  return Candidate{static_cast<double>(score), std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
