#pragma once
// Configuration keys: the columns of the profile matrix (seed 000 Ch. 8.3: a configuration is a
// GPU, a MIG partition if any, and MPS limits if any). One format everywhere — the profiler that
// fills the matrix, the simulator's measured points and the policies that look cells up:
//   "<GPU model>/<MIG profile | whole>/<MPS active-thread %>"
// e.g. "A100-40GB/1g.5gb/100", "V100-32GB/whole/25".

#include <string>
#include <string_view>
#include <vector>

namespace tessera::predict {

inline constexpr std::string_view kWholeGpu = "whole";

std::string ConfigKey(std::string_view gpu_model, std::string_view profile, int mps_percent);

// A column's share of its GPU's compute, read from its key: a MIG profile "<N>g.*" holds N
// compute slices; "whole" holds as many as the GPU's largest MIG profile among `keys` (7 on an
// A100), or 1 when no key names one; the MPS percentage scales it. `gpu` numbers the GPU models
// in order of first appearance. A key that is not in the format above gets gpu -1 and a NaN
// share. Shares compare only within one GPU model.
struct ComputeShare {
  int gpu = -1;
  double log_share = 0;  // natural log of the slice count times MPS % / 100
};
std::vector<ComputeShare> ComputeShares(const std::vector<std::string>& keys);

}  // namespace tessera::predict
