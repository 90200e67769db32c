#pragma once
// The records the Store keeps (DESIGN §6; thesis Ch. 8.1 keeps "GPU UUIDs, assigned pods to GPU
// partitions" in Redis): a node's GPU inventory as its agent discovered it, and a workload's
// placement in terms the agent and the container understand (partition uuids, not indices).
// Plain values; their JSON form (nlohmann, keys sorted, so equal records serialise to equal
// bytes) is what both Store implementations keep.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "model/cluster.h"

namespace tessera::store {

struct PartitionInventory {
  std::string uuid;     // "MIG-…" for an instance; the GPU's "GPU-…" uuid for a whole GPU
  std::string profile;  // "1g.5gb"; empty for the whole GPU
  int gi_id = -1;       // NVML GPU-instance id (dcgm-exporter's GPU_I_ID); -1 for a whole GPU
  int start = 0;        // first memory slice of a MIG instance
  int64_t memory_mib = 0;
  bool operator==(const PartitionInventory&) const = default;
};

struct GpuInventory {
  int index = 0;  // nvidia-smi index on the node
  std::string uuid;
  std::string product_name;  // as NVML names it: "NVIDIA A100-SXM4-40GB"
  std::string model;         // catalog name ("A100-40GB"); empty when the catalog lacks it
  int64_t memory_mib = 0;
  bool mig_enabled = false;
  bool lost = false;       // NVML reported it lost / it disappeared; its partitions accept nothing
  bool mps_stuck = false;  // the agent judges its MPS server stuck (agent/mps_detector.h)
  std::vector<PartitionInventory> partitions;  // one whole-GPU entry when MIG is off
  bool operator==(const GpuInventory&) const = default;
};

struct NodeInventory {
  std::string node;
  std::string backend;     // "nvml" | "fake"
  std::string agent_id;    // changes on every agent start
  int64_t generation = 0;  // bumped by the agent on every change it publishes
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<GpuInventory> gpus;
  bool operator==(const NodeInventory&) const = default;
};

// One GPU slice of a placement; partitions are named by uuid.
struct SliceRecord {
  std::string partition_uuid;
  int32_t milli = 1000;      // share of the partition's compute (MPS active threads × 10)
  int64_t memory_mib = 0;    // memory reserved on the partition
  bool best_effort = false;  // model::Slice::best_effort (muxflow's offline jobs)
  // What the partition's compute accounting holds for it: a best-effort slice (it runs in what
  // the guaranteed clients leave) reserves none, as model::Slice::reserved_milli.
  int32_t reserved_milli() const { return best_effort ? 0 : milli; }
  // model::Slice::remote (seed 002's disaggregated GPUs): the node whose GPU this is, another
  // than the placement's; empty for a local slice.
  std::string remote_node;
  bool operator==(const SliceRecord&) const = default;
};

struct PlacementRecord {
  std::string workload;  // the key: a workload id or pod uid
  std::string node;
  std::string pod;         // for per-pod metric labels; may be empty
  std::string namespace_;  // "namespace" in JSON
  std::vector<SliceRecord> slices;
  bool operator==(const PlacementRecord&) const = default;
};

// A partition's capacity and what placements hold of it, as the Store keeps them.
struct PartitionUsage {
  std::string uuid;
  std::string node;
  int64_t memory_mib = 0;
  int32_t used_milli = 0;
  int64_t used_memory_mib = 0;
  bool present = true;  // false once its GPU was lost or its MIG instance vanished
  bool operator==(const PartitionUsage&) const = default;
};

std::string ToJson(const NodeInventory& inventory);
std::string ToJson(const PlacementRecord& placement);
// The error names `what` (a key or file) and what is wrong.
[[nodiscard]] Expected<NodeInventory> InventoryFromJson(std::string_view json,
                                                        std::string_view what);
[[nodiscard]] Expected<PlacementRecord> PlacementFromJson(std::string_view json,
                                                          std::string_view what);

// Shape checks every Store applies before writing: a name, slices with 1..1000 milli and
// non-negative memory on distinct partitions.
[[nodiscard]] Expected<void> Validate(const PlacementRecord& placement);
[[nodiscard]] Expected<void> Validate(const NodeInventory& inventory);

// The NodeSpec a ClusterState accepts for this inventory: catalog models, MIG layouts rebuilt
// from the instances' profiles and starts, the discovered uuids. Lost GPUs are left out.
[[nodiscard]] Expected<model::NodeSpec> ToNodeSpec(const NodeInventory& inventory);

}  // namespace tessera::store
