#pragma once
// Resource fit shared by every policy: can a partition, a GPU or a node host a workload's
// request, and the first slices that do. Pure functions over ClusterState; thread-safe.
//
// How a request maps to a slice:
//  - a MIG instance request (gpu.mig_profile): an empty instance of that profile, exclusively;
//  - a whole-GPU request (milli 1000, any count): that many idle, MIG-disabled GPUs of the node,
//    exclusively (all their memory);
//  - a GPU share (count 1, milli < 1000): room on one partition — the share is of a whole GPU,
//    so on a MIG instance with compute share s it takes ceil(milli / s) of the instance — and
//    gpu.memory_mib of its memory.

#include <optional>
#include <vector>

#include "model/cluster.h"
#include "policy/policy.h"

namespace tessera::policy {

// Partition milli a GPU share needs on `part`; > 1000 means it cannot fit there.
int32_t PartitionMilliFor(int gpu_milli, const model::Partition& part);

// Can `part` (on `gpu`) take one slice of w right now?
bool PartitionFits(const Workload& w, const model::Gpu& gpu, const model::Partition& part);

// The slice w would get on `p`, assuming PartitionFits.
model::Slice SliceFor(const Workload& w, model::PartitionIndex p, const model::Partition& part);

// Node-level feasibility: ready, CPU, memory, model constraints, enough GPU room.
Feasibility NodeFits(const Workload& w, NodeIndex n, const ClusterState& c);

// The first fitting slices on node n (GPUs in index order, partitions in slot order).
std::optional<Placement> FirstFitPlacement(const Workload& w, NodeIndex n, const ClusterState& c);
// The same written into `out`, reusing its slices' buffer: false (and `out` unspecified) if
// node n cannot take w.
bool FirstFitInto(const Workload& w, NodeIndex n, const ClusterState& c, Placement& out);

// A GPU share on GPU g of node n (its first fitting partition), or nullopt if g cannot take it.
std::optional<Placement> PlacementOnGpu(const Workload& w, NodeIndex n, GpuIndex g,
                                        const ClusterState& c);

// Best-fit GPU selection (the reference FGD simulator's default "best" GPU choice): a GPU share
// goes to the fitting GPU with the least free milli (lowest index on ties); whole, multi-GPU,
// MIG-profile and CPU-only requests take FirstFitPlacement.
std::optional<Placement> BestFitPlacement(const Workload& w, NodeIndex n, const ClusterState& c);

}  // namespace tessera::policy
