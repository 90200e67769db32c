#include "agent/mig_reshaper.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/gpu_model.h"
#include "model/mig.h"

namespace tessera::agent {

const char* MigFaultName(MigFault fault) {
  switch (fault) {
    case MigFault::kBusy:
      return "busy";
    case MigFault::kInsufficientResources:
      return "insufficient-resources";
    case MigFault::kNotSupported:
      return "not-supported";
    case MigFault::kNoPermission:
      return "no-permission";
    case MigFault::kGpuLost:
      return "gpu-lost";
    case MigFault::kTimedOut:
      return "timed-out";
    case MigFault::kInvalid:
      return "invalid";
    case MigFault::kOther:
      break;
  }
  return "error";
}

const char* ReshapeStateName(ReshapeOutcome::State state) {
  switch (state) {
    case ReshapeOutcome::State::kDone:
      return "done";
    case ReshapeOutcome::State::kFailed:
      return "failed";
    case ReshapeOutcome::State::kPlanned:
      break;
  }
  return "planned";
}

namespace {

// One instance to make or to unmake: its profile, start and (once it exists) GPU-instance id.
struct Step {
  const model::MigProfile* profile = nullptr;  // null: a profile the catalog lacks
  int profile_id = -1;
  int start = 0;
  int gi_id = -1;

  std::string Name() const {
    const std::string p = profile ? profile->name : fmt::format("profile-{}", profile_id);
    return gi_id >= 0 ? fmt::format("{}@{} (GI {})", p, start, gi_id)
                      : fmt::format("{}@{}", p, start);
  }
};

class Run {
 public:
  Run(MigControl& mig, const store::GpuInventory& gpu, const Clock& clock, double budget_s)
      : mig_(mig), gpu_(gpu), clock_(clock), budget_s_(budget_s), began_(clock.Now()) {}

  ReshapeOutcome Fail(MigFault fault, std::string message) {
    out_.state = ReshapeOutcome::State::kFailed;
    out_.error = MigError{fault, std::move(message)};
    return Finish();
  }
  ReshapeOutcome Finish() {
    out_.elapsed_s = clock_.Now() - began_;
    return std::move(out_);
  }
  ReshapeOutcome& out() { return out_; }

  // Destroys `gone`, then creates `made`; on the first failure, or a step due past the
  // budget, undoes what was done.
  ReshapeOutcome Apply(std::vector<Step> gone, std::vector<Step> made) {
    std::vector<Step> destroyed, created;
    std::optional<MigError> failure;
    auto due = [&](const std::string& next) {
      const double spent = clock_.Now() - began_;
      if (spent <= budget_s_) return true;
      failure = MigError{MigFault::kTimedOut,
                         fmt::format("GPU {}: {:.1f} s spent, past the {:.1f} s budget, before "
                                     "{}",
                                     gpu_.uuid, spent, budget_s_, next)};
      return false;
    };
    for (const Step& s : gone) {
      if (!due("destroying " + s.Name())) break;
      if (auto ok = mig_.DestroyInstance(gpu_, s.gi_id); !ok) {
        failure = ok.error();
        break;
      }
      out_.steps.push_back("destroyed " + s.Name());
      destroyed.push_back(s);
    }
    for (size_t i = 0; !failure && i < made.size(); ++i) {
      Step s = made[i];
      if (!due("creating " + s.Name())) break;
      auto id = mig_.CreateInstance(gpu_, s.profile_id, s.start, s.profile->memory_slices,
                                    s.profile->compute_slices);
      if (!id) {
        failure = id.error();
        break;
      }
      s.gi_id = *id;
      out_.steps.push_back("created " + s.Name());
      created.push_back(s);
    }
    if (!failure) return Finish();
    out_.state = ReshapeOutcome::State::kFailed;
    out_.error = std::move(failure);
    if (destroyed.empty() && created.empty()) return Finish();
    // Roll back: the new instances go, the old ones come back (without a deadline: leaving
    // the GPU half-reshaped is worse than being late).
    out_.rolled_back = true;
    out_.restored = true;
    for (auto it = created.rbegin(); it != created.rend(); ++it) {
      if (auto ok = mig_.DestroyInstance(gpu_, it->gi_id); ok) {
        out_.steps.push_back("rollback: destroyed " + it->Name());
      } else {
        out_.restored = false;
        out_.steps.push_back("rollback: could not destroy " + it->Name() + ": " +
                             ok.error().message);
      }
    }
    for (auto it = destroyed.rbegin(); it != destroyed.rend(); ++it) {
      const model::MigProfile* p = it->profile;
      auto id = p ? mig_.CreateInstance(gpu_, it->profile_id, it->start, p->memory_slices,
                                        p->compute_slices)
                  : MigResult<int>(std::unexpected(
                        MigError{MigFault::kNotSupported, "its profile is not in the catalog"}));
      if (id) {
        Step back = *it;
        back.gi_id = *id;
        out_.steps.push_back("rollback: re-created " + back.Name());
      } else {
        out_.restored = false;
        out_.steps.push_back("rollback: could not re-create " + it->Name() + ": " +
                             id.error().message);
      }
    }
    return Finish();
  }

 private:
  MigControl& mig_;
  const store::GpuInventory& gpu_;
  const Clock& clock_;
  double budget_s_;
  double began_;
  ReshapeOutcome out_;
};

}  // namespace

ReshapeOutcome ReshapeMig(MigControl& mig, const store::GpuInventory& gpu,
                          const std::string& layout, const Clock& clock, double budget_s,
                          bool dry_run) {
  Run run(mig, gpu, clock, budget_s);
  const auto model_id = model::FindGpuModel(gpu.model);
  if (!model_id) {
    return run.Fail(MigFault::kNotSupported,
                    fmt::format("GPU {}: model '{}' is not in the catalog", gpu.uuid, gpu.model));
  }
  const model::GpuModel& m = model::GetGpuModel(*model_id);
  if (layout.empty() != !gpu.mig_enabled) {
    return run.Fail(
        MigFault::kNotSupported,
        fmt::format("GPU {}: the request turns MIG {}; the agent never changes MIG mode (it "
                    "needs the GPU idle and reset: nvidia-smi -i {} -mig {}, by the operator)",
                    gpu.uuid, layout.empty() ? "off" : "on", gpu.index, layout.empty() ? 0 : 1));
  }
  if (layout.empty()) return run.Finish();  // MIG off and wanted off: nothing to do
  auto target = model::ParseLayout(m, layout);
  if (target) {
    if (auto valid = model::ValidateLayout(m, *target); !valid) {
      target = std::unexpected(valid.error());
    }
  }
  if (!target) {
    return run.Fail(MigFault::kInvalid, fmt::format("GPU {}: layout '{}': {}", gpu.uuid, layout,
                                                    target.error().message));
  }
  auto now = mig.ListInstances(gpu);
  if (!now) return run.Fail(now.error().fault, now.error().message);

  auto profile_by_id = [&](int id) -> const model::MigProfile* {
    for (const auto& p : m.mig_profiles) {
      if (p.gi_profile_id == id) return &p;
    }
    return nullptr;
  };
  std::vector<Step> gone, made;
  std::vector<bool> kept(target->instances.size(), false);
  for (const MigInstanceState& s : *now) {
    bool keep = false;
    for (size_t i = 0; i < target->instances.size() && !keep; ++i) {
      const model::MigProfile& want = m.mig_profiles[target->instances[i].profile];
      if (!kept[i] && want.gi_profile_id == s.profile_id && target->instances[i].start == s.start &&
          s.compute_instances > 0) {
        kept[i] = keep = true;
      }
    }
    if (!keep) gone.push_back({profile_by_id(s.profile_id), s.profile_id, s.start, s.gi_id});
    if (!keep && s.processes > 0) {
      return run.Fail(MigFault::kBusy,
                      fmt::format("GPU {}: {} runs {} process(es); it is not reshaped while in "
                                  "use",
                                  gpu.uuid, gone.back().Name(), s.processes));
    }
  }
  for (size_t i = 0; i < target->instances.size(); ++i) {
    if (kept[i]) continue;
    const model::MigProfile& p = m.mig_profiles[target->instances[i].profile];
    made.push_back({&p, p.gi_profile_id, target->instances[i].start, -1});
  }
  std::sort(made.begin(), made.end(),
            [](const Step& a, const Step& b) { return a.start < b.start; });
  if (dry_run) {
    run.out().state = ReshapeOutcome::State::kPlanned;
    for (const Step& s : gone) run.out().steps.push_back("would destroy " + s.Name());
    for (const Step& s : made) run.out().steps.push_back("would create " + s.Name());
    return run.Finish();
  }
  return run.Apply(std::move(gone), std::move(made));
}

}  // namespace tessera::agent
