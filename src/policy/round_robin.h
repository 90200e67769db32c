#pragma once
// round-robin (seed 000, Ch. 9.2.3): the interference-oblivious baseline. Every GPU is cut
// into its smallest chunks — the smallest MIG instances on MIG-capable GPUs (reshaped while
// idle), `mps_chunks` equal MPS shares elsewhere (default 4: the 25% limits Ch. 6.1 and 9.2.1
// call a V100's partitions; 1: the whole GPU) — and workloads go to the chunks in turn, cluster
// order, co-locating through MPS with equal shares: the n-th workload on a chunk gets 1/n of
// its compute and memory and every workload already there is resized to 1/n too (thesis: "two
// applications … 50% MPS limits to each … three … 33%"). Nobody waits; memory that 1/n no
// longer covers makes workloads fail, as the thesis's round-robin errors did.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "policy/policy.h"
#include "policy/registry.h"

namespace tessera::policy {

// Options (`tessera simulate --list-policies`).
std::vector<OptionInfo> RoundRobinOptionList();
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeRoundRobin(const PolicyContext& context,
                                                               const nlohmann::json& options);

class RoundRobin final : public Policy {
 public:
  explicit RoundRobin(int mps_chunks = 4) : mps_chunks_(mps_chunks) {}
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
  std::optional<Chunk> TurnOf(const Workload& w, const ClusterState& c) const;  // Turn, unkept
  int ChunksOf(GpuIndex g, const ClusterState& c) const;
  int mps_chunks_;
  // The MPS chunk each workload on a GPU without MIG was given (entries of workloads gone from
  // the cluster are never read: a chunk's members are looked up from its partition's clients).
  std::unordered_map<WorkloadId, int> mps_chunk_of_;
  // The ring moves one step once a workload other than the last one offered a chunk is
  // considered: scoring one workload against every node must not move it. Mutable because
  // Filter (const) is where a new workload is first seen.
  mutable uint64_t next_ = 0;
  mutable std::optional<WorkloadId> offered_;
  // Turn's last answer: the core asks it for every node while scoring one workload, and it
  // walks every GPU of the cluster; it holds for the same workload, ring position and cluster
  // state (ClusterState::version).
  struct TurnMemo {
    const Workload* workload = nullptr;
    WorkloadId id = 0;
    const ClusterState* cluster = nullptr;
    uint64_t cluster_version = 0;
    uint64_t next = 0;
    std::optional<Chunk> turn;
  };
  mutable TurnMemo memo_;
};

}  // namespace tessera::policy
