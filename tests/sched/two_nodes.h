#pragma once
// What the core's tests share: a workload asking for a share of one GPU, and a cluster of two
// nodes with one GPU each (n0: a V100, n1: an A30 with MIG off).
#include <string>

#include "model/cluster.h"

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

}  // namespace tessera::sched::testing_support
