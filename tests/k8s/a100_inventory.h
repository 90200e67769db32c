#pragma once
// A node inventory of whole A100-40GB GPUs as an agent would publish it: shared by the k8s tests
// and the extender benchmark (store types only, so the benchmark needs no test server).

#include <string>

#include "store/records.h"

namespace tessera::k8s::testing_support {

// `gpus` whole A100-40GB GPUs, uuids GPU-<node>-<i> (as NVML would report them).
inline store::NodeInventory A100Inventory(const std::string& node, int gpus) {
  store::NodeInventory inv;
  inv.node = node;
  inv.backend = "fake";
  inv.agent_id = "agent-" + node;
  inv.generation = 1;
  inv.cpu_milli = 64000;
  inv.memory_mib = 512 * 1024;
  for (int i = 0; i < gpus; ++i) {
    store::GpuInventory g;
    g.index = i;
    g.uuid = "GPU-" + node + "-" + std::to_string(i);
    g.product_name = "NVIDIA A100-SXM4-40GB";
    g.model = "A100-40GB";
    g.memory_mib = 40960;
    g.partitions.push_back({g.uuid, "", -1, 0, 40960});
    inv.gpus.push_back(g);
  }
  return inv;
}

}  // namespace tessera::k8s::testing_support
