#pragma once
// best-fit: the FGD paper's "Best-fit" baseline (ATC'23 §6.1, after Kubernetes' "most
// allocated"; reference simulator plugin/best_fit_score.go). A node scores
//   int(100 · (1 − ½·(cpu_free − cpu_req)/128000 − ½·(gpu_free − gpu_req)/8000))
// — the less CPU and GPU (total milli of the node) left after placing, the better; 128 cores
// and 8 GPUs are the reference simulator's normalising "max spec". The score is truncated to an
// integer as the Kubernetes framework does, so near-equal nodes tie (the core breaks ties).
// A GPU share goes to the fitting GPU with the least free milli. No options.

#include "policy/policy.h"

namespace tessera::policy {

// The simulator's normalising maximum node (MaxSpecCpu, MaxSpecGpu).
inline constexpr double kMaxSpecCpuMilli = 128000;
inline constexpr double kMaxSpecGpuMilli = 8000;

// Σ free GPU milli of node n's available GPUs.
int64_t NodeFreeGpuMilli(const ClusterState& c, NodeIndex n);

// The offer of a policy that scores a node by its free CPU and GPU against the request, with a
// GPU share on the fitting GPU with the least free milli (best-fit, dot-product).
using ResourceScore = int (*)(int64_t cpu_free, int64_t gpu_free, int64_t cpu_req, int64_t gpu_req);
std::optional<Candidate> ResourceScoredOffer(const Workload& w, NodeIndex node,
                                             const ClusterState& c, ResourceScore score_of);

class BestFit final : public Policy {
 public:
  std::string_view name() const override { return "best-fit"; }
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // The default Filter (NodeFits) reads the node alone, and so does the offer (the core keeps
  // its verdicts and ranks the nodes by offer).
  OfferInputs OffersDependOn() const override {
    return {.node_local_filter = true, .node_local_score = true};
  }
  // The integer score above; exposed for tests.
  static int ScoreOf(int64_t cpu_free, int64_t gpu_free, int64_t cpu_req, int64_t gpu_req);
};

}  // namespace tessera::policy
