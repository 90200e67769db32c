#pragma once
// first-fit: the simplest correct policy — the first node (in cluster order) whose first
// fitting GPUs can host the workload. It proves the scheduler path end to end and is the
// reference every smarter policy must beat. No options.

#include "policy/policy.h"

namespace tessera::policy {

class FirstFit final : public Policy {
 public:
  std::string_view name() const override { return "first-fit"; }
  // Every fitting node offers the same score; the core's tie-break (lowest node) makes it
  // first-fit.
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // The default Filter (NodeFits) reads the node alone, and so does the offer (the core keeps
  // its verdicts and ranks the nodes by offer).
  OfferInputs OffersDependOn() const override {
    return {.node_local_filter = true, .node_local_score = true};
  }
};

}  // namespace tessera::policy
