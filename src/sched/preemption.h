#pragma once
// FindPreemption: which running workloads to evict so that a higher-priority one fits —
// kube-scheduler's DefaultPreemption (PostFilter), asked of the policy that places.
//
// Per node (that `admits` lets the workload run on; unset: every node): every placed workload of
// strictly lower priority that `preemptible` allows (unset: all; the Kubernetes driver: the pods
// it placed and a controller recreates) is a potential victim. With all of them removed the policy must pass
// the workload (Filter) and make an offer there (Score), or the node is out. The potential
// victims are then put back one at a time, the most important first (higher priority, then the
// lower id: the earlier submitted), and each one the workload still fits beside is spared; the
// victims are the rest. Among the nodes: the lowest highest-victim priority, then the lowest
// sum of victim priorities, then the fewest victims, then the lowest node index
// (pickOneNodeForPreemption without its PodDisruptionBudget and start-time rules: a driver's
// evictions may honour budgets themselves, as the Kubernetes driver's Eviction API does).
//
// nullopt when no node can be freed for it, and also when some node takes it as the cluster is
// (it needs no victims: the next cycle places it). Pure: works on one copy of `c`; asks the
// policy's Filter and Score only.

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "model/cluster.h"
#include "policy/policy.h"

namespace tessera::sched {

struct Preemption {
  model::NodeIndex node = 0;
  std::vector<model::WorkloadId> victims;  // the least important first
};

using AdmitsFn = std::function<std::string_view(const model::Workload&, model::NodeIndex)>;
using PreemptibleFn = std::function<bool(const model::Workload&)>;

std::optional<Preemption> FindPreemption(const model::Workload& w, const model::ClusterState& c,
                                         policy::Policy& policy, const AdmitsFn& admits = {},
                                         const PreemptibleFn& preemptible = {});

}  // namespace tessera::sched
