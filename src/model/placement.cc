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
  return v;
}

}  // namespace tessera::model
