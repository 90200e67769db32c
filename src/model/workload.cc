#include "model/workload.h"

#include <algorithm>

namespace tessera::model {

std::string_view ToString(WorkloadClass c) {
  return c == WorkloadClass::kOnline ? "online" : "offline";
}

Expected<void> Workload::Validate() const {
  const std::string who = name.empty() ? "workload " + std::to_string(id) : "workload " + name;
  if (gpu.count < 0) return Fail("{}: negative GPU count {}", who, gpu.count);
  if (checkpoint_queries < 0) {
    return Fail("{}: negative checkpoint interval {} queries", who, checkpoint_queries);
  }
  if (gpu.count > 0 && (gpu.milli < 1 || gpu.milli > 1000)) {
    return Fail("{}: GPU share {} milli is outside 1..1000", who, gpu.milli);
  }
  if (gpu.count > 1 && gpu.milli != 1000) {
    return Fail("{}: a share of a GPU ({} milli) can only be asked for one GPU, not {}", who,
                gpu.milli, gpu.count);
  }
  if (!gpu.mig_profile.empty() && gpu.count != 1) {
    return Fail("{}: a MIG instance request needs exactly one GPU", who);
  }
  if (cpu_milli < 0 || memory_mib < 0 || gpu.memory_mib < 0) {
    return Fail("{}: negative CPU or memory request", who);
  }
  if (slo_qps < 0 || queries < 0) return Fail("{}: negative SLO or query count", who);
  if (!(goal_s >= 0) || goal_z < 1 || goal_z > 10) {
    return Fail("{}: completion goal {} s with importance z={} (needs >= 0 s, z in 1..10)", who,
                goal_s, goal_z);
  }
  return {};
}

}  // namespace tessera::model
