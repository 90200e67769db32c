#include "policy/round_robin.h"

#include "policy/min.h"

namespace tessera::policy {
namespace {

// Chunks of a GPU: its smallest layout's instance count on MIG-capable models, else one.
// Whether `g` is cut into MIG chunks: MIG-capable, unless its MIG mode is fixed off.
bool Cuttable(GpuIndex g, const ClusterState& c) {
  return model::GetGpuModel(c.gpu(g).model).mig_capable() && c.MayReshapeTo(g, true);
}

int ChunksOf(GpuIndex g, const ClusterState& c) {
  return Cuttable(g, c)
             ? static_cast<int>(
                   Min::SmallestLayout(model::GetGpuModel(c.gpu(g).model)).instances.size())
             : 1;
}

}  // namespace

std::optional<RoundRobin::Chunk> RoundRobin::Turn(const Workload& w, const ClusterState& c) const {
  if (offered_ && *offered_ != w.id) {
    ++next_;  // the previous offer was the only one of its turn: the core took it (or dropped it)
    offered_.reset();
  }
  if (w.gpu.count != 1) return std::nullopt;  // one chunk per workload
  int total = 0;
  for (GpuIndex g = 0; g < c.gpu_count(); ++g) total += ChunksOf(g, c);
  if (total == 0) return std::nullopt;
  // Walk the ring from this turn's chunk to the first one the workload can use.
  for (int step = 0; step < total; ++step) {
    int k = static_cast<int>((next_ + step) % total);
    for (GpuIndex g = 0; g < c.gpu_count(); ++g) {
      const model::Gpu& gpu = c.gpu(g);
      const int chunks = ChunksOf(g, c);
      if (k >= chunks) {
        k -= chunks;
        continue;
      }
      const model::Node& node = c.node(gpu.node);
      const bool cut =
          !Cuttable(g, c) || gpu.mig == Min::SmallestLayout(model::GetGpuModel(gpu.model));
      if (gpu.available && node.ready && w.gpu.AllowsModel(gpu.model) && (cut || gpu.idle()) &&
          w.cpu_milli <= node.free_cpu_milli() && w.memory_mib <= node.free_memory_mib()) {
        return Chunk{g, k};
      }
      break;
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
  if (Cuttable(turn->gpu, c) && gpu.mig != Min::SmallestLayout(m)) {
    // Idle (Turn checked): cut it first; the chunk is then empty.
    const MigLayout smallest = Min::SmallestLayout(m);
    cand.reshape = ReshapeTo{turn->gpu, smallest};
    cand.placement = {
        w.id, node, {{p, 1000, m.mig_profiles[smallest.instances[turn->slot].profile].memory_mib}}};
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
  return std::optional<MigLayout>{Min::SmallestLayout(model::GetGpuModel(c.gpu(g).model))};
}

}  // namespace tessera::policy
