#include "predict/config_key.h"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace tessera::predict {

std::string ConfigKey(std::string_view gpu_model, std::string_view profile, int mps_percent) {
  return fmt::format("{}/{}/{}", gpu_model, profile, mps_percent);
}

namespace {

std::optional<int> ParsePositive(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

struct ParsedKey {
  std::string_view gpu;
  int slices = 0;  // 0: whole
  int mps = 100;
};

std::optional<ParsedKey> Parse(std::string_view key) {
  const size_t a = key.find('/');
  const size_t b = a == std::string_view::npos ? a : key.find('/', a + 1);
  if (b == std::string_view::npos || a == 0) return std::nullopt;
  ParsedKey p{key.substr(0, a)};
  const std::string_view profile = key.substr(a + 1, b - a - 1);
  const std::optional<int> mps = ParsePositive(key.substr(b + 1));
  if (!mps || *mps > 100) return std::nullopt;
  p.mps = *mps;
  if (profile == kWholeGpu) return p;
  const size_t g = profile.find('g');
  if (g == std::string_view::npos) return std::nullopt;
  const std::optional<int> slices = ParsePositive(profile.substr(0, g));
  if (!slices) return std::nullopt;
  p.slices = *slices;
  return p;
}

}  // namespace

std::vector<ComputeShare> ComputeShares(const std::vector<std::string>& keys) {
  std::vector<std::optional<ParsedKey>> parsed;
  std::map<std::string_view, int> gpu_index;
  std::map<std::string_view, int> largest;  // the largest MIG profile per GPU model
  for (const std::string& key : keys) {
    parsed.push_back(Parse(key));
    if (!parsed.back()) continue;
    gpu_index.try_emplace(parsed.back()->gpu, static_cast<int>(gpu_index.size()));
    int& l = largest[parsed.back()->gpu];
    l = std::max(l, parsed.back()->slices);
  }
  std::vector<ComputeShare> out;
  for (const std::optional<ParsedKey>& p : parsed) {
    if (!p) {
      out.push_back({-1, std::numeric_limits<double>::quiet_NaN()});
      continue;
    }
    const int slices = p->slices > 0 ? p->slices : std::max(largest[p->gpu], 1);
    out.push_back({gpu_index[p->gpu], std::log(slices * (p->mps / 100.0))});
  }
  return out;
}

}  // namespace tessera::predict
