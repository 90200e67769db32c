#pragma once
// MpsStuckDetector: whether one GPU's MPS server is stuck, decided from the agent's successive
// samples of it — the "MPS hangs" of seed 001 §4.2, which MuxFlow's detector alerts on so that
// the server can be reset before the online service sharing it stays down. Pure logic over
// (time, reading) pairs: the agent keeps one per GPU and feeds it every round.
//
// A sample is evidence ("suspect") when
//   - the server did not answer (MpsSample::responsive == false), or
//   - the server has at least one client and the GPU showed no activity at all: clients of a
//     working server launch work, a hung server runs none of it.
// The server is stuck once suspect samples have come `min_samples` times in a row and span at
// least `min_span_s` seconds (from the first to the last), so neither one slow answer nor a
// pause of a healthy client (a checkpoint write, a data-loader stall) raises it. The first
// sample that is not suspect clears it. A sample that lacks what a rule needs (no MPS reading,
// activity unknown) is no evidence and ends the run too: the detector alarms only on unbroken
// evidence. Limit: an attached but idle client (an inference server without requests) looks
// like a hung server to the second rule; docs/runtime.md says what to pair the alarm with.
// Not thread-safe (the agent holds its lock).

#include <optional>
#include <string>

#include "agent/gpu_backend.h"

namespace tessera::agent {

struct MpsStuckOptions {
  // Three looks at least, however long the agent's --interval.
  int min_samples = 3;
  // Longer than the pauses a healthy client makes with its context open: the 60 s checkpoint
  // write budgeted in deploy/examples/example-offline-training.yaml, twice over.
  double min_span_s = 120;
};

class MpsStuckDetector {
 public:
  // Aborts unless min_samples >= 1 and min_span_s >= 0 (the flags are checked before).
  explicit MpsStuckDetector(MpsStuckOptions options = {});

  // Folds in the sample taken at time t (seconds; t never decreases). True when stuck() changed.
  bool Observe(double t, const std::optional<MpsSample>& mps, std::optional<double> activity);

  bool stuck() const { return stuck_; }
  // Why the last sample was suspect; "" when it was not.
  const std::string& reason() const { return reason_; }
  int streak() const { return streak_; }  // suspect samples in a row, the last included
  double streak_s() const { return streak_ > 0 ? last_t_ - first_t_ : 0; }
  const std::optional<MpsSample>& last() const { return last_; }  // the last reading

 private:
  MpsStuckOptions options_;
  std::optional<MpsSample> last_;
  std::string reason_;
  int streak_ = 0;
  double first_t_ = 0, last_t_ = 0;
  bool stuck_ = false;
};

}  // namespace tessera::agent
