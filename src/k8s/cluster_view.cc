#include "k8s/cluster_view.h"

#include <fmt/format.h>

namespace tessera::k8s {

model::WorkloadId WorkloadIds::IdOf(const std::string& uid) {
  auto [it, fresh] = ids_.try_emplace(uid, next_);
  if (fresh) ++next_;
  return it->second;
}

std::optional<model::WorkloadId> WorkloadIds::Find(const std::string& uid) const {
  auto it = ids_.find(uid);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

Expected<model::Placement> PlacementFromRecord(const store::PlacementRecord& record,
                                               const model::ClusterState& cluster,
                                               model::Workload& w) {
  std::optional<model::NodeIndex> node = cluster.FindNode(record.node);
  if (!node) return Fail("its placement names node {}, which has no inventory", record.node);
  model::Placement p{w.id, *node, {}};
  for (const store::SliceRecord& s : record.slices) {
    std::optional<model::PartitionIndex> part = cluster.FindPartition(s.partition_uuid);
    if (!part) {
      return Fail("its placement names partition {}, which the inventory of {} lacks",
                  s.partition_uuid, record.node);
    }
    const std::string& gpu_node = cluster.node(cluster.gpu(cluster.partition(*part).gpu).node).name;
    if (s.remote_node.empty() ? gpu_node != record.node : gpu_node != s.remote_node) {
      return Fail("its placement puts partition {} on node {}, but the inventory has it on {}",
                  s.partition_uuid, s.remote_node.empty() ? record.node : s.remote_node, gpu_node);
    }
    p.slices.push_back({*part, s.milli, s.memory_mib, s.best_effort, !s.remote_node.empty()});
  }
  // A pod whose request matches the record keeps it: a whole-GPU pod holding a 40 GB A100
  // still asks for one GPU, not for 40 GB, and may move to a 32 GB V100.
  if (w.gpu.count != static_cast<int>(p.slices.size())) {
    w.gpu.count = static_cast<int>(p.slices.size());
    if (!p.slices.empty()) {
      w.gpu.milli = p.slices[0].milli;
      w.gpu.memory_mib = p.slices[0].memory_mib;
    }
  }
  return p;
}

store::PlacementRecord RecordOf(const PodRef& pod, const model::Placement& p,
                                const model::ClusterState& cluster) {
  store::PlacementRecord rec{pod.uid, cluster.node(p.node).name, pod.name, pod.namespace_, {}};
  for (const model::Slice& s : p.slices) {
    const model::Partition& part = cluster.partition(s.partition);
    rec.slices.push_back({part.uuid, s.milli, s.memory_mib, s.best_effort,
                          s.remote ? cluster.node(cluster.gpu(part.gpu).node).name : ""});
  }
  return rec;
}

std::string SlicesText(const std::vector<store::SliceRecord>& slices) {
  std::string out;
  for (const store::SliceRecord& s : slices) {
    out += fmt::format("{}{} ({} milli{}, {} MiB{})", out.empty() ? "" : ", ", s.partition_uuid,
                       s.milli, s.best_effort ? " best effort" : "", s.memory_mib,
                       s.remote_node.empty() ? "" : ", remote on " + s.remote_node);
  }
  return out;
}

}  // namespace tessera::k8s
