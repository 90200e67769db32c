#pragma once
// ReshapeMig: takes one MIG-enabled GPU from the instances it has to the layout a scheduler
// asked for (k8s/scheduler.cc writes the request; the agent applies it), through MigControl.
//
// Contract:
//  - Instances already where the layout wants them (same profile, same start) are kept; the
//    others are destroyed, then the missing ones created in order of start.
//  - Nothing is touched when the request cannot be met as asked: a layout that NVIDIA's rules
//    forbid, a MIG-mode change (a layout for a GPU with MIG off, or none for one with MIG on:
//    that needs the GPU reset, which is the operator's), a model not in the catalog, or an
//    instance to destroy that runs a process (busy).
//  - Each step must start within `budget_s` of the first (the scheduler's 5 s, thesis Ch. 5:
//    a reshape takes about 5 s and nothing else waits longer). A step that fails or would start
//    past the budget ends the reshape: what it created is destroyed and what it destroyed is
//    re-created (new uuids, same profile and start), so the GPU is back in its old layout;
//    `restored` says whether that rollback itself went through.
//  - A dry run lists the steps it would take and touches nothing.
// Not thread-safe (MigControl is not).

#include <optional>
#include <string>
#include <vector>

#include "agent/mig_control.h"
#include "base/clock.h"
#include "store/records.h"

namespace tessera::agent {

struct ReshapeOutcome {
  enum class State { kDone, kFailed, kPlanned };  // kPlanned: a dry run
  State state = State::kDone;
  std::optional<MigError> error;   // kFailed: why
  std::vector<std::string> steps;  // "destroy 3g.20gb@4 (GI 1)", "create 1g.5gb@0 (GI 8)", ...
  bool rolled_back = false;        // kFailed after a change: the rollback ran
  bool restored = false;           // ... and put every instance back
  double elapsed_s = 0;
};
const char* ReshapeStateName(ReshapeOutcome::State state);  // "done", "failed", "planned"

// `layout`: the layout wanted in model::LayoutToString's form ("1g.5gb@0,3g.20gb@4"), "" for
// MIG off. `gpu` as discovered (index, uuid, model, MIG mode).
ReshapeOutcome ReshapeMig(MigControl& mig, const store::GpuInventory& gpu,
                          const std::string& layout, const Clock& clock, double budget_s,
                          bool dry_run);

}  // namespace tessera::agent
