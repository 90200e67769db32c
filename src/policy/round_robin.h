#pragma once
// round-robin (seed 000, Ch. 9.2.3): the interference-oblivious baseline. Every GPU is cut
// into its smallest chunks — the smallest MIG instances on MIG-capable GPUs (reshaped while
// idle), the whole GPU elsewhere — and workloads go to the chunks in turn, cluster order,
// co-locating through MPS with equal shares: the n-th workload on a chunk gets 1/n of its
// compute and memory and every workload already there is resized to 1/n too (thesis: "two
// applications … 50% MPS limits to each … three … 33%"). Nobody waits; memory that 1/n no
// longer covers makes workloads fail, as the thesis's round-robin errors did.

#include <cstdint>

#include "policy/policy.h"

namespace tessera::policy {

class RoundRobin final : public Policy {
 public:
  std::string_view name() const override { return "round-robin"; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  std::optional<std::optional<MigLayout>> Reshape(GpuIndex idle_gpu,
                                                  const ClusterState& c) override;

 private:
  struct Chunk {
    GpuIndex gpu;
    int slot;
  };
  // The chunk whose turn it is for w (skipping chunks w cannot use), if any.
  std::optional<Chunk> Turn(const Workload& w, const ClusterState& c) const;
  // The ring moves one step once a workload other than the last one offered a chunk is
  // considered: scoring one workload against every node must not move it. Mutable because
  // Filter (const) is where a new workload is first seen.
  mutable uint64_t next_ = 0;
  mutable std::optional<WorkloadId> offered_;
};

}  // namespace tessera::policy
