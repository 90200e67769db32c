#include "model/placement.h"

#include <algorithm>

namespace tessera::model {

bool Placement::has_remote() const {
  return std::any_of(slices.begin(), slices.end(), [](const Slice& s) { return s.remote; });
}

std::vector<std::pair<std::string, std::string>> Environment::Variables() const {
  std::vector<std::pair<std::string, std::string>> v;
  v.emplace_back("CUDA_VISIBLE_DEVICES", cuda_visible_devices);
  if (mps_active_thread_percentage) {
    v.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                   std::to_string(*mps_active_thread_percentage));
  }
  if (mps_pinned_mem_limit)
    v.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", *mps_pinned_mem_limit);
  if (!remote_gpus.empty()) {
    v.emplace_back("TESSERA_REMOTE_GPUS", RemoteGpusText());
    v.emplace_back("RCUDA_DEVICE_COUNT", std::to_string(remote_gpus.size()));
    for (size_t j = 0; j < remote_gpus.size(); ++j) {
      v.emplace_back("RCUDA_DEVICE_" + std::to_string(j),
                     remote_gpus[j].node + ":" + std::to_string(remote_gpus[j].index));
    }
  }
  return v;
}

std::string Environment::RemoteGpusText() const {
  std::string out;
  for (const RemoteGpu& r : remote_gpus) {
    if (!out.empty()) out += ',';
    out += r.uuid + "@" + r.node;
  }
  return out;
}

}  // namespace tessera::model
