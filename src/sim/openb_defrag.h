#pragma once
// `tessera simulate --experiment openb-defrag` (registered in experiments.cc): openb-alloc's
// replay with a budget of moves (sim/moves.h) of 0, 1 and 5 per 100 arrivals, for each policy
// (default fgd) over the seeds: allocation at 100 % and at the last arrived level, paired
// against the same policy's arrive-only run of the same seed, and the moves it took
// (docs/results.md, "Defragmentation by moving pods").

#include "base/error.h"
#include "sim/experiment.h"

namespace tessera::sim {

inline constexpr double kOpenbMoveBudgets[] = {0, 1, 5};

[[nodiscard]] Expected<void> CheckOpenbDefragArgs(const ExperimentArgs& args);
[[nodiscard]] Expected<ExperimentOutput> RunOpenbDefragExperiment(const ExperimentArgs& args,
                                                                  const Experiment& experiment);

}  // namespace tessera::sim
