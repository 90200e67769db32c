#include "model/gpu_model.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"

namespace tessera::model {
namespace {

constexpr double kA100Fp16 = 312.0;
constexpr double kA100Bandwidth = 1555.0;

// Placement tables shared by every 7-compute-slice / 8-memory-slice part (A100, H100, H200):
// nvidia-smi mig -lgipp prints 1g {0..6}:1, 1g double-memory {0,2,4,6}:2, 2g {0,2,4}:2,
// 3g {0,4}:4, 4g {0}:4, 7g {0}:8.
std::vector<MigProfile> SevenSliceProfiles(int gib_1g, int gib_2x, int gib_3g, int gib_7g,
                                           int id_1g_2x) {
  auto mib = [](int gib) { return int64_t{gib} * 1024; };
  auto g = [](int n, int gib) { return std::to_string(n) + "g." + std::to_string(gib) + "gb"; };
  return {
      {g(1, gib_1g), 19, 1, 1, mib(gib_1g), 7, {0, 1, 2, 3, 4, 5, 6}, false},
      {g(1, gib_1g) + "+me", 20, 1, 1, mib(gib_1g), 1, {0, 1, 2, 3, 4, 5, 6}, true},
      {g(1, gib_2x), id_1g_2x, 1, 2, mib(gib_2x), 4, {0, 2, 4, 6}, false},
      {g(2, gib_2x), 14, 2, 2, mib(gib_2x), 3, {0, 2, 4}, false},
      {g(3, gib_3g), 9, 3, 4, mib(gib_3g), 2, {0, 4}, false},
      {g(4, gib_3g), 5, 4, 4, mib(gib_3g), 1, {0}, false},
      {g(7, gib_7g), 0, 7, 8, mib(gib_7g), 1, {0}, false},
  };
}

// A30-24GB: 4 compute and 4 memory slices; 1g {0,1,2,3}:1, 2g {0,2}:2, 4g {0}:4.
std::vector<MigProfile> A30Profiles() {
  return {
      {"1g.6gb", 14, 1, 1, 6 * 1024, 4, {0, 1, 2, 3}, false},
      {"1g.6gb+me", 21, 1, 1, 6 * 1024, 1, {0, 1, 2, 3}, true},
      {"2g.12gb", 5, 2, 2, 12 * 1024, 2, {0, 2}, false},
      {"2g.12gb+me", 6, 2, 2, 12 * 1024, 1, {0, 2}, true},
      {"4g.24gb", 0, 4, 4, 24 * 1024, 1, {0}, false},
  };
}

GpuModel Make(std::string name, std::vector<std::string> aliases, int sms, int memory_gib,
              double fp16, double fp32, double bandwidth, double idle_w, double max_w) {
  GpuModel m;
  m.id = 0;
  m.name = std::move(name);
  m.aliases = std::move(aliases);
  m.opaque = false;
  m.sms = sms;
  m.memory_mib = int64_t{memory_gib} * 1024;
  m.fp16_tflops = fp16;
  m.fp32_tflops = fp32;
  m.bandwidth_gbs = bandwidth;
  m.idle_watts = idle_w;
  m.max_watts = max_w;
  m.relative_compute = fp16 / kA100Fp16;
  m.relative_bandwidth = bandwidth / kA100Bandwidth;
  m.mig_compute_slices = 0;
  m.mig_memory_slices = 0;
  return m;
}

GpuModel WithMig(GpuModel m, int compute_slices, int memory_slices,
                 std::vector<MigProfile> profiles) {
  m.mig_compute_slices = compute_slices;
  m.mig_memory_slices = memory_slices;
  m.mig_profiles = std::move(profiles);
  return m;
}

// Alibaba's openb trace hides the specs of G1, G2 and G3; they are schedulable by name and
// count only. Their numbers stay zero so nothing can mistake them for measured values.
GpuModel Opaque(std::string name) {
  GpuModel m = Make(std::move(name), {}, 0, 0, 0, 0, 0, 0, 0);
  m.opaque = true;
  m.relative_compute = 0;
  m.relative_bandwidth = 0;
  return m;
}

std::vector<GpuModel> BuildCatalog() {
  std::vector<GpuModel> c = {
      Make("V100-32GB", {"Tesla V100-SXM2-32GB", "V100M32", "V100"}, 80, 32, 125, 15.7, 900, 40,
           300),
      Make("V100-16GB", {"Tesla V100-SXM2-16GB", "V100M16"}, 80, 16, 125, 15.7, 900, 40, 300),
      Make("P100", {"Tesla P100-PCIE-16GB", "P100-16GB"}, 56, 16, 18.7, 9.3, 732, 30, 250),
      Make("T4", {"Tesla T4"}, 40, 16, 65, 8.1, 320, 10, 70),
      Make("A10", {"NVIDIA A10"}, 72, 24, 125, 31.2, 600, 15, 150),
      WithMig(Make("A30-24GB", {"NVIDIA A30", "A30"}, 56, 24, 165, 10.3, 933, 30, 165), 4, 4,
              A30Profiles()),
      WithMig(Make("A100-40GB", {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB", "A100"}, 108, 40, 312,
                   19.5, 1555, 50, 400),
              7, 8, SevenSliceProfiles(5, 10, 20, 40, 15)),
      WithMig(Make("A100-80GB", {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"}, 108, 80, 312, 19.5,
                   2039, 60, 400),
              7, 8, SevenSliceProfiles(10, 20, 40, 80, 15)),
      WithMig(Make("H100-80GB", {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB", "H100"}, 132, 80, 989,
                   67, 3350, 70, 700),
              7, 8, SevenSliceProfiles(10, 20, 40, 80, 15)),
      WithMig(Make("H200-141GB", {"NVIDIA H200", "H200-SXM5-141GB", "H200"}, 132, 141, 989, 67,
                   4800, 75, 700),
              7, 8, SevenSliceProfiles(18, 35, 71, 141, 15)),
      Opaque("G1"),
      Opaque("G2"),
      Opaque("G3"),
      // One GK210 of a Tesla K80 board (the device CUDA and NVML see; a board holds two):
      // seed 002's testbed GPU. Kepler has no faster half precision, so FP16 = FP32.
      Make("K80", {"Tesla K80"}, 13, 12, 4.37, 4.37, 240, 25, 150),
  };
  for (size_t i = 0; i < c.size(); ++i) c[i].id = static_cast<GpuModelId>(i);
  return c;
}

const std::vector<GpuModel>& Catalog() {
  static const std::vector<GpuModel> catalog = BuildCatalog();
  return catalog;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<int> GpuModel::FindProfile(std::string_view profile_name) const {
  for (size_t i = 0; i < mig_profiles.size(); ++i) {
    if (EqualsIgnoreCase(mig_profiles[i].name, profile_name)) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::span<const GpuModel> AllGpuModels() { return Catalog(); }

const GpuModel& GetGpuModel(GpuModelId id) {
  TESSERA_CHECK(id >= 0 && static_cast<size_t>(id) < Catalog().size());
  return Catalog()[id];
}

std::optional<GpuModelId> FindGpuModel(std::string_view name) {
  for (const GpuModel& m : Catalog()) {
    if (EqualsIgnoreCase(m.name, name)) return m.id;
    for (const std::string& alias : m.aliases) {
      if (EqualsIgnoreCase(alias, name)) return m.id;
    }
  }
  return std::nullopt;
}

}  // namespace tessera::model
