#pragma once
// random: the FGD paper's "Random-fit" baseline (ATC'23 §6.1; reference simulator
// plugin/random_score.go with GPU selection "random"): every feasible node is equally likely,
// and a GPU share goes to a uniformly random fitting GPU of that node. Whole and multi-GPU
// requests take the node's first idle GPUs. Each node's score is a uniform draw in [0, 100), so
// "highest score wins" picks a uniformly random feasible node. Draws from the context's seeded
// Rng; no options.

#include "base/rng.h"
#include "policy/policy.h"

namespace tessera::policy {

class RandomFit final : public Policy {
 public:
  explicit RandomFit(Rng& rng) : rng_(rng) {}
  std::string_view name() const override { return "random"; }
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // The default Filter (NodeFits) reads the node alone (the core keeps its verdicts).
  OfferInputs OffersDependOn() const override { return {.node_local_filter = true}; }

 private:
  Rng& rng_;
};

}  // namespace tessera::policy
