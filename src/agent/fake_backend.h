#pragma once
// FakeBackend: a GPU node described by a YAML file, for machines without NVIDIA GPUs (this
// one, CI) — GPUs with their models, MIG layouts and instance uuids, and a scripted time series
// of utilisation, SM and DRAM activity, memory in use, SM clock and power per GPU or MIG
// instance, of each listed process's own use, and of the state of a whole
// GPU's MPS server (running, hung, absent; its clients), played back on the agent's clock. The
// format is in docs/runtime.md; tests/agent/fake_node.yaml is an example.
//
// The file is re-read when it changes (so a test or an operator can reshape MIG, lose a GPU or
// change a script while the agent runs). A malformed file is an Error naming the file and line:
// an unknown key, a value out of range (negative, NaN, infinite, util outside 0..1, more memory
// used than the GPU or instance has, an MPS server state other than running/hung/absent, clients
// without a server, a process on a partition the GPU does not have). On a re-read, the backend
// keeps the last good description and keeps serving it, and Discover() fails with the same Error
// until the file is fixed.
//
// MIG management (MigControl) acts on the description in memory, as NVML would on the device:
// a GPU whose `mig` is set lists its instances (GPU-instance profile ids from the catalog, one
// compute instance each, the processes the file puts on them), gets new ones (uuid
// "MIG-<gpu uuid>-<n>", n counting the instances made, the next gi id, an empty script) where
// the memory slices are free and the catalog allows the profile at that start, and loses ones
// no process runs on.
// Discover() then reports the new layout. An edit of the file replaces it all: the file wins.
// Not thread-safe (the agent serialises calls). Does not own the clock.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/gpu_backend.h"
#include "base/clock.h"

namespace tessera::agent {

// A step function of time: each point holds until the next; after the last point the series
// holds its last value, or (loop) starts over every period_s seconds.
struct Script {
  struct Point {
    double t = 0;
    std::optional<double> util;  // 0..1
    std::optional<double> fb_used_mib;
    std::optional<double> power_w;
    std::optional<double> sm_active;     // 0..1
    std::optional<double> dram_active;   // 0..1
    std::optional<double> sm_clock_mhz;  // the GPU's, not an instance's or a process's
  };
  std::vector<Point> points;  // ascending t
  bool loop = false;
  double period_s = 0;

  // The value of `field` in force at script time t; nullopt when no point sets it.
  std::optional<double> At(double t, std::optional<double> Point::*field) const;
  // ∫ field dt over [from, to] (0 where unset).
  double Integral(double from, double to, std::optional<double> Point::*field) const;
};

// A whole GPU's MPS server over time: each point states the whole state (server running, hung
// or absent, and its clients) and holds until the next, as Script's points do.
struct MpsScript {
  struct Point {
    double t = 0;
    MpsSample state;
  };
  std::vector<Point> points;  // ascending t; empty: the GPU has no MPS reading
  bool loop = false;
  double period_s = 0;

  // The state in force at script time t; nullopt when there are no points.
  std::optional<MpsSample> At(double t) const;
};

// A compute process on one partition of a GPU, with its own use over time (fb_used_mib,
// sm_active, dram_active of its script's points).
struct FakeProcess {
  uint32_t pid = 0;
  std::string pod_uid;  // empty: the agent resolves the pid through its proc root
  std::string partition_uuid;
  Script script;
};

struct FakeGpu {
  store::GpuInventory inventory;
  Script script;                  // whole GPU: everything; MIG GPU: the board's power
  std::vector<Script> instances;  // parallel to inventory.partitions when MIG is on
  MpsScript mps;                  // whole GPUs only
  std::vector<FakeProcess> processes;
  bool processes_listed = false;  // the file has `processes:` (possibly empty): they are all
};

struct FakeNode {
  std::string node;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  bool epoch_time = false;  // time_base: epoch — script time is Unix time, not time since start
  std::vector<FakeGpu> gpus;
};

// Parses the YAML text of a fake node; `file` names it in errors ("file:line: what").
[[nodiscard]] Expected<FakeNode> ParseFakeNode(const std::string& text, const std::string& file);

class FakeBackend final : public GpuBackend, public MigControl {
 public:
  // `unix_at_start`: Unix time when the clock read its current value (for time_base: epoch).
  [[nodiscard]] static Expected<std::unique_ptr<FakeBackend>> Load(std::string path,
                                                                   const Clock& clock,
                                                                   double unix_at_start);
  std::string name() const override { return "fake"; }
  Expected<std::vector<store::GpuInventory>> Discover() override;
  Expected<std::vector<GpuSample>> Sample(const std::vector<store::GpuInventory>& gpus) override;
  const FakeNode& node() const { return node_; }

  MigControl* mig_control() override { return this; }
  MigResult<std::vector<MigInstanceState>> ListInstances(const store::GpuInventory& gpu) override;
  MigResult<int> CreateInstance(const store::GpuInventory& gpu, int profile_id, int start,
                                int memory_slices, int compute_slices) override;
  MigResult<void> DestroyInstance(const store::GpuInventory& gpu, int gi_id) override;

 private:
  MigResult<FakeGpu*> MigGpu(const store::GpuInventory& gpu);
  FakeBackend(std::string path, const Clock& clock, double unix_at_start)
      : path_(std::move(path)), clock_(clock), t0_(clock.Now()), unix_at_start_(unix_at_start) {}
  Expected<void> Reload();
  double ScriptTime(double clock_time) const;

  std::string path_;
  const Clock& clock_;
  double t0_;
  double unix_at_start_;
  FakeNode node_;
  std::optional<std::string> last_text_;  // the text last parsed
  std::optional<Error> last_error_;       // and why it was refused, if it was
  int created_ = 0;                       // MIG instances made, for their uuids
};

}  // namespace tessera::agent
