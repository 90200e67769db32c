#include "sim/moves.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "base/clock.h"
#include "policy/fit.h"
#include "policy/frag.h"
#include "sched/scheduler.h"

namespace tessera::sim {
namespace {

// What node n would have free if the workloads of `leaving` left it.
struct Free {
  policy::NodeFree node;
  int64_t memory_mib = 0;
};

Free FreeOf(const model::ClusterState& c, model::NodeIndex n) {
  return {policy::NodeFreeOf(c, n), c.node(n).free_memory_mib()};
}

void Release(const model::ClusterState& c, const model::PlacedWorkload& v, Free& f) {
  const model::Node& node = c.node(v.placement.node);
  f.node.cpu_milli += v.workload.cpu_milli;
  f.memory_mib += v.workload.memory_mib;
  for (const model::Slice& s : v.placement.slices) {
    const int local = static_cast<int>(c.partition(s.partition).gpu) - node.first_gpu;
    if (local >= 0 && local < f.node.gpus && !s.best_effort) f.node.free_milli[local] += s.milli;
  }
}

bool Fits(const Free& f, const model::Workload& w) {
  if (f.node.cpu_milli < w.cpu_milli || f.memory_mib < w.memory_mib) return false;
  if (w.gpu.count == 0) return true;
  int usable = 0;
  for (int g = 0; g < f.node.gpus; ++g) {
    if (w.gpu.AllowsModel(f.node.model[g]) && f.node.free_milli[g] >= w.gpu.milli) ++usable;
  }
  return usable >= w.gpu.count;
}

constexpr size_t kMostVictims = 4;  // moves for one arrival

struct Candidate {
  model::NodeIndex node = 0;
  std::vector<model::WorkloadId> victims;
  double moved_milli = 0;
};

// The workloads with a guaranteed slice on each GPU, in id order.
std::vector<std::vector<const model::PlacedWorkload*>> OnGpus(const model::ClusterState& c) {
  std::vector<std::vector<const model::PlacedWorkload*>> on(static_cast<size_t>(c.gpu_count()));
  for (const auto& [id, pw] : c.placed()) {
    for (const model::Slice& s : pw.placement.slices) {
      auto& list = on[c.partition(s.partition).gpu];
      if (list.empty() || list.back() != &pw) list.push_back(&pw);
    }
  }
  for (auto& list : on) {
    std::sort(list.begin(), list.end(),
              [](auto* a, auto* b) { return a->workload.id < b->workload.id; });
  }
  return on;
}

// What freeing GPU g for w takes: the fewest of its workloads, largest share first, whose
// leaving gives w's share (all of them for a whole GPU).
std::vector<const model::PlacedWorkload*> Freeing(
    const model::ClusterState& c, model::GpuIndex g, const model::Workload& w,
    const std::vector<const model::PlacedWorkload*>& on) {
  int need = (w.gpu.sharing() ? w.gpu.milli : 1000) - c.gpu(g).free_milli;
  std::vector<const model::PlacedWorkload*> by_share = on;
  auto share = [&](const model::PlacedWorkload* pw) {
    int32_t m = 0;
    for (const model::Slice& s : pw->placement.slices) {
      if (c.partition(s.partition).gpu == g && !s.best_effort) m += s.milli;
    }
    return m;
  };
  std::stable_sort(by_share.begin(), by_share.end(),
                   [&](auto* a, auto* b) { return share(a) > share(b); });
  std::vector<const model::PlacedWorkload*> out;
  for (const model::PlacedWorkload* pw : by_share) {
    if (need <= 0) break;
    need -= share(pw);
    out.push_back(pw);
  }
  return out;
}

// Where a moved workload could go: every node's free resources, and per request shape the
// first two nodes it fits (two, so that one other than its own node is known).
class Homes {
 public:
  explicit Homes(const model::ClusterState& c) {
    for (model::NodeIndex n = 0; n < c.node_count(); ++n) free_.push_back(FreeOf(c, n));
  }
  bool Elsewhere(const model::Workload& v, model::NodeIndex from) {
    const std::array<int64_t, 4> key = {v.cpu_milli, v.memory_mib, v.gpu.count, v.gpu.milli};
    auto it = std::find_if(memo_.begin(), memo_.end(), [&](const auto& e) {
      return e.first == key && e.second.models == v.gpu.models;
    });
    if (it == memo_.end()) {
      Known k{v.gpu.models, {}};
      for (size_t m = 0; m < free_.size() && k.nodes.size() < 2; ++m) {
        if (Fits(free_[m], v)) k.nodes.push_back(static_cast<model::NodeIndex>(m));
      }
      memo_.emplace_back(key, std::move(k));
      it = memo_.end() - 1;
    }
    for (model::NodeIndex m : it->second.nodes) {
      if (m != from) return true;
    }
    return false;
  }

 private:
  struct Known {
    std::vector<model::GpuModelId> models;
    std::vector<model::NodeIndex> nodes;
  };
  std::vector<Free> free_;
  std::vector<std::pair<std::array<int64_t, 4>, Known>> memo_;
};

bool Better(const Candidate& a, const Candidate& b) {
  if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
  return a.moved_milli < b.moved_milli;
}

// Step 1 of moves.h on node n: the GPUs w needs freed (one for a share — each GPU tried —,
// w's count of whole ones, those needing the fewest moves) and, when w still lacks CPU or
// memory there, more of the node's workloads, CPU-only ones first, then the most CPU first.
// The cheapest such set whose every workload fits some other node, of at most `most`.
std::optional<Candidate> ForNode(
    const model::ClusterState& c, model::NodeIndex n, const model::Workload& w, size_t most,
    const std::vector<std::vector<const model::PlacedWorkload*>>& on_gpu,
    std::vector<const model::PlacedWorkload*> on_node, Homes& homes) {
  const model::Node& node = c.node(n);
  if (!node.ready || node.gpu_count < w.gpu.count) return std::nullopt;
  std::vector<std::vector<const model::PlacedWorkload*>> per_gpu;
  for (int i = 0; i < node.gpu_count; ++i) {
    const model::GpuIndex g = node.first_gpu + i;
    if (!c.gpu(g).available || !w.gpu.AllowsModel(c.gpu(g).model)) continue;
    per_gpu.push_back(Freeing(c, g, w, on_gpu[g]));
  }
  if (static_cast<int>(per_gpu.size()) < w.gpu.count) return std::nullopt;
  std::stable_sort(per_gpu.begin(), per_gpu.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  std::stable_sort(on_node.begin(), on_node.end(), [](auto* a, auto* b) {
    if ((a->workload.gpu.count == 0) != (b->workload.gpu.count == 0)) {
      return a->workload.gpu.count == 0;
    }
    return a->workload.cpu_milli > b->workload.cpu_milli;
  });
  const size_t take = w.gpu.sharing() ? 1 : static_cast<size_t>(w.gpu.count);
  std::optional<Candidate> best;
  for (size_t first = 0; first + take <= per_gpu.size(); first += take) {
    std::vector<const model::PlacedWorkload*> victims;
    auto add = [&](const model::PlacedWorkload* pw) {
      if (std::find(victims.begin(), victims.end(), pw) == victims.end()) victims.push_back(pw);
    };
    for (size_t k = first; k < first + take; ++k)
      std::for_each(per_gpu[k].begin(), per_gpu[k].end(), add);
    Free after = FreeOf(c, n);
    for (const model::PlacedWorkload* pw : victims) Release(c, *pw, after);
    for (const model::PlacedWorkload* pw : on_node) {
      if (Fits(after, w) || victims.size() > most) break;
      if (std::find(victims.begin(), victims.end(), pw) != victims.end()) continue;
      Release(c, *pw, after);
      victims.push_back(pw);
    }
    if (victims.empty() || victims.size() > most || !Fits(after, w) ||
        !std::all_of(victims.begin(), victims.end(), [&](const model::PlacedWorkload* pw) {
          return homes.Elsewhere(pw->workload, n);
        })) {
      continue;
    }
    Candidate cand{n, {}, 0};
    for (const model::PlacedWorkload* pw : victims) {
      cand.victims.push_back(pw->workload.id);
      cand.moved_milli += RequestedGpuMilli(pw->workload);
    }
    if (!best || Better(cand, *best)) best = std::move(cand);
  }
  return best;
}

// Step 1 of moves.h: every node's cheapest candidate, cheapest first.
std::vector<Candidate> Candidates(const model::ClusterState& c, const model::Workload& w,
                                  size_t most) {
  const auto on_gpu = OnGpus(c);
  std::vector<std::vector<const model::PlacedWorkload*>> on_node(
      static_cast<size_t>(c.node_count()));
  for (const auto& [id, pw] : c.placed()) on_node[pw.placement.node].push_back(&pw);
  Homes homes(c);
  std::vector<Candidate> out;
  for (model::NodeIndex n = 0; n < c.node_count(); ++n) {
    std::sort(on_node[n].begin(), on_node[n].end(),
              [](auto* a, auto* b) { return a->workload.id < b->workload.id; });
    if (auto cand = ForNode(c, n, w, most, on_gpu, on_node[n], homes))
      out.push_back(std::move(*cand));
  }
  std::stable_sort(out.begin(), out.end(), Better);
  return out;
}

}  // namespace

namespace {

// Step 2 of moves.h for one candidate: true when w is placed, with the victims placed elsewhere
// (their new nodes appended to `touched`); false with the cluster as it was.
bool TryCandidate(model::ClusterState& c, sched::Scheduler& scheduler, const model::Workload& w,
                  const Candidate& cand, std::vector<model::NodeIndex>& touched) {
  std::vector<model::PlacedWorkload> moved;
  for (model::WorkloadId id : cand.victims) moved.push_back(*c.Find(id));
  auto restore = [&] {
    for (const model::PlacedWorkload& v : moved) {
      if (c.Find(v.workload.id) != nullptr) TESSERA_CHECK(c.Remove(v.workload.id));
      TESSERA_CHECK(c.Place(v.workload, v.placement));
    }
    return false;
  };
  for (const model::PlacedWorkload& v : moved) TESSERA_CHECK(c.Remove(v.workload.id));
  if (!policy::NodeFits(w, cand.node, c).ok()) return restore();
  c.SetNodeReady(cand.node, false);
  bool homed = true;
  for (const model::PlacedWorkload& v : moved) {
    if (!homed) break;
    homed = scheduler.Submit(v.workload).has_value();
    if (homed) scheduler.RunCycle();
    homed = homed && c.Find(v.workload.id) != nullptr;
  }
  c.SetNodeReady(cand.node, true);
  if (!homed || !scheduler.Submit(w).has_value()) return restore();
  scheduler.RunCycle();
  if (c.Find(w.id) == nullptr) return restore();
  touched.push_back(cand.node);
  for (const model::PlacedWorkload& v : moved)
    touched.push_back(c.Find(v.workload.id)->placement.node);
  return true;
}

}  // namespace

ReplayResult ReplayWithMoves(model::ClusterState& cluster, policy::Policy& policy, Rng& rng,
                             std::span<const model::Workload> order, const MoveBudget& budget,
                             MoveStats& stats,
                             const std::function<void(const ReplayEvent&)>& on_event) {
  ManualClock clock;
  sched::Scheduler scheduler(cluster, policy, clock, rng, {},
                             {.drop_unschedulable = true, .tie_break = sched::TieBreak::kFirst});
  ReplayResult r;
  std::vector<model::NodeIndex> touched;
  for (size_t i = 0; i < order.size(); ++i) {
    const model::Workload& w = order[i];
    clock.Set(static_cast<double>(i));
    r.arrived_gpu_milli += RequestedGpuMilli(w);
    touched.clear();
    bool placed = false;
    if (scheduler.Submit(w)) {
      scheduler.RunCycle();
      placed = cluster.Find(w.id) != nullptr;
    }
    const auto allowed = static_cast<size_t>(
        std::floor(static_cast<double>(i + 1) * budget.per_100_arrivals / 100 + 1e-9));
    if (!placed && w.gpu.count > 0 && stats.moves < allowed) {
      const size_t most = std::min(allowed - stats.moves, kMostVictims);
      std::vector<Candidate> candidates = Candidates(cluster, w, most);
      for (size_t k = 0; k < candidates.size() && k < 8 && !placed; ++k) {
        ++stats.candidates_tried;
        placed = TryCandidate(cluster, scheduler, w, candidates[k], touched);
        if (placed) {
          stats.moves += candidates[k].victims.size();
          stats.moved_gpu_milli += candidates[k].moved_milli;
          ++stats.rescued;
        }
      }
    }
    r.Record(placed, cluster);
    if (on_event) on_event({i, &w, placed, r.arrived_gpu_milli, r.allocated_gpu_milli, touched});
  }
  return r;
}

}  // namespace tessera::sim
