#pragma once
// ClusterState: the nodes, GPUs and partitions of a cluster and the workloads placed on them.
// It is the single source of truth every policy reads and the scheduler core writes, in the
// simulator and in Kubernetes alike (DESIGN §1, §2).
//
// Invariants (CheckInvariants() verifies them all; every mutator preserves them or refuses):
//  - per partition: Σ client milli ≤ 1000 over guaranteed clients (a best-effort client's
//    milli is a cap that reserves nothing, Slice::best_effort) and Σ client memory ≤ the
//    partition's memory;
//  - a MIG GPU's partitions are exactly the instances of a layout ValidateLayout accepts;
//    a GPU with MIG disabled has exactly one whole-GPU partition;
//  - per node: Σ CPU and Σ memory of its workloads ≤ capacity;
//  - every placement's slices name partitions that list it as a client, and vice versa; a
//    local slice's GPU is on the placement's node, a remote slice's on another node (seed 002's
//    disaggregated GPUs: the placement's node holds CPU and memory, the GPU's node counts the
//    GPU busy);
//  - a reshaped GPU hosted nothing; an unavailable GPU or a not-ready node accepts nothing;
//  - the incremental indices (free milli/memory per GPU, idle GPUs per node) equal a recount.
// Place/Remove/Reshape either apply completely or return an Error that says why, changing
// nothing. Indices are kept incrementally so that scoring thousands of GPUs costs array reads.
//
// Layout: GPUs of a node are contiguous; partition p of GPU g has index g*kMaxPartitions + slot.
// Not thread-safe: one writer (the scheduler core); readers hold it between cycles.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "model/gpu_model.h"
#include "model/mig.h"
#include "model/placement.h"
#include "model/touch_journal.h"
#include "model/workload.h"

namespace tessera::model {

inline constexpr int kMaxPartitions = 7;  // MIG's maximum instance count

struct Client {  // 24 bytes: one per slice of every placed workload
  WorkloadId workload;
  int32_t milli;
  bool best_effort = false;  // Slice::best_effort
  int64_t memory_mib;
  int32_t reserved_milli() const { return best_effort ? 0 : milli; }
};

struct Partition {
  // The numbers a policy's scoring loop reads come first (one cache line).
  GpuIndex gpu = 0;
  int profile = -1;          // index into the model's mig_profiles; -1 = the whole GPU
  int start = 0;             // first memory slice (MIG)
  int32_t used_milli = 0;    // Σ guaranteed clients' milli
  double compute_share = 1;  // fraction of the GPU's SMs
  int64_t memory_mib = 0;
  int64_t used_memory_mib = 0;
  // Changes whenever the partition's clients, limits or shape change (never 0), drawn from the
  // same counter as Node::version: (partition index, version) names one partition state across
  // a state and its copies. Per-partition caches key on it, so a change to one partition of a
  // node leaves the node's other partitions' entries valid.
  uint64_t version = 0;
  // The version it had when it was cut: its uuid, profile and memory hold while this does.
  uint64_t built = 0;
  std::string uuid;  // "GPU-…" for a whole GPU, "MIG-…" for an instance
  std::vector<Client> clients;

  bool whole() const { return profile < 0; }
  int32_t free_milli() const { return 1000 - used_milli; }
  int64_t free_memory_mib() const { return memory_mib - used_memory_mib; }
  bool empty() const { return clients.empty(); }
};

struct Gpu {
  std::string uuid;
  NodeIndex node = 0;
  int index = 0;  // on its node (nvidia-smi index)
  GpuModelId model = 0;
  std::optional<MigLayout> mig;  // nullopt: MIG disabled, one whole-GPU partition
  bool available = true;         // false while reconfiguring or lost
  int partition_count = 1;
  // Incremental indices.
  int32_t free_milli = 1000;  // Σ partitions' free milli × compute share
  int64_t free_memory_mib = 0;
  int32_t clients = 0;  // workloads with a slice here

  bool idle() const { return clients == 0; }
};

struct GpuSpec {
  GpuModelId model = 0;
  std::string uuid;  // generated from the node name and index when empty
  std::optional<MigLayout> mig;
  std::vector<std::string> partition_uuids;  // MIG instance uuids as discovered; else generated
};

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<GpuSpec> gpus;
  std::map<std::string, std::string> labels;
};

struct Node {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t used_cpu_milli = 0;
  int64_t used_memory_mib = 0;
  GpuIndex first_gpu = 0;
  int gpu_count = 0;
  int idle_gpus = 0;  // available GPUs hosting nothing
  bool ready = true;
  // Changes whenever anything on the node changes (placement, removal, reshape, availability,
  // readiness); never 0. Drawn from a counter a ClusterState shares with its copies, so
  // (node index, version) names one node state across a state and all its copies, however they
  // diverge: policies key per-node caches on it (see ClusterState::ContinueVersionsOf).
  uint64_t version = 0;
  std::map<std::string, std::string> labels;

  int64_t free_cpu_milli() const { return cpu_milli - used_cpu_milli; }
  int64_t free_memory_mib() const { return memory_mib - used_memory_mib; }
};

struct PlacedWorkload {
  Workload workload;
  Placement placement;
};

class ClusterState {
 public:
  // Adds a node with its GPUs; refuses a duplicate name, an invalid MIG layout, or a uuid list
  // that does not match the layout.
  [[nodiscard]] Expected<NodeIndex> AddNode(const NodeSpec& spec);

  [[nodiscard]] Expected<void> Place(const Workload& workload, const Placement& placement);
  [[nodiscard]] Expected<void> Remove(WorkloadId id);
  // Changes the MPS limits (milli, memory) of a placed workload's slices in place — same
  // partitions, same order — as when its limits are rewritten and the MPS client restarts.
  // Refused, changing nothing, if a new total would break a partition's limits.
  [[nodiscard]] Expected<void> Resize(WorkloadId id, const std::vector<Slice>& slices);
  // Cuts an idle GPU into `layout`, or turns MIG off with nullopt. New partitions get uuids
  // derived from the GPU's uuid and their placement (or `partition_uuids`, as discovered).
  [[nodiscard]] Expected<void> Reshape(GpuIndex gpu, const std::optional<MigLayout>& layout,
                                       const std::vector<std::string>& partition_uuids = {});
  void SetGpuAvailable(GpuIndex gpu, bool available);
  void SetNodeReady(NodeIndex node, bool ready);
  // Whether a reshape may turn a GPU's MIG mode on or off. The simulator's clusters may (the
  // thesis cuts whole GPUs into MIG instances and back); a Kubernetes cluster's may not (the
  // node agent never changes MIG mode, which needs a GPU reset), and then Reshape refuses a
  // mode change and the policies do not propose one (MayReshapeTo). A change moves every node's
  // version (what a node may offer changes with it).
  void set_mig_mode_fixed(bool fixed);
  bool mig_mode_fixed() const { return mig_mode_fixed_; }
  // Whether `gpu` may go to MIG on (`mig_on`) or off as far as its mode goes: always while the
  // mode may change, else only to the mode it has.
  bool MayReshapeTo(GpuIndex gpu, bool mig_on) const {
    return !mig_mode_fixed_ || gpus_[gpu].mig.has_value() == mig_on;
  }

  // Node versions are unique among a state and its copies only: two states built separately
  // count from the same start. A state built to replace another under the same readers (the
  // extender's periodic rebuild, whose policy keeps its caches) calls this: it then draws from
  // `predecessor`'s counter, and its nodes get versions that neither state handed out before.
  void ContinueVersionsOf(const ClusterState& predecessor);

  // Verifies every invariant from scratch; the error names the first broken one.
  [[nodiscard]] Expected<void> CheckInvariants() const;

  // Reads.
  int node_count() const { return static_cast<int>(nodes_.size()); }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  const Node& node(NodeIndex n) const { return nodes_[n]; }
  const Gpu& gpu(GpuIndex g) const { return gpus_[g]; }
  const Partition& partition(PartitionIndex p) const { return partitions_[p]; }
  std::span<const Gpu> gpus_of(NodeIndex n) const {
    return {gpus_.data() + nodes_[n].first_gpu, static_cast<size_t>(nodes_[n].gpu_count)};
  }
  static PartitionIndex PartitionOf(GpuIndex g, int slot) { return g * kMaxPartitions + slot; }
  std::span<const Partition> partitions_of(GpuIndex g) const {
    return {partitions_.data() + PartitionOf(g, 0), static_cast<size_t>(gpus_[g].partition_count)};
  }
  // A remote slice of `p` (seed 002) is a network stream between the placement's node and its
  // GPU's node: one (p.node, GPU's node) pair per remote slice, in slice order; none if local.
  std::vector<std::pair<NodeIndex, NodeIndex>> RemoteStreams(const Placement& p) const;
  std::optional<NodeIndex> FindNode(std::string_view name) const;
  // The partition with this uuid (the lowest index if a uuid repeats); a hash lookup.
  std::optional<PartitionIndex> FindPartition(std::string_view uuid) const;
  const PlacedWorkload* Find(WorkloadId id) const;
  const std::unordered_map<WorkloadId, PlacedWorkload>& placed() const { return placed_; }
  size_t placed_count() const { return placed_.size(); }
  // Changes whenever anything in the cluster changes (the newest node version): equal values
  // mean the same state, so a caller may keep what it concluded from it.
  uint64_t version() const { return version_; }
  // The nodes touched since a mark (TouchJournal's contract): a reader that kept something per
  // node under its version revisits only these.
  TouchJournal::Mark touch_mark() const { return journal_.mark(); }
  bool NodesTouchedSince(TouchJournal::Mark m, std::vector<NodeIndex>& out) const {
    return journal_.Since(m, out);
  }
  // The container environment of a placement (uuids, MPS limits).
  Environment EnvironmentOf(const Placement& placement) const;

  // Whole-cluster totals kept incrementally.
  int64_t total_gpu_milli() const { return int64_t{1000} * gpu_count(); }
  // Allocated GPU compute in GPU-milli: Σ slice milli × its partition's share of the GPU.
  double allocated_gpu_milli() const { return allocated_gpu_milli_; }

 private:
  void BuildPartitions(GpuIndex g, const std::vector<std::string>& uuids);
  void RefreshGpu(GpuIndex g);
  void Touch(NodeIndex n);
  void TouchPartition(PartitionIndex p);
  uint64_t NextVersion();
  // The (uuid, p) entry of partition_by_uuid_, or its end().
  std::unordered_multimap<std::string, PartitionIndex>::const_iterator IndexEntry(
      const std::string& uuid, PartitionIndex p) const;
  Expected<void> CheckPlacement(const Workload& w, const Placement& p) const;

  std::vector<Node> nodes_;
  std::vector<Gpu> gpus_;
  std::vector<Partition> partitions_;  // kMaxPartitions per GPU; unused slots stay empty
  std::unordered_map<WorkloadId, PlacedWorkload> placed_;
  std::unordered_map<std::string, NodeIndex> node_by_name_;
  // Every in-use partition (slot < partition_count) by uuid; kept by BuildPartitions.
  std::unordered_multimap<std::string, PartitionIndex> partition_by_uuid_;
  double allocated_gpu_milli_ = 0;
  bool mig_mode_fixed_ = false;
  uint64_t version_ = 0;
  TouchJournal journal_;
  // The source of node versions, shared with copies (Node::version); atomic because copies may
  // live on different threads.
  std::shared_ptr<std::atomic<uint64_t>> versions_ = std::make_shared<std::atomic<uint64_t>>(0);
};

// A node of `gpus` identical GPUs, each cut into `mig` when given.
NodeSpec UniformNode(std::string name, GpuModelId model, int gpus, int64_t cpu_milli,
                     int64_t memory_mib, const std::optional<MigLayout>& mig = std::nullopt);

// Deterministic uuid text ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx") from a seed string.
std::string MakeUuid(std::string_view prefix, std::string_view seed);

}  // namespace tessera::model
