#include "policy/round_robin.h"

#include <algorithm>
#include <vector>

#include "policy/min.h"

namespace tessera::policy {
namespace {

// The smallest layout of each model (Min::SmallestLayout), kept: the ring is walked for every
// node a workload is filtered on.
const MigLayout& Smallest(model::GpuModelId id) {
  static const std::vector<MigLayout> layouts = [] {
    std::vector<MigLayout> out;
    for (const model::GpuModel& m : model::AllGpuModels()) out.push_back(Min::SmallestLayout(m));
    return out;
  }();
  return layouts.at(id);
}

// Whether `g` is cut into MIG chunks: MIG-capable, unless its MIG mode is fixed off.
bool Cuttable(GpuIndex g, const ClusterState& c) {
  return model::GetGpuModel(c.gpu(g).model).mig_capable() && c.MayReshapeTo(g, true);
}

}  // namespace

std::vector<OptionInfo> RoundRobinOptionList() {
  return {{"mps_chunks", "4",
           "equal MPS chunks a GPU without MIG is cut into (4: 25% each, Ch. 6.1 and 9.2.1; 1: "
           "the whole GPU)"}};
}

Expected<std::unique_ptr<Policy>> MakeRoundRobin(const PolicyContext&,
                                                 const nlohmann::json& options) {
  int chunks = 4;
  if (auto ok = ReadOption("round-robin", options, "mps_chunks", chunks); !ok) {
    return std::unexpected(ok.error());
  }
  if (chunks < 1 || chunks > 10) {
    return Fail("policy round-robin: option 'mps_chunks' must be within 1..10");
  }
  return std::make_unique<RoundRobin>(chunks);
}

// Chunks of a GPU: its smallest layout's instance count on MIG-capable models, else mps_chunks.
int RoundRobin::ChunksOf(GpuIndex g, const ClusterState& c) const {
  return Cuttable(g, c) ? static_cast<int>(Smallest(c.gpu(g).model).instances.size()) : mps_chunks_;
}

std::optional<RoundRobin::Chunk> RoundRobin::Turn(const Workload& w, const ClusterState& c) const {
  if (offered_ && *offered_ != w.id) {
    ++next_;  // the previous offer was the only one of its turn: the core took it (or dropped it)
    offered_.reset();
  }
  const TurnMemo key{&w, w.id, &c, c.version(), next_, std::nullopt};
  if (memo_.workload == key.workload && memo_.id == key.id && memo_.cluster == key.cluster &&
      memo_.cluster_version == key.cluster_version && memo_.next == key.next) {
    return memo_.turn;
  }
  memo_ = key;
  memo_.turn = TurnOf(w, c);
  return memo_.turn;
}

std::optional<RoundRobin::Chunk> RoundRobin::TurnOf(const Workload& w,
                                                    const ClusterState& c) const {
  if (w.gpu.count != 1) return std::nullopt;  // one chunk per workload
  const int gpus = static_cast<int>(c.gpu_count());
  std::vector<int> first_chunk(gpus + 1, 0);  // the ring's chunks, GPU by GPU in cluster order
  for (int g = 0; g < gpus; ++g) first_chunk[g + 1] = first_chunk[g] + ChunksOf(g, c);
  const int total = first_chunk[gpus];
  if (total == 0) return std::nullopt;
  // From this turn's chunk, the first chunk in ring order the workload can use. Whether it
  // can is a property of the chunk's GPU, so each GPU is looked at once, from the GPU holding
  // this turn's chunk (at that chunk) on; that GPU's earlier chunks, last in the ring, were
  // already judged with it.
  const int turn = static_cast<int>(next_ % static_cast<uint64_t>(total));
  const int g0 = static_cast<int>(std::upper_bound(first_chunk.begin(), first_chunk.end(), turn) -
                                  first_chunk.begin() - 1);
  for (int i = 0; i < gpus; ++i) {
    const GpuIndex g = (g0 + i) % gpus;
    const model::Gpu& gpu = c.gpu(g);
    const model::Node& node = c.node(gpu.node);
    const bool cut = !Cuttable(g, c) || gpu.mig == Smallest(gpu.model);
    if (gpu.available && node.ready && w.gpu.AllowsModel(gpu.model) && (cut || gpu.idle()) &&
        w.cpu_milli <= node.free_cpu_milli() && w.memory_mib <= node.free_memory_mib()) {
      return Chunk{g, i == 0 ? turn - first_chunk[g0] : 0};
    }
  }
  return std::nullopt;
}

Feasibility RoundRobin::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  const std::optional<Chunk> turn = Turn(w, c);
  if (!turn) return Feasibility::No("no chunk can take it");
  return c.gpu(turn->gpu).node == node ? Feasibility::Yes() : Feasibility::No("not its turn");
}

std::optional<Candidate> RoundRobin::Score(const Workload& w, NodeIndex node,
                                           const ClusterState& c) {
  const std::optional<Chunk> turn = Turn(w, c);
  if (!turn || c.gpu(turn->gpu).node != node) return std::nullopt;
  const model::Gpu& gpu = c.gpu(turn->gpu);
  const model::GpuModel& m = model::GetGpuModel(gpu.model);
  const model::PartitionIndex p = ClusterState::PartitionOf(turn->gpu, turn->slot);
  Candidate cand;
  cand.score = 100;
  if (Cuttable(turn->gpu, c) && gpu.mig != Smallest(gpu.model)) {
    // Idle (Turn checked): cut it first; the chunk is then empty.
    const MigLayout& smallest = Smallest(gpu.model);
    cand.reshape = ReshapeTo{turn->gpu, smallest};
    cand.placement = {
        w.id, node, {{p, 1000, m.mig_profiles[smallest.instances[turn->slot].profile].memory_mib}}};
  } else if (!Cuttable(turn->gpu, c)) {
    // One of the GPU's MPS chunks: its members share the chunk's threads and memory equally.
    const model::PartitionIndex whole = ClusterState::PartitionOf(turn->gpu, 0);
    const model::Partition& part = c.partition(whole);
    std::vector<WorkloadId> members;
    for (const model::Client& other : part.clients) {
      auto it = mps_chunk_of_.find(other.workload);
      if (it != mps_chunk_of_.end() && it->second == turn->slot) members.push_back(other.workload);
    }
    const int n = static_cast<int>(members.size()) + 1;
    const int32_t milli = 1000 / mps_chunks_ / n;
    const int64_t memory = part.memory_mib / mps_chunks_ / n;
    cand.placement = {w.id, node, {{whole, milli, memory}}};
    for (WorkloadId other : members) cand.resizes.push_back({other, {{whole, milli, memory}}});
    mps_chunk_of_[w.id] = turn->slot;
  } else {
    const model::Partition& part = c.partition(p);
    const int n = static_cast<int>(part.clients.size()) + 1;
    const int32_t milli = 1000 / n;
    const int64_t memory = part.memory_mib / n;
    cand.placement = {w.id, node, {{p, milli, memory}}};
    for (const model::Client& other : part.clients) {
      const model::PlacedWorkload* pw = c.Find(other.workload);
      std::vector<model::Slice> slices = pw->placement.slices;
      for (model::Slice& s : slices) {
        if (s.partition == p) s = {p, milli, memory};
      }
      cand.resizes.push_back({other.workload, std::move(slices)});
    }
  }
  offered_ = w.id;  // the turn moves on when the next workload is considered
  return cand;
}

std::optional<std::optional<MigLayout>> RoundRobin::Reshape(GpuIndex g, const ClusterState& c) {
  if (!Cuttable(g, c)) return std::nullopt;
  return std::optional<MigLayout>{Smallest(c.gpu(g).model)};
}

}  // namespace tessera::policy
