#include "policy/policy.h"

#include <fmt/core.h>

#include <algorithm>

#include "policy/fit.h"

namespace tessera::policy {

void Policy::Order(std::vector<const Workload*>& pending) const {
  // Only called for CustomOrder() policies that keep FIFO as a base; already sorted is common.
  auto fifo = [](const Workload* a, const Workload* b) {
    return a->arrival_s != b->arrival_s ? a->arrival_s < b->arrival_s : a->id < b->id;
  };
  if (!std::is_sorted(pending.begin(), pending.end(), fifo)) {
    std::stable_sort(pending.begin(), pending.end(), fifo);
  }
}

Feasibility Policy::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  return NodeFits(w, node, c);
}

bool Policy::ScoreInto(const Workload& w, NodeIndex node, const ClusterState& c, Candidate& out) {
  std::optional<Candidate> offer = Score(w, node, c);
  if (!offer) return false;
  out = std::move(*offer);
  return true;
}

std::optional<std::vector<Candidate>> Policy::PlaceBatch(std::span<const Workload* const>,
                                                         const ClusterState&) {
  return std::nullopt;
}

std::optional<std::optional<MigLayout>> Policy::Reshape(GpuIndex, const ClusterState&) {
  return std::nullopt;
}

CycleActions Policy::AfterCycle(const ClusterState&) { return {}; }

std::string Policy::Explain(const Workload& w, const ClusterState& c) {
  struct Row {
    double score;
    std::string line;
  };
  std::vector<Row> rows;
  for (NodeIndex n = 0; n < c.node_count(); ++n) {
    const Feasibility f = Filter(w, n, c);
    if (!f.ok()) {
      rows.push_back({-1, fmt::format("{:<24} filtered: {}", c.node(n).name, f.reason)});
      continue;
    }
    const std::optional<Candidate> cand = Score(w, n, c);
    if (!cand) {
      rows.push_back({-1, fmt::format("{:<24} no offer", c.node(n).name)});
      continue;
    }
    std::string slices;
    for (const model::Slice& s : cand->placement.slices) {
      slices += fmt::format(" {}({} milli, {} MiB)", c.partition(s.partition).uuid, s.milli,
                            s.memory_mib);
    }
    rows.push_back(
        {cand->score, fmt::format("{:<24} score {:7.3f}{}", c.node(n).name, cand->score, slices)});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.score > b.score; });
  std::string out = fmt::format("policy {} for workload {} ({}):\n", name(), w.id, w.name);
  for (const Row& r : rows) out += "  " + r.line + "\n";
  return out;
}

}  // namespace tessera::policy
