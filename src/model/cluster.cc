#include "model/cluster.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace tessera::model {
namespace {

// FNV-1a, 64 bits.
uint64_t Hash(std::string_view s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

int32_t RoundMilli(double x) { return static_cast<int32_t>(std::lround(x)); }

}  // namespace

std::string MakeUuid(std::string_view prefix, std::string_view seed) {
  const uint64_t a = Hash(seed), b = Hash(seed, a ^ 0x9e3779b97f4a7c15ULL);
  return fmt::format("{}-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", prefix, a >> 32, (a >> 16) & 0xffff,
                     a & 0xffff, b >> 48, b & 0xffffffffffffULL);
}

NodeSpec UniformNode(std::string name, GpuModelId model, int gpus, int64_t cpu_milli,
                     int64_t memory_mib, const std::optional<MigLayout>& mig) {
  NodeSpec spec{std::move(name), cpu_milli, memory_mib, {}, {}};
  for (int i = 0; i < gpus; ++i) spec.gpus.push_back(GpuSpec{model, "", mig, {}});
  return spec;
}

Expected<NodeIndex> ClusterState::AddNode(const NodeSpec& spec) {
  if (spec.name.empty()) return Fail("node without a name");
  if (node_by_name_.contains(spec.name)) return Fail("node {}: added twice", spec.name);
  if (spec.cpu_milli < 0 || spec.memory_mib < 0)
    return Fail("node {}: negative capacity", spec.name);
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    const GpuSpec& g = spec.gpus[i];
    if (g.model < 0 || static_cast<size_t>(g.model) >= AllGpuModels().size()) {
      return Fail("node {}: GPU {} has an unknown model", spec.name, i);
    }
    if (g.mig) {
      MigLayout layout = *g.mig;
      Normalize(layout);
      if (auto ok = ValidateLayout(GetGpuModel(g.model), layout); !ok) {
        return Fail("node {}: GPU {}: {}", spec.name, i, ok.error().message);
      }
      if (!g.partition_uuids.empty() && g.partition_uuids.size() != layout.instances.size()) {
        return Fail("node {}: GPU {}: {} uuids for {} MIG instances", spec.name, i,
                    g.partition_uuids.size(), layout.instances.size());
      }
    }
  }

  const NodeIndex n = static_cast<NodeIndex>(nodes_.size());
  Node node;
  node.name = spec.name;
  node.cpu_milli = spec.cpu_milli;
  node.memory_mib = spec.memory_mib;
  node.first_gpu = static_cast<GpuIndex>(gpus_.size());
  node.gpu_count = static_cast<int>(spec.gpus.size());
  node.labels = spec.labels;
  nodes_.push_back(std::move(node));
  node_by_name_.emplace(spec.name, n);
  Touch(n);
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    const GpuSpec& s = spec.gpus[i];
    Gpu gpu;
    gpu.uuid = s.uuid.empty() ? MakeUuid("GPU", fmt::format("{}/{}", spec.name, i)) : s.uuid;
    gpu.node = n;
    gpu.index = static_cast<int>(i);
    gpu.model = s.model;
    gpu.mig = s.mig;
    if (gpu.mig) Normalize(*gpu.mig);
    const GpuIndex g = static_cast<GpuIndex>(gpus_.size());
    gpus_.push_back(std::move(gpu));
    partitions_.resize(partitions_.size() + kMaxPartitions);
    BuildPartitions(g, s.mig ? s.partition_uuids : std::vector<std::string>{});
    ++nodes_[n].idle_gpus;
  }
  return n;
}

void ClusterState::BuildPartitions(GpuIndex g, const std::vector<std::string>& uuids) {
  Gpu& gpu = gpus_[g];
  const GpuModel& model = GetGpuModel(gpu.model);
  for (int slot = 0; slot < gpu.partition_count; ++slot) {
    const PartitionIndex p = PartitionOf(g, slot);
    // A GPU just added has no entries yet: its one default slot finds none to erase.
    if (auto it = IndexEntry(partitions_[p].uuid, p); it != partition_by_uuid_.end()) {
      partition_by_uuid_.erase(it);
    }
  }
  for (int slot = 0; slot < kMaxPartitions; ++slot) {
    partitions_[PartitionOf(g, slot)] = Partition{};
    TouchPartition(PartitionOf(g, slot));
  }
  if (!gpu.mig) {
    Partition& p = partitions_[PartitionOf(g, 0)];
    p.uuid = gpu.uuid;
    p.gpu = g;
    p.memory_mib = model.memory_mib;
    gpu.partition_count = 1;
  } else {
    const auto& instances = gpu.mig->instances;
    for (size_t slot = 0; slot < instances.size(); ++slot) {
      const MigProfile& prof = model.mig_profiles[instances[slot].profile];
      Partition& p = partitions_[PartitionOf(g, static_cast<int>(slot))];
      p.uuid = slot < uuids.size() ? uuids[slot]
                                   : MakeUuid("MIG", fmt::format("{}/{}@{}", gpu.uuid, prof.name,
                                                                 instances[slot].start));
      p.gpu = g;
      p.profile = instances[slot].profile;
      p.start = instances[slot].start;
      p.compute_share = static_cast<double>(prof.compute_slices) / model.mig_compute_slices;
      p.memory_mib = prof.memory_mib;
    }
    gpu.partition_count = static_cast<int>(instances.size());
  }
  for (int slot = 0; slot < gpu.partition_count; ++slot) {
    partition_by_uuid_.emplace(partitions_[PartitionOf(g, slot)].uuid, PartitionOf(g, slot));
  }
  for (int slot = 0; slot < kMaxPartitions; ++slot) {
    Partition& p = partitions_[PartitionOf(g, slot)];
    p.built = p.version;
  }
  RefreshGpu(g);
}

void ClusterState::RefreshGpu(GpuIndex g) {
  Gpu& gpu = gpus_[g];
  double free = 0;
  int64_t memory = 0;
  for (const Partition& p : partitions_of(g)) {
    free += p.free_milli() * p.compute_share;
    memory += p.free_memory_mib();
  }
  gpu.free_milli = RoundMilli(free);
  gpu.free_memory_mib = memory;
}

Expected<void> ClusterState::CheckPlacement(const Workload& w, const Placement& p) const {
  if (auto ok = w.Validate(); !ok) return ok;
  if (placed_.contains(w.id)) return Fail("workload {} is already placed", w.id);
  if (p.workload != w.id) return Fail("placement is for workload {}, not {}", p.workload, w.id);
  if (p.node < 0 || p.node >= node_count()) return Fail("workload {}: no node #{}", w.id, p.node);
  const Node& node = nodes_[p.node];
  if (!node.ready) return Fail("workload {}: node {} is not ready", w.id, node.name);
  if (w.cpu_milli > node.free_cpu_milli() || w.memory_mib > node.free_memory_mib()) {
    return Fail("workload {}: node {} lacks CPU or memory", w.id, node.name);
  }
  if (static_cast<int>(p.slices.size()) != w.gpu.count) {
    return Fail("workload {}: {} slices for {} GPUs", w.id, p.slices.size(), w.gpu.count);
  }
  for (size_t i = 0; i < p.slices.size(); ++i) {
    const Slice& s = p.slices[i];
    if (s.partition < 0 || s.partition >= static_cast<PartitionIndex>(partitions_.size())) {
      return Fail("workload {}: no partition #{}", w.id, s.partition);
    }
    const GpuIndex g = s.partition / kMaxPartitions;
    const Gpu& gpu = gpus_[g];
    if (!s.remote && gpu.node != p.node) {
      return Fail("workload {}: GPU {} is not on node {}", w.id, gpu.uuid, node.name);
    }
    if (s.remote && gpu.node == p.node) {
      return Fail("workload {}: GPU {} is on its own node {}, not remote", w.id, gpu.uuid,
                  node.name);
    }
    if (s.remote && !nodes_[gpu.node].ready) {
      return Fail("workload {}: node {} of remote GPU {} is not ready", w.id, nodes_[gpu.node].name,
                  gpu.uuid);
    }
    if (s.partition % kMaxPartitions >= gpu.partition_count) {
      return Fail("workload {}: GPU {} has no partition slot {}", w.id, gpu.uuid,
                  s.partition % kMaxPartitions);
    }
    for (size_t j = 0; j < i; ++j) {
      if (p.slices[j].partition / kMaxPartitions == g) {
        return Fail("workload {}: two slices on GPU {}", w.id, gpu.uuid);
      }
    }
    if (!gpu.available) return Fail("workload {}: GPU {} is unavailable", w.id, gpu.uuid);
    if (!w.gpu.AllowsModel(gpu.model)) {
      return Fail("workload {}: GPU model {} is not allowed", w.id, GetGpuModel(gpu.model).name);
    }
    const Partition& part = partitions_[s.partition];
    if (!w.gpu.mig_profile.empty() &&
        (part.whole() ||
         GetGpuModel(gpu.model).mig_profiles[part.profile].name != w.gpu.mig_profile)) {
      return Fail("workload {}: partition {} is not a {} instance", w.id, part.uuid,
                  w.gpu.mig_profile);
    }
    if (s.milli < 1 || s.milli > 1000) {
      return Fail("workload {}: slice share {} milli is outside 1..1000", w.id, s.milli);
    }
    if (s.memory_mib < 0) return Fail("workload {}: negative slice memory", w.id);
    if (s.reserved_milli() > part.free_milli()) {
      return Fail("workload {}: partition {} has {} milli free, {} asked", w.id, part.uuid,
                  part.free_milli(), s.milli);
    }
    if (s.memory_mib > part.free_memory_mib()) {
      return Fail("workload {}: partition {} has {} MiB free, {} asked", w.id, part.uuid,
                  part.free_memory_mib(), s.memory_mib);
    }
  }
  return {};
}

Expected<void> ClusterState::Place(const Workload& w, const Placement& p) {
  if (auto ok = CheckPlacement(w, p); !ok) return ok;
  Node& node = nodes_[p.node];
  node.used_cpu_milli += w.cpu_milli;
  node.used_memory_mib += w.memory_mib;
  for (const Slice& s : p.slices) {
    Partition& part = partitions_[s.partition];
    part.clients.push_back({.workload = w.id,
                            .milli = s.milli,
                            .best_effort = s.best_effort,
                            .memory_mib = s.memory_mib});
    part.used_milli += s.reserved_milli();
    part.used_memory_mib += s.memory_mib;
    allocated_gpu_milli_ += s.reserved_milli() * part.compute_share;
    TouchPartition(s.partition);
    Gpu& gpu = gpus_[part.gpu];
    if (gpu.clients++ == 0) --nodes_[gpu.node].idle_gpus;
    RefreshGpu(part.gpu);
    if (s.remote) Touch(gpu.node);
  }
  placed_.emplace(w.id, PlacedWorkload{w, p});
  Touch(p.node);
  return {};
}

Expected<void> ClusterState::Remove(WorkloadId id) {
  auto it = placed_.find(id);
  if (it == placed_.end()) return Fail("workload {} is not placed", id);
  const PlacedWorkload& pw = it->second;
  Node& node = nodes_[pw.placement.node];
  node.used_cpu_milli -= pw.workload.cpu_milli;
  node.used_memory_mib -= pw.workload.memory_mib;
  for (const Slice& s : pw.placement.slices) {
    Partition& part = partitions_[s.partition];
    auto c = std::find_if(part.clients.begin(), part.clients.end(),
                          [id](const Client& x) { return x.workload == id; });
    TESSERA_CHECK(c != part.clients.end());
    part.clients.erase(c);
    part.used_milli -= s.reserved_milli();
    part.used_memory_mib -= s.memory_mib;
    allocated_gpu_milli_ -= s.reserved_milli() * part.compute_share;
    TouchPartition(s.partition);
    Gpu& gpu = gpus_[part.gpu];
    if (--gpu.clients == 0 && gpu.available) ++nodes_[gpu.node].idle_gpus;
    RefreshGpu(part.gpu);
    if (s.remote) Touch(gpu.node);
  }
  Touch(pw.placement.node);
  placed_.erase(it);
  if (placed_.empty()) allocated_gpu_milli_ = 0;  // no drift from floating-point sums
  return {};
}

Expected<void> ClusterState::Resize(WorkloadId id, const std::vector<Slice>& slices) {
  auto it = placed_.find(id);
  if (it == placed_.end()) return Fail("workload {} is not placed", id);
  std::vector<Slice>& old = it->second.placement.slices;
  if (slices.size() != old.size()) {
    return Fail("workload {}: resize gives {} slices for {}", id, slices.size(), old.size());
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    if (s.partition != old[i].partition) {
      return Fail("workload {}: a resize cannot move a slice to another partition", id);
    }
    if (s.best_effort != old[i].best_effort) {
      return Fail("workload {}: a resize cannot make a slice best effort or guaranteed", id);
    }
    if (s.remote != old[i].remote) {
      return Fail("workload {}: a resize cannot make a slice remote or local", id);
    }
    if (s.milli < 1 || s.milli > 1000 || s.memory_mib < 0) {
      return Fail("workload {}: slice share {} milli / {} MiB is out of range", id, s.milli,
                  s.memory_mib);
    }
    const Partition& part = partitions_[s.partition];
    if (part.used_milli - old[i].reserved_milli() + s.reserved_milli() > 1000 ||
        part.used_memory_mib - old[i].memory_mib + s.memory_mib > part.memory_mib) {
      return Fail("workload {}: partition {} cannot take {} milli / {} MiB", id, part.uuid, s.milli,
                  s.memory_mib);
    }
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    Partition& part = partitions_[slices[i].partition];
    auto c = std::find_if(part.clients.begin(), part.clients.end(),
                          [id](const Client& x) { return x.workload == id; });
    TESSERA_CHECK(c != part.clients.end());
    part.used_milli += slices[i].reserved_milli() - c->reserved_milli();
    part.used_memory_mib += slices[i].memory_mib - c->memory_mib;
    allocated_gpu_milli_ += (slices[i].reserved_milli() - c->reserved_milli()) * part.compute_share;
    c->milli = slices[i].milli;
    c->memory_mib = slices[i].memory_mib;
    TouchPartition(slices[i].partition);
    RefreshGpu(part.gpu);
    if (slices[i].remote) Touch(gpus_[part.gpu].node);
  }
  old = slices;
  Touch(it->second.placement.node);  // per-node caches (scores, members) must see new limits
  return {};
}

Expected<void> ClusterState::Reshape(GpuIndex g, const std::optional<MigLayout>& layout,
                                     const std::vector<std::string>& partition_uuids) {
  if (g < 0 || g >= gpu_count()) return Fail("no GPU #{}", g);
  Gpu& gpu = gpus_[g];
  const GpuModel& model = GetGpuModel(gpu.model);
  if (!gpu.idle()) {
    return Fail("GPU {} hosts {} workload(s); only an idle GPU can be reshaped", gpu.uuid,
                gpu.clients);
  }
  if (!MayReshapeTo(g, layout.has_value())) {
    return Fail("GPU {}: its MIG mode is fixed (MIG {}); a reshape cannot turn it {}", gpu.uuid,
                gpu.mig ? "on" : "off", gpu.mig ? "off" : "on");
  }
  std::optional<MigLayout> normalized = layout;
  if (normalized) {
    Normalize(*normalized);
    if (auto ok = ValidateLayout(model, *normalized); !ok) {
      return Fail("GPU {}: {}", gpu.uuid, ok.error().message);
    }
    if (!partition_uuids.empty() && partition_uuids.size() != normalized->instances.size()) {
      return Fail("GPU {}: {} uuids for {} MIG instances", gpu.uuid, partition_uuids.size(),
                  normalized->instances.size());
    }
  }
  gpu.mig = std::move(normalized);
  BuildPartitions(g, partition_uuids);
  Touch(gpu.node);
  return {};
}

void ClusterState::SetGpuAvailable(GpuIndex g, bool available) {
  Gpu& gpu = gpus_[g];
  if (gpu.available == available) return;
  gpu.available = available;
  if (gpu.idle()) nodes_[gpu.node].idle_gpus += available ? 1 : -1;
  Touch(gpu.node);
}

void ClusterState::SetNodeReady(NodeIndex n, bool ready) {
  nodes_[n].ready = ready;
  Touch(n);
}

uint64_t ClusterState::NextVersion() {
  // A moved-from state has no counter; if it is reused, it starts one of its own.
  if (!versions_) versions_ = std::make_shared<std::atomic<uint64_t>>(0);
  return versions_->fetch_add(1, std::memory_order_relaxed) + 1;
}

void ClusterState::set_mig_mode_fixed(bool fixed) {
  if (fixed == mig_mode_fixed_) return;
  mig_mode_fixed_ = fixed;
  for (NodeIndex n = 0; n < node_count(); ++n) Touch(n);
}

void ClusterState::Touch(NodeIndex n) {
  nodes_[n].version = NextVersion();
  version_ = nodes_[n].version;
  journal_.Add(n);
}

void ClusterState::TouchPartition(PartitionIndex p) { partitions_[p].version = NextVersion(); }

void ClusterState::ContinueVersionsOf(const ClusterState& predecessor) {
  versions_ = predecessor.versions_;
  for (NodeIndex n = 0; n < node_count(); ++n) Touch(n);
  // Nothing cached against the predecessor's partitions may hold for these.
  for (Partition& p : partitions_) {
    p.version = NextVersion();
    p.built = p.version;
  }
}

std::optional<NodeIndex> ClusterState::FindNode(std::string_view name) const {
  auto it = node_by_name_.find(std::string(name));
  if (it == node_by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<PartitionIndex> ClusterState::FindPartition(std::string_view uuid) const {
  const auto [first, last] = partition_by_uuid_.equal_range(std::string(uuid));
  std::optional<PartitionIndex> found;
  for (auto it = first; it != last; ++it) {
    if (!found || it->second < *found) found = it->second;
  }
  return found;
}

std::unordered_multimap<std::string, PartitionIndex>::const_iterator ClusterState::IndexEntry(
    const std::string& uuid, PartitionIndex p) const {
  const auto [first, last] = partition_by_uuid_.equal_range(uuid);
  const auto it = std::find_if(first, last, [p](const auto& entry) { return entry.second == p; });
  return it == last ? partition_by_uuid_.end() : it;
}

const PlacedWorkload* ClusterState::Find(WorkloadId id) const {
  auto it = placed_.find(id);
  return it == placed_.end() ? nullptr : &it->second;
}

namespace {

// What CheckInvariants recounts from scratch, to compare with what ClusterState keeps.
struct Recount {
  explicit Recount(size_t nodes) : node_cpu(nodes, 0), node_mem(nodes, 0), node_idle(nodes, 0) {}
  std::unordered_map<WorkloadId, int> client_slices;  // client entries per workload
  double allocated = 0;                               // Σ reserved milli × compute share
  std::vector<int64_t> node_cpu, node_mem;            // Σ placed workloads' CPU and memory
  std::vector<int> node_idle;                         // available GPUs hosting nothing
};

// One GPU's partitions summed, to compare with its incremental indices.
struct GpuRecount {
  int clients = 0;
  double free = 0;
  int64_t free_memory = 0;
};

// A MIG GPU's partitions are its valid layout's instances; a MIG-off GPU has one partition.
Expected<void> CheckGpuLayout(const Gpu& gpu) {
  const GpuModel& model = GetGpuModel(gpu.model);
  if (gpu.mig) {
    if (auto ok = ValidateLayout(model, *gpu.mig); !ok) {
      return Fail("GPU {}: invalid layout: {}", gpu.uuid, ok.error().message);
    }
    if (gpu.partition_count != static_cast<int>(gpu.mig->instances.size())) {
      return Fail("GPU {}: {} partitions for {} instances", gpu.uuid, gpu.partition_count,
                  gpu.mig->instances.size());
    }
  } else if (gpu.partition_count != 1) {
    return Fail("GPU {}: MIG off but {} partitions", gpu.uuid, gpu.partition_count);
  }
  return {};
}

// GPU g's in-use partitions: each matches its layout instance, its clients fit it and add up to
// its used counters. Sums the GPU's totals and tallies the clients into `recount`.
Expected<GpuRecount> CheckPartitionsOf(const ClusterState& state, GpuIndex g, Recount& recount) {
  const Gpu& gpu = state.gpu(g);
  GpuRecount sum;
  for (int slot = 0; slot < gpu.partition_count; ++slot) {
    const Partition& p = state.partition(ClusterState::PartitionOf(g, slot));
    if (gpu.mig && (p.profile != gpu.mig->instances[slot].profile ||
                    p.start != gpu.mig->instances[slot].start)) {
      return Fail("GPU {}: partition {} does not match its layout", gpu.uuid, slot);
    }
    int32_t milli = 0;
    int64_t memory = 0;
    for (const Client& c : p.clients) {
      if (c.milli < 1 || c.milli > 1000) {
        return Fail("partition {}: client {} holds {} milli", p.uuid, c.workload, c.milli);
      }
      milli += c.reserved_milli();
      memory += c.memory_mib;
      ++recount.client_slices[c.workload];
      recount.allocated += c.reserved_milli() * p.compute_share;
    }
    if (milli != p.used_milli || memory != p.used_memory_mib) {
      return Fail("partition {}: used counters drifted", p.uuid);
    }
    if (milli > 1000) return Fail("partition {}: MPS shares add up to {} milli", p.uuid, milli);
    if (memory > p.memory_mib) {
      return Fail("partition {}: {} MiB reserved of {}", p.uuid, memory, p.memory_mib);
    }
    sum.clients += static_cast<int>(p.clients.size());
    sum.free += p.free_milli() * p.compute_share;
    sum.free_memory += p.free_memory_mib();
  }
  return sum;
}

// GPU g's unused slots are empty and its incremental indices equal `sum`; counts it idle.
Expected<void> CheckGpuIndex(const ClusterState& state, GpuIndex g, const GpuRecount& sum,
                             Recount& recount) {
  const Gpu& gpu = state.gpu(g);
  for (int slot = gpu.partition_count; slot < kMaxPartitions; ++slot) {
    if (!state.partition(ClusterState::PartitionOf(g, slot)).clients.empty()) {
      return Fail("GPU {}: clients on unused slot {}", gpu.uuid, slot);
    }
  }
  if (sum.clients != gpu.clients || RoundMilli(sum.free) != gpu.free_milli ||
      sum.free_memory != gpu.free_memory_mib) {
    return Fail("GPU {}: index drifted", gpu.uuid);
  }
  if (gpu.idle() && gpu.available) ++recount.node_idle[gpu.node];
  return {};
}

// Every placement's slices are listed by their partitions, local or remote as their GPU's node
// says, and every client entry belongs to a placement; tallies CPU and memory per node.
Expected<void> CheckPlacements(const ClusterState& state, Recount& recount) {
  for (const auto& [id, pw] : state.placed()) {
    const Placement& p = pw.placement;
    if (recount.client_slices[id] != static_cast<int>(p.slices.size())) {
      return Fail("workload {}: {} slices but {} client entries", id, p.slices.size(),
                  recount.client_slices[id]);
    }
    for (const Slice& s : p.slices) {
      const Partition& part = state.partition(s.partition);
      if ((state.gpu(part.gpu).node != p.node) != s.remote) {
        return Fail("workload {}: a {} slice on GPU {} of node {}", id,
                    s.remote ? "remote" : "local", state.gpu(part.gpu).uuid,
                    state.node(state.gpu(part.gpu).node).name);
      }
      if (std::none_of(part.clients.begin(), part.clients.end(), [&](const Client& c) {
            return c.workload == id && c.milli == s.milli && c.memory_mib == s.memory_mib &&
                   c.best_effort == s.best_effort;
          })) {
        return Fail("workload {}: partition {} does not list it", id, part.uuid);
      }
    }
    recount.node_cpu[p.node] += pw.workload.cpu_milli;
    recount.node_mem[p.node] += pw.workload.memory_mib;
    recount.client_slices.erase(id);
  }
  if (!recount.client_slices.empty()) {
    return Fail("workload {} holds a slice but is not placed",
                recount.client_slices.begin()->first);
  }
  return {};
}

// Every node's CPU/memory counters and idle GPU count equal the recount, within capacity.
Expected<void> CheckNodes(const ClusterState& state, const Recount& recount) {
  for (NodeIndex n = 0; n < state.node_count(); ++n) {
    const Node& node = state.node(n);
    if (recount.node_cpu[n] != node.used_cpu_milli || recount.node_mem[n] != node.used_memory_mib) {
      return Fail("node {}: CPU/memory counters drifted", node.name);
    }
    if (node.used_cpu_milli > node.cpu_milli || node.used_memory_mib > node.memory_mib) {
      return Fail("node {}: over capacity", node.name);
    }
    if (recount.node_idle[n] != node.idle_gpus) {
      return Fail("node {}: idle GPU count drifted", node.name);
    }
  }
  return {};
}

}  // namespace

Expected<void> ClusterState::CheckInvariants() const {
  Recount recount(nodes_.size());
  size_t in_use = 0;  // partitions, each of which must be in the uuid index
  for (GpuIndex g = 0; g < gpu_count(); ++g) {
    if (auto ok = CheckGpuLayout(gpus_[g]); !ok) return ok;
    const Expected<GpuRecount> sum = CheckPartitionsOf(*this, g, recount);
    if (!sum) return std::unexpected(sum.error());
    for (int slot = 0; slot < gpus_[g].partition_count; ++slot) {
      const PartitionIndex p = PartitionOf(g, slot);
      if (IndexEntry(partitions_[p].uuid, p) == partition_by_uuid_.end()) {
        return Fail("GPU {}: partition {} is missing from the uuid index", gpus_[g].uuid, slot);
      }
      ++in_use;
    }
    if (auto ok = CheckGpuIndex(*this, g, *sum, recount); !ok) return ok;
  }
  if (partition_by_uuid_.size() != in_use) {
    return Fail("the uuid index holds {} entries for {} partitions", partition_by_uuid_.size(),
                in_use);
  }
  if (auto ok = CheckPlacements(*this, recount); !ok) return ok;
  if (auto ok = CheckNodes(*this, recount); !ok) return ok;
  if (std::abs(recount.allocated - allocated_gpu_milli_) > 1e-6 * (1 + recount.allocated)) {
    return Fail("allocated GPU milli drifted: {} counted, {} kept", recount.allocated,
                allocated_gpu_milli_);
  }
  return {};
}

std::vector<std::pair<NodeIndex, NodeIndex>> ClusterState::RemoteStreams(const Placement& p) const {
  std::vector<std::pair<NodeIndex, NodeIndex>> out;
  for (const Slice& s : p.slices) {
    if (s.remote) out.emplace_back(p.node, gpus_[partitions_[s.partition].gpu].node);
  }
  return out;
}

Environment ClusterState::EnvironmentOf(const Placement& placement) const {
  Environment env;
  std::string limits;
  int thread_pct = 100;
  bool shared = false;
  size_t i = 0;  // device ordinal in the container: local slices only
  for (const Slice& s : placement.slices) {
    const Partition& p = partitions_[s.partition];
    if (s.remote) {
      const Gpu& g = gpus_[p.gpu];
      env.remote_gpus.push_back({nodes_[g.node].name, g.index, p.uuid});
      continue;
    }
    if (i) env.cuda_visible_devices += ',';
    env.cuda_visible_devices += p.uuid;
    if (s.milli < 1000 || (s.memory_mib > 0 && s.memory_mib < p.memory_mib)) shared = true;
    thread_pct = std::min(thread_pct, std::max(1, s.milli / 10));
    if (!limits.empty()) limits += ',';
    // Device ordinals as the container sees them: its CUDA_VISIBLE_DEVICES order.
    limits += fmt::format("{}={}M", i, s.memory_mib > 0 ? s.memory_mib : p.memory_mib);
    ++i;
  }
  if (shared && i > 0) {
    env.mps_active_thread_percentage = thread_pct;
    env.mps_pinned_mem_limit = limits;
  }
  return env;
}

}  // namespace tessera::model
