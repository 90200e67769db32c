#pragma once
// Inventories and placements the store tests share.

#include <string>
#include <vector>

#include "store/records.h"

namespace tessera::store::contract {

inline NodeInventory TwoGpuNode(const std::string& node) {
  // GPU 0: A100-40GB cut 3g.20gb@0 + 2g.10gb@4 (20480 + 10240 MiB); GPU 1: whole A30 (24576).
  NodeInventory inv;
  inv.node = node;
  inv.backend = "fake";
  inv.cpu_milli = 64000;
  inv.memory_mib = 262144;
  GpuInventory g0{.index = 0,
                  .uuid = "GPU-" + node + "-0",
                  .product_name = "NVIDIA A100-SXM4-40GB",
                  .model = "A100-40GB",
                  .memory_mib = 40960,
                  .mig_enabled = true};
  g0.partitions = {{"MIG-" + node + "-0a", "3g.20gb", 2, 0, 20480},
                   {"MIG-" + node + "-0b", "2g.10gb", 3, 4, 10240}};
  GpuInventory g1{.index = 1,
                  .uuid = "GPU-" + node + "-1",
                  .product_name = "NVIDIA A30",
                  .model = "A30-24GB",
                  .memory_mib = 24576};
  g1.partitions = {{"GPU-" + node + "-1", "", -1, 0, 24576}};
  inv.gpus = {g0, g1};
  return inv;
}

inline PlacementRecord Place(const std::string& id, const std::string& node,
                             std::vector<SliceRecord> slices) {
  return PlacementRecord{.workload = id,
                         .node = node,
                         .pod = "pod-" + id,
                         .namespace_ = "default",
                         .slices = std::move(slices)};
}

}  // namespace tessera::store::contract
