#pragma once
// One menu entry's MIG instances on the fewest GPUs: the heuristic's cost of a MIG load and the
// cut of the final plan (solve.h). A load is a count of instances per MIG profile of the GPU
// model; one GPU holds a load when one of the model's maximal layouts (Problem::layouts) does.
//
// Fewest is exact while the load is small: a depth-first search over the maximal layouts,
// memoised on what is left. Some GPU holds an instance of the profile the fewest layouts hold,
// so only those layouts branch; a branch the lower bound (per profile: ⌈count / the most a
// layout holds⌉; the compute and the memory slices) says cannot beat the best so far is cut, and
// the best so far starts at the greedy count. A load with more than kExactLoads sub-loads (the
// product of count + 1 over profiles) gets the greedy count — largest profile first, a pattern
// repeated while it fits — which at that size is at most a GPU or so above the optimum.
// Cut returns the GPUs of Fewest's count (beyond the exact size: the greedy cut, or CBC's
// cutting-stock solution over the maximal layouts when it uses fewer).

#include <cstddef>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plan/plan.h"

namespace tessera::plan {

using Counts = std::vector<int>;  // per MIG profile of one GPU model

class MigPacker {
 public:
  static constexpr double kExactLoads = 200'000;

  MigPacker(const Problem& p, int gpu);

  int Fewest(const Counts& load);
  // One entry per GPU: the index of its layout in Problem::layouts[gpu], and the instances of
  // each profile it holds.
  std::vector<std::pair<int, Counts>> Cut(const Counts& load);

 private:
  struct Best {
    int gpus = 0;
    int layout = -1;  // the first GPU's layout on the way to `gpus`; -1: the greedy cut's
  };
  struct Hash {
    size_t operator()(const Counts& c) const;
  };

  bool Small(const Counts& load) const;
  int LowerBound(const Counts& load) const;
  Best Search(const Counts& load);
  std::vector<std::pair<int, Counts>> Greedy(Counts load) const;
  int GreedyGpus(const Counts& load);

  const std::vector<Counts>& layouts_;
  std::vector<int> compute_, memory_;  // slices per profile
  int compute_total_ = 1, memory_total_ = 1;
  std::vector<int> most_;                  // per profile: the most one layout holds
  std::vector<std::vector<int>> holding_;  // per profile: the layouts holding it
  std::vector<int> order_;                 // profiles, largest compute first
  std::unordered_map<Counts, Best, Hash> memo_;
  Counts greedy_load_, greedy_used_;  // GreedyGpus' scratch
};

}  // namespace tessera::plan
