#pragma once
// dot-product: the FGD paper's "Dot-product" baseline (ATC'23 §6.1, Tetris-style alignment,
// SIGCOMM'14; reference simulator plugin/dot_product_score.go with dimension extension "merge"
// and normalisation "max", as its experiment scripts run it). With the node's free vector
// f = (cpu_free/128000, gpu_free/8000) and the request r = (cpu/128000, gpu_total/8000),
//   score = int(100 · (1 − (f·r)/2)),
// so the node whose leftovers align least with the request — the tighter fit — wins. A GPU share
// goes to the fitting GPU with the least free milli (the experiments' "best" GPU selection).

#include "policy/policy.h"

namespace tessera::policy {

class DotProduct final : public Policy {
 public:
  std::string_view name() const override { return "dot-product"; }
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // The default Filter (NodeFits) reads the node alone, and so does the offer (the core keeps
  // its verdicts and ranks the nodes by offer).
  OfferInputs OffersDependOn() const override {
    return {.node_local_filter = true, .node_local_score = true};
  }
  static int ScoreOf(int64_t cpu_free, int64_t gpu_free, int64_t cpu_req, int64_t gpu_req);
};

}  // namespace tessera::policy
