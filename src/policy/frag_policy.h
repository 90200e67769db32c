#pragma once
// FragmentationPolicy: the machinery shared by policies that score a node by how placing a
// workload changes its expected fragmentation against the typical pods (FGD, ATC'23 §4.2, and
// Tessera's own refinements): for every candidate GPU of a GPU share — or the first-fit slices
// of any other request — it computes the node's fragment before and after (policy/frag.h) and
// lets the subclass turn (before, after) into a score; the best GPU of the node (first on ties)
// is the node's offer.
//
// Speed: a node's fragment and its offer for a shape only change when the node changes, so
// both are cached per node and per shape, keyed on ClusterState's Node::version; scoring a node
// whose cache is valid is a few array reads and one Placement. The caches make the policy
// stateful: one instance per scheduler (Policy's contract).
//
// Typical pods: given at construction (the experiment derives them from the trace), or, when
// empty, learned online from the workloads the policy is asked about (each counted once, by
// id), re-derived at every new workload with the same 95% coverage — the caches reset then.

#include <unordered_set>
#include <vector>

#include "policy/frag.h"
#include "policy/policy.h"

namespace tessera::policy {

class FragmentationPolicy : public Policy {
 public:
  explicit FragmentationPolicy(ShapeDistribution typical);
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) final;
  bool ScoreInto(const Workload& w, NodeIndex node, const ClusterState& c, Candidate& out) final;
  // The default Filter (NodeFits): it reads the node alone; so do the offers, unless the
  // typical pods are learned online (each new workload may change them).
  OfferInputs OffersDependOn() const final {
    return {.node_local_filter = true, .node_local_score = !learn_online_};
  }
  const ShapeDistribution& typical() const { return typical_; }

 protected:
  // The score of a placement that moves the node's fragment from `before` to `after`, leaving
  // `after_free`. Higher is better.
  virtual double Rate(double before, double after, const NodeFree& before_free,
                      const NodeFree& after_free) const = 0;
  // The typical pods were re-derived (online learning); subclasses refresh what they derive.
  virtual void TypicalChanged() {}

 private:
  struct NodeFrag {
    uint64_t version = 0;
    double frag = 0;
  };
  struct Offer {
    uint64_t version = 0;
    double score = 0;
    int gpu = -1;  // GPU index on the node for a share; -1: first-fit slices
    bool ok = false;
    // The placement's slices when it has at most one (then `slice`), so an offer is rebuilt
    // without visiting the GPUs again; -1: more, rebuilt by FirstFitInto.
    int8_t slices = -1;
    model::Slice slice;
  };
  // What an offer follows besides the node: the fragmentation shape, and the GPU memory and
  // MIG profile that decide which partition takes it.
  struct ShapeKey {
    PodShape shape;
    int64_t gpu_memory_mib = 0;
    std::string mig_profile;
    bool operator==(const ShapeKey& o) const {
      return shape.SameShape(o.shape) && gpu_memory_mib == o.gpu_memory_mib &&
             mig_profile == o.mig_profile;
    }
  };
  double FragOf(NodeIndex node, const ClusterState& c);
  Offer Evaluate(const Workload& w, NodeIndex node, const ClusterState& c);
  int ShapeId(const Workload& w);
  void Learn(const Workload& w);
  void ResetCaches();

  ShapeDistribution typical_;
  bool learn_online_;
  std::vector<PodShape> learned_counts_;
  std::unordered_set<WorkloadId> learned_ids_;
  std::vector<ShapeKey> shapes_;            // shape id -> shape (weight unused)
  std::vector<std::vector<Offer>> offers_;  // [shape id][node]
  std::vector<NodeFrag> node_frag_;         // [node]
  ShapeKey last_shape_;
  int last_shape_id_ = -1;
  const Workload* last_workload_ = nullptr;  // whose shape last_shape_ is (ShapeId's shortcut)
  WorkloadId last_workload_id_ = 0;
};

}  // namespace tessera::policy
