#pragma once
// A pod as openb's traces write one, for the simulator's tests: `gpus` GPUs of `milli` each
// (0 GPUs: CPU-only), `cpu` CPU milli, 1 GiB of memory.
#include <string>

#include "model/workload.h"

namespace tessera::sim {

inline model::Workload OpenbPod(model::WorkloadId id, int gpus, int milli, int64_t cpu = 1000) {
  model::Workload w;
  w.id = id;
  w.name = "p" + std::to_string(id);
  w.cpu_milli = cpu;
  w.memory_mib = 1024;
  w.gpu.count = gpus;
  w.gpu.milli = gpus == 0 ? 0 : milli;
  return w;
}

}  // namespace tessera::sim
