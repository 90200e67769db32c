#include "policy/placed_changes.h"

#include <algorithm>

namespace tessera::policy {
namespace {

void SortUnique(std::vector<model::WorkloadId>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

}  // namespace

void PlacedChanges::VisitAll(const model::ClusterState& c) {
  visit_.clear();
  for (const auto& [id, pw] : c.placed()) visit_.push_back(id);
  std::sort(visit_.begin(), visit_.end());
}

void PlacedChanges::Revisit(const model::ClusterState& c, model::NodeIndex n) {
  const model::Node& node = c.node(n);
  NodeSeen& seen = nodes_[n];
  for (model::WorkloadId id : seen.ids) {
    if (c.Find(id) == nullptr) gone_.push_back(id);
  }
  seen.version = node.version;
  before_.swap(seen.ids);
  seen.ids.clear();
  for (model::GpuIndex g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    const model::Gpu& gpu = c.gpu(g);
    for (int slot = 0; slot < gpu.partition_count; ++slot) {
      for (const model::Client& client :
           c.partition(model::ClusterState::PartitionOf(g, slot)).clients) {
        seen.ids.push_back(client.workload);
      }
    }
  }
  SortUnique(seen.ids);
  // Names only for the workloads new on the node: the others' entries were made when they
  // arrived (both lists ascending).
  auto was = before_.begin();
  for (model::WorkloadId id : seen.ids) {
    while (was != before_.end() && *was < id) ++was;
    if (was != before_.end() && *was == id) continue;
    const model::PlacedWorkload* pw = c.Find(id);
    if (pw != nullptr) by_name_.insert_or_assign(pw->workload.name, id);
  }
  visit_.insert(visit_.end(), seen.ids.begin(), seen.ids.end());
}

void PlacedChanges::Update(const model::ClusterState& c, const telemetry::Telemetry* telemetry,
                           bool everything) {
  visit_.clear();
  gone_.clear();
  qps_moved_.clear();
  qps_told_ = false;
  if (nodes_.size() != static_cast<size_t>(c.node_count())) {
    everything = true;
    // Nodes are never renumbered while the cluster lives; a count that moved is a new cluster
    // or nodes added: everyone seen before is checked for having left.
    for (const NodeSeen& seen : nodes_) {
      for (model::WorkloadId id : seen.ids) {
        if (c.Find(id) == nullptr) gone_.push_back(id);
      }
    }
    nodes_.assign(static_cast<size_t>(c.node_count()), NodeSeen{});
  }
  for (model::NodeIndex n = 0; n < c.node_count(); ++n) {
    if (nodes_[n].version != c.node(n).version) Revisit(c, n);  // never 0: a new entry differs
  }
  SortUnique(gone_);

  const std::optional<uint64_t> version =
      telemetry != nullptr ? telemetry->Version() : std::nullopt;
  if (telemetry != nullptr && !everything) {
    names_.clear();
    const bool told = version && telemetry_version_ &&
                      telemetry->WorkloadQpsChangedSince(*telemetry_version_, &names_);
    if (told) {
      for (std::string_view name : names_) {
        auto it = by_name_.find(name);
        if (it == by_name_.end()) continue;
        const model::PlacedWorkload* pw = c.Find(it->second);
        if (pw != nullptr && pw->workload.name == name) {
          visit_.push_back(it->second);
          qps_moved_.push_back(it->second);
        }
      }
      SortUnique(qps_moved_);
      qps_told_ = true;
    } else if (version != telemetry_version_ || !version) {
      everything = true;
    }
  }
  telemetry_version_ = version;
  if (by_name_.size() > 2 * c.placed().size() + 1024) {
    // Rebuilt from the nodes' lists (not pruned): a name whose entry a workload now gone had
    // taken keeps naming the placed one.
    by_name_.clear();
    for (const NodeSeen& seen : nodes_) {
      for (model::WorkloadId id : seen.ids) {
        const model::PlacedWorkload* pw = c.Find(id);
        if (pw != nullptr) by_name_.insert_or_assign(pw->workload.name, id);
      }
    }
  }
  if (everything) {
    qps_told_ = false;
    VisitAll(c);
  } else {
    SortUnique(visit_);
  }
}

}  // namespace tessera::policy
