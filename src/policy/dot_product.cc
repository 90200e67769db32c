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
  return ResourceScoredOffer(w, node, c, &ScoreOf);
}

}  // namespace tessera::policy
