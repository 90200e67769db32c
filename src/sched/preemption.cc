#include "sched/preemption.h"

#include <algorithm>
#include <tuple>

#include "base/error.h"

namespace tessera::sched {
namespace {

bool Fits(const model::Workload& w, model::NodeIndex n, const model::ClusterState& c,
          policy::Policy& policy) {
  return policy.Filter(w, n, c).reason.empty() && policy.Score(w, n, c).has_value();
}

// (highest victim priority, sum of priorities, victims, node): the smaller, the better.
using Cost = std::tuple<int, int64_t, size_t, model::NodeIndex>;

}  // namespace

std::optional<Preemption> FindPreemption(const model::Workload& w, const model::ClusterState& c,
                                         policy::Policy& policy, const AdmitsFn& admits,
                                         const PreemptibleFn& preemptible) {
  // The potential victims per node, the most important first.
  std::vector<std::vector<const model::PlacedWorkload*>> lower(c.node_count());
  for (const auto& [id, pw] : c.placed()) {
    if (pw.workload.priority < w.priority && (!preemptible || preemptible(pw.workload))) {
      lower[pw.placement.node].push_back(&pw);
    }
  }
  model::ClusterState trial = c;
  std::optional<Preemption> best;
  Cost best_cost;
  for (model::NodeIndex n = 0; n < c.node_count(); ++n) {
    if (admits && !admits(w, n).empty()) continue;
    if (Fits(w, n, trial, policy)) return std::nullopt;  // no victims needed
    std::vector<const model::PlacedWorkload*>& pot = lower[n];
    if (pot.empty()) continue;
    std::sort(pot.begin(), pot.end(), [](const auto* a, const auto* b) {
      return std::pair(-a->workload.priority, a->workload.id) <
             std::pair(-b->workload.priority, b->workload.id);
    });
    for (const auto* pw : pot) TESSERA_CHECK(trial.Remove(pw->workload.id).has_value());
    std::vector<const model::PlacedWorkload*> victims;  // the most important first
    if (Fits(w, n, trial, policy)) {
      for (const auto* pw : pot) {  // spared if w still fits beside it
        TESSERA_CHECK(trial.Place(pw->workload, pw->placement).has_value());
        if (Fits(w, n, trial, policy)) continue;
        TESSERA_CHECK(trial.Remove(pw->workload.id).has_value());
        victims.push_back(pw);
      }
    }
    for (const auto* pw : pot) {  // the node as it was, for the next one
      if (!trial.Find(pw->workload.id)) {
        TESSERA_CHECK(trial.Place(pw->workload, pw->placement).has_value());
      }
    }
    if (victims.empty()) continue;
    int64_t sum = 0;
    for (const auto* pw : victims) sum += pw->workload.priority;
    const Cost cost{victims.front()->workload.priority, sum, victims.size(), n};
    if (best && cost >= best_cost) continue;
    best_cost = cost;
    best = Preemption{n, {}};
    for (auto it = victims.rbegin(); it != victims.rend(); ++it) {
      best->victims.push_back((*it)->workload.id);
    }
  }
  return best;
}

}  // namespace tessera::sched
