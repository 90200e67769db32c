#pragma once
// Clock: where "now" comes from, in seconds. The simulator drives a ManualClock on its virtual
// time line; the Kubernetes driver uses a SteadyClock. Code below the drivers never reads the
// wall clock itself, so a simulation replays bit-for-bit (leveldb Env, Firmament time_interface).

namespace tessera {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double Now() const = 0;
};

// Virtual time, set by its owner. Not thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(double start = 0) : now_(start) {}
  double Now() const override { return now_; }
  void Set(double t) { now_ = t; }
  void Advance(double dt) { now_ += dt; }

 private:
  double now_;
};

// Monotonic seconds since construction. Thread-safe.
class SteadyClock : public Clock {
 public:
  SteadyClock();
  double Now() const override;

 private:
  long long start_ns_;
};

}  // namespace tessera
