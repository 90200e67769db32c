#pragma once
// What the core's tests share: a workload asking for a share of one GPU, a cluster of two nodes
// with one GPU each (n0: a V100, n1: an A30 with MIG off), and first fit counting its Filters.
#include <string>

#include "model/cluster.h"
#include "policy/first_fit.h"

namespace tessera::sched::testing_support {

inline model::Workload Share(model::WorkloadId id, int milli, double arrival = 0,
                             int priority = 0) {
  model::Workload w;
  w.id = id;
  w.name = "w" + std::to_string(id);
  w.gpu.count = 1;
  w.gpu.milli = milli;
  w.arrival_s = arrival;
  w.priority = priority;
  return w;
}

inline bool AddTwoNodes(model::ClusterState& c) {
  return c.AddNode(model::UniformNode("n0", *model::FindGpuModel("V100-32GB"), 1, 8000, 65536))
             .has_value() &&
         c.AddNode(model::UniformNode("n1", *model::FindGpuModel("A30-24GB"), 1, 8000, 65536))
             .has_value();
}

// First fit that counts how often the core asks it to filter a node; `declares`: it says its
// Filter reads the node alone (OfferInputs::node_local_filter), as first-fit itself does.
class CountingFirstFit : public policy::Policy {
 public:
  explicit CountingFirstFit(bool declares = false) : declares_(declares) {}
  std::string_view name() const override { return "counting-first-fit"; }
  OfferInputs OffersDependOn() const override { return {.node_local_filter = declares_}; }
  policy::Feasibility Filter(const model::Workload& w, model::NodeIndex n,
                             const model::ClusterState& c) const override {
    ++filters;
    return inner_.Filter(w, n, c);
  }
  std::optional<policy::Candidate> Score(const model::Workload& w, model::NodeIndex n,
                                 const model::ClusterState& c) override {
    return inner_.Score(w, n, c);
  }
  mutable int filters = 0;

 private:
  bool declares_;
  policy::FirstFit inner_;
};

}  // namespace tessera::sched::testing_support
