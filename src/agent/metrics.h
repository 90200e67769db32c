#pragma once
// The agent's /metrics body: DCGM-named GPU metrics in the Prometheus text exposition format
// (version 0.0.4), with dcgm-exporter's metric names and labels (thesis Ch. 5.3.1), so
// dashboards and PromQL written for dcgm-exporter work unchanged:
//   per partition (a whole GPU, or each MIG instance):
//     DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE (MiB), DCGM_FI_PROF_GR_ENGINE_ACTIVE,
//     DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE (0..1)
//   per GPU: DCGM_FI_DEV_GPU_UTIL (%), DCGM_FI_DEV_SM_CLOCK (MHz), DCGM_FI_DEV_POWER_USAGE (W),
//            DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)
//   labels: gpu, UUID (the GPU's), modelName, Hostname; GPU_I_PROFILE and GPU_I_ID on MIG
//   instances; Tessera adds partition_uuid (the uuid a container sees) and, where a placement
//   is known, pod and namespace — one series per pod sharing the partition, as dcgm-exporter
//   does for shared GPUs (so summing over pods counts a shared partition once per pod).
// And, per whole GPU whose backend reads its MPS server (seed 001 §4.2), Tessera's own
//   tessera_mps_server_up (0/1), tessera_mps_clients, tessera_mps_server_stuck (0/1: the
//   agent's MpsStuckDetector), with the base labels gpu, UUID, modelName, Hostname.
// And, per pod and partition it runs on, the pod's own use summed over its processes (for the
//   usage-aware policies of seeds 003 and 004): tessera_pod_fb_used_mib (MiB),
//   tessera_pod_sm_active and tessera_pod_dram_active (0..1 of the partition), labelled like the
//   partition's series plus pod and namespace; processes of no known pod are counted in
//   tessera_agent_unattributed_processes{Hostname}.
// Pure functions; thread-safe.

#include <compare>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/gpu_backend.h"
#include "agent/mps_detector.h"

namespace tessera::agent {

struct PodRef {
  std::string pod;
  std::string ns;
  auto operator<=>(const PodRef&) const = default;
};
using Attribution = std::map<std::string, std::vector<PodRef>>;  // partition uuid → pods

// pod uid → the pod (PlacementRecord.workload is the pod uid under Kubernetes).
using PodsByUid = std::map<std::string, PodRef>;

struct PodUsageMetrics {
  std::string text;
  int unattributed = 0;  // processes left out: no pod uid, no placement with it, or on a
                         // partition the inventory does not have
};

// The per-pod usage series of `samples`' processes, whose pod_uid the caller has resolved
// (empty: unknown). A value no process of the pod reports has no series, never 0.
PodUsageMetrics RenderPodMetrics(std::string_view hostname,
                                 const std::vector<store::GpuInventory>& gpus,
                                 const std::vector<GpuSample>& samples, const PodsByUid& pods,
                                 const Attribution& placed = {});

std::string RenderDcgmMetrics(std::string_view hostname,
                              const std::vector<store::GpuInventory>& gpus,
                              const std::vector<GpuSample>& samples, const Attribution& pods);

// The MPS gauges of the GPUs whose detector (keyed by GPU uuid) has had an MPS reading; lost
// GPUs and GPUs the backend cannot read MPS of have no series.
std::string RenderMpsMetrics(std::string_view hostname,
                             const std::vector<store::GpuInventory>& gpus,
                             const std::map<std::string, MpsStuckDetector>& detectors);

// `value` with \, " and newline escaped, as label values require.
std::string EscapeLabel(std::string_view value);

}  // namespace tessera::agent
