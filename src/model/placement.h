#pragma once
// Placement: where a workload runs — a node, and on it one slice per GPU it asked for: the
// partition (whole GPU or MIG instance) and the MPS limits it gets there — plus the container
// environment that placement implies (DESIGN §2; thesis Ch. 8.4 hands it over in a ConfigMap).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/workload.h"

namespace tessera::model {

using NodeIndex = int32_t;
using GpuIndex = int32_t;
using PartitionIndex = int32_t;

struct Slice {
  PartitionIndex partition = 0;
  int32_t milli = 1000;    // share of the partition's compute: MPS active-thread % × 10
  int64_t memory_mib = 0;  // memory reserved on the partition (MPS pinned-memory limit)
  // Best effort (MuxFlow's offline work, seed 001 §4): `milli` caps its threads but reserves
  // nothing, so guaranteed clients may still take the partition's whole compute; its memory
  // is reserved like any other. A policy that shares this way must also evict it (AfterCycle).
  bool best_effort = false;
  // Remote (DRMaestro's disaggregated GPUs, seed 002): the GPU sits in another node than the
  // placement's, which holds the workload's CPU and memory; the workload reaches it over the
  // network through a remote-GPU middleware. A slice on the placement's own node is local.
  bool remote = false;
  // The compute it holds back from other clients.
  int32_t reserved_milli() const { return best_effort ? 0 : milli; }
  auto operator<=>(const Slice&) const = default;
};

struct Placement {
  WorkloadId workload = 0;
  NodeIndex node = 0;         // its CPU and memory, and every GPU of a local slice
  std::vector<Slice> slices;  // one per GPU; empty for a CPU-only workload
  bool has_remote() const;
  bool operator==(const Placement&) const = default;
};

// A GPU the container reaches over the network through a remote-GPU middleware (seed 002).
struct RemoteGpu {
  std::string node;  // the node whose GPU it is
  int index = 0;     // its index there (nvidia-smi)
  std::string uuid;  // its partition's uuid
  bool operator==(const RemoteGpu&) const = default;
};

// What the container is told. mps_* are set only when some slice is shared (milli < 1000).
// Remote slices are not in CUDA_VISIBLE_DEVICES (no local device backs them) but in
// remote_gpus, which Variables() writes twice: TESSERA_REMOTE_GPUS ("<uuid>@<node>", comma-
// separated, in slice order) for any middleware, and rCUDA's client variables
// (RCUDA_DEVICE_COUNT, RCUDA_DEVICE_<j>=<node>:<index>), the form 002's HFCUDA-like
// middlewares take (docs/kubernetes.md, "Remote GPUs").
struct Environment {
  std::string cuda_visible_devices;                 // local partition uuids, comma-separated
  std::optional<int> mps_active_thread_percentage;  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
  std::optional<std::string> mps_pinned_mem_limit;  // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "0=2048M"
  std::vector<RemoteGpu> remote_gpus;
  // "<uuid>@<node>,…": TESSERA_REMOTE_GPUS and the tessera.io/remote-gpus annotation.
  std::string RemoteGpusText() const;
  // NAME=value lines, in a fixed order.
  std::vector<std::pair<std::string, std::string>> Variables() const;
};

}  // namespace tessera::model
