#pragma once
// Configuration keys: the columns of the profile matrix (seed 000 Ch. 8.3: a configuration is a
// GPU, a MIG partition if any, and MPS limits if any). One format everywhere — the profiler that
// fills the matrix, the simulator's measured points and the policies that look cells up:
//   "<GPU model>/<MIG profile | whole>/<MPS active-thread %>"
// e.g. "A100-40GB/1g.5gb/100", "V100-32GB/whole/25".

#include <string>
#include <string_view>

namespace tessera::predict {

inline constexpr std::string_view kWholeGpu = "whole";

std::string ConfigKey(std::string_view gpu_model, std::string_view profile, int mps_percent);

}  // namespace tessera::predict
