#include "agent/nvml_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "model/gpu_model.h"

namespace tessera::agent {
// Named, not anonymous: NvmlBackend::Api (external linkage) holds pointers to functions of these
// types (-Wsubobject-linkage).
namespace nvml_abi {

// The few NVML types used, declared from the NVML API Reference (nvml.h, "Device Queries",
// "Multi Instance GPU Management"); ABI-stable across drivers since their _v2 forms.
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
constexpr nvmlReturn_t NVML_ERROR_IN_USE = 19;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_RESOURCES = 23;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpuInstance_t = struct nvmlGpuInstance_st*;
using nvmlComputeInstance_t = struct nvmlComputeInstance_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;  // bytes
};
// nvmlMemory_v2_t: `used` without the driver's reserved memory, as nvidia-smi prints it
// ("FB Memory Usage": Total = Reserved + Used + Free). v1's `used` counts the reserved part
// too: 616 MiB more than nvidia-smi on an idle H200 (driver 580; docs/runtime.md).
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
constexpr unsigned int kNvmlMemoryV2 = sizeof(nvmlMemory_v2_t) | (2u << 24);  // NVML_STRUCT_VERSION
struct nvmlUtilization_t {
  unsigned int gpu, memory;  // percent
};
struct nvmlGpuInstancePlacement_t {
  unsigned int start, size;
};
struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};
struct nvmlComputeInstanceProfileInfo_t {
  unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
      sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
};
// NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7,8,6}_SLICE are 0..6 (1_SLICE_REV1 is 7); the
// engine profile is always NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED (0).
constexpr unsigned kComputeProfiles = 8;
int ComputeProfileForSlices(int slices) {
  constexpr int kSlices[] = {1, 2, 3, 4, 7, 8, 6};
  for (int p = 0; p < 7; ++p) {
    if (kSlices[p] == slices) return p;
  }
  return -1;
}
constexpr unsigned kMaxInstances = 8;  // a GPU has at most 7 instances of one profile
// nvmlDeviceGetComputeRunningProcesses_v3 fills nvmlProcessInfo_t, which nvml.h (CUDA 11.x
// onwards) defines as nvmlProcessInfo_v2_t: this layout, 24 bytes with the padding after pid.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE when unknown
  unsigned int gpuInstanceId;        // MIG: the GPU instance; else 0xFFFFFFFF
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlProcessInfo_t) == 24);
struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;                    // CPU time stamp, µs
  unsigned int smUtil, memUtil, encUtil, decUtil;  // percent
};
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;
constexpr int NVML_CLOCK_SM = 1;    // nvmlClockType_t
constexpr unsigned kNameSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned NVML_DEVICE_MIG_ENABLE = 1;

}  // namespace nvml_abi
using namespace nvml_abi;  // NOLINT(google-build-using-namespace): this file's own ABI names

struct NvmlBackend::Api {
  void* lib = nullptr;
  nvmlReturn_t (*Init)();
  nvmlReturn_t (*Shutdown)();
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*GetCount)(unsigned int*);
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetUUID)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*GetMemoryInfoV2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;  // optional (R510)
  nvmlReturn_t (*GetMigMode)(nvmlDevice_t, unsigned int*, unsigned int*);
  nvmlReturn_t (*GetMaxMigDeviceCount)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*GetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*GetGpuInstanceId)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*GetGpuInstanceById)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t*);
  nvmlReturn_t (*GpuInstanceGetInfo)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
  nvmlReturn_t (*GetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*GetPowerUsage)(nvmlDevice_t, unsigned int*);                    // mW
  nvmlReturn_t (*GetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long*);  // mJ
  // Optional (recent drivers only): processes with an MPS compute context on the device. Only
  // ever called with a count of 0 and no buffer, which returns the count and needs no struct.
  nvmlReturn_t (*GetMpsProcesses)(nvmlDevice_t, unsigned int*, void*) = nullptr;
  // Optional too (the per-pod tessera_pod_* series; older drivers lack them): the compute processes
  // with their memory, their recent SM and memory-controller shares, and the SM clock.
  nvmlReturn_t (*GetComputeProcesses)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*GetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                        unsigned int*, unsigned long long) = nullptr;
  nvmlReturn_t (*GetClockInfo)(nvmlDevice_t, int, unsigned int*) = nullptr;  // MHz
  // MIG management (R450 drivers on): all resolved, or MigControl is not offered.
  nvmlReturn_t (*GetGpuInstances)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t*,
                                  unsigned int*) = nullptr;
  nvmlReturn_t (*CreateGpuInstanceWithPlacement)(nvmlDevice_t, unsigned int,
                                                 const nvmlGpuInstancePlacement_t*,
                                                 nvmlGpuInstance_t*) = nullptr;
  nvmlReturn_t (*GpuInstanceDestroy)(nvmlGpuInstance_t) = nullptr;
  nvmlReturn_t (*GetComputeProfileInfo)(nvmlGpuInstance_t, unsigned int, unsigned int,
                                        nvmlComputeInstanceProfileInfo_t*) = nullptr;
  nvmlReturn_t (*CreateComputeInstance)(nvmlGpuInstance_t, unsigned int,
                                        nvmlComputeInstance_t*) = nullptr;
  nvmlReturn_t (*GetComputeInstances)(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t*,
                                      unsigned int*) = nullptr;
  nvmlReturn_t (*ComputeInstanceDestroy)(nvmlComputeInstance_t) = nullptr;
  bool mig_management = false;

  std::string Why(nvmlReturn_t r) const {
    return fmt::format("{} (NVML {})", ErrorString ? ErrorString(r) : "?", r);
  }
};

namespace {

template <typename F>
bool Resolve(void* lib, const char* name, F*& out) {
  out = reinterpret_cast<F*>(dlsym(lib, name));
  return out != nullptr;
}

// The compute processes on `dev`, through the two-call protocol (a count, then a buffer with some
// room for processes started in between); nullopt when NVML cannot tell.
std::optional<std::vector<nvmlProcessInfo_t>> ComputeProcesses(const NvmlBackend::Api& a,
                                                               nvmlDevice_t dev) {
  if (a.GetComputeProcesses == nullptr) return std::nullopt;
  for (int attempt = 0; attempt < 3; ++attempt) {
    unsigned int count = 0;
    nvmlReturn_t r = a.GetComputeProcesses(dev, &count, nullptr);
    if (r == NVML_SUCCESS) return std::vector<nvmlProcessInfo_t>{};  // none
    if (r != NVML_ERROR_INSUFFICIENT_SIZE) return std::nullopt;
    std::vector<nvmlProcessInfo_t> out(count + 8);
    count = static_cast<unsigned int>(out.size());
    r = a.GetComputeProcesses(dev, &count, out.data());
    if (r == NVML_SUCCESS) {
      out.resize(std::min<size_t>(count, out.size()));
      return out;
    }
    if (r != NVML_ERROR_INSUFFICIENT_SIZE) return std::nullopt;
  }
  return std::nullopt;  // processes kept starting faster than we could list them
}

// Each process's latest sample on `dev` (pid → sample); samples older than 10 s before the
// newest are of processes that stopped using the GPU and are dropped.
std::map<unsigned int, nvmlProcessUtilizationSample_t> ProcessUtilization(const NvmlBackend::Api& a,
                                                                          nvmlDevice_t dev) {
  std::map<unsigned int, nvmlProcessUtilizationSample_t> out;
  if (a.GetProcessUtilization == nullptr) return out;
  unsigned int count = 0;
  // lastSeenTimeStamp 0: every sample in the driver's buffer (Tick and /metrics both sample,
  // so a "since the last call" stamp would hand each only part of them).
  nvmlReturn_t r = a.GetProcessUtilization(dev, nullptr, &count, 0);
  if (r != NVML_ERROR_INSUFFICIENT_SIZE || count == 0) return out;
  std::vector<nvmlProcessUtilizationSample_t> samples(count + 8);
  count = static_cast<unsigned int>(samples.size());
  if (a.GetProcessUtilization(dev, samples.data(), &count, 0) != NVML_SUCCESS) return out;
  samples.resize(std::min<size_t>(count, samples.size()));
  unsigned long long newest = 0;
  for (const auto& s : samples) newest = std::max(newest, s.timeStamp);
  for (const auto& s : samples) {
    if (s.timeStamp + 10'000'000 < newest) continue;
    auto [it, fresh] = out.try_emplace(s.pid, s);
    if (!fresh && s.timeStamp > it->second.timeStamp) it->second = s;
  }
  return out;
}

// The compute processes of `g` with their memory (by process) and, on a whole GPU, their SM and
// memory-controller shares. A MIG process is placed on its instance by gpuInstanceId; one whose
// instance the inventory lacks is left out. Unverified on hardware (no GPU machine here): the
// layouts and semantics are nvml.h's, checked against the stand-in library only.
void ReadProcesses(const NvmlBackend::Api& a, nvmlDevice_t dev, const store::GpuInventory& g,
                   GpuSample& s) {
  const std::optional<std::vector<nvmlProcessInfo_t>> listed = ComputeProcesses(a, dev);
  if (!listed) return;
  s.processes_listed = true;
  const std::vector<nvmlProcessInfo_t>& procs = *listed;
  if (procs.empty()) return;
  // NVML's per-process utilisation is a whole GPU's; on MIG it is not supported.
  const auto util =
      g.mig_enabled ? decltype(ProcessUtilization(a, dev)){} : ProcessUtilization(a, dev);
  for (const nvmlProcessInfo_t& p : procs) {
    ProcessSample ps;
    ps.pid = p.pid;
    if (!g.mig_enabled) {
      ps.partition_uuid = g.partitions.empty() ? g.uuid : g.partitions[0].uuid;
    } else {
      for (const auto& part : g.partitions) {
        if (part.gi_id >= 0 && static_cast<unsigned>(part.gi_id) == p.gpuInstanceId) {
          ps.partition_uuid = part.uuid;
        }
      }
      if (ps.partition_uuid.empty()) continue;
    }
    if (p.usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) {
      ps.fb_used_mib = static_cast<double>(p.usedGpuMemory >> 20);
    }
    if (auto it = util.find(p.pid); it != util.end()) {
      ps.sm = std::min(it->second.smUtil, 100u) / 100.0;
      ps.dram = std::min(it->second.memUtil, 100u) / 100.0;
    }
    s.processes.push_back(std::move(ps));
  }
}

}  // namespace

Expected<std::unique_ptr<NvmlBackend>> NvmlBackend::Open(const std::string& library) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Fail("NVML: cannot load {}: {} (no NVIDIA driver here? use --fake FILE)", library,
                why ? why : "unknown error");
  }
  auto api = std::make_unique<Api>();
  api->lib = lib;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto*& fn) {
    if (!missing && !Resolve(lib, name, fn)) missing = name;
  };
  need("nvmlInit_v2", api->Init);
  need("nvmlShutdown", api->Shutdown);
  need("nvmlErrorString", api->ErrorString);
  need("nvmlDeviceGetCount_v2", api->GetCount);
  need("nvmlDeviceGetHandleByIndex_v2", api->GetHandleByIndex);
  need("nvmlDeviceGetName", api->GetName);
  need("nvmlDeviceGetUUID", api->GetUUID);
  need("nvmlDeviceGetMemoryInfo", api->GetMemoryInfo);
  need("nvmlDeviceGetMigMode", api->GetMigMode);
  need("nvmlDeviceGetMaxMigDeviceCount", api->GetMaxMigDeviceCount);
  need("nvmlDeviceGetMigDeviceHandleByIndex", api->GetMigDeviceHandleByIndex);
  need("nvmlDeviceGetGpuInstanceId", api->GetGpuInstanceId);
  need("nvmlDeviceGetGpuInstanceById", api->GetGpuInstanceById);
  need("nvmlGpuInstanceGetInfo", api->GpuInstanceGetInfo);
  need("nvmlDeviceGetUtilizationRates", api->GetUtilizationRates);
  need("nvmlDeviceGetPowerUsage", api->GetPowerUsage);
  need("nvmlDeviceGetTotalEnergyConsumption", api->GetTotalEnergyConsumption);
  Resolve(lib, "nvmlDeviceGetMPSComputeRunningProcesses_v3", api->GetMpsProcesses);
  Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v3", api->GetComputeProcesses);
  Resolve(lib, "nvmlDeviceGetProcessUtilization", api->GetProcessUtilization);
  Resolve(lib, "nvmlDeviceGetClockInfo", api->GetClockInfo);
  Resolve(lib, "nvmlDeviceGetMemoryInfo_v2", api->GetMemoryInfoV2);
  api->mig_management =
      Resolve(lib, "nvmlDeviceGetGpuInstances", api->GetGpuInstances) &&
      Resolve(lib, "nvmlDeviceCreateGpuInstanceWithPlacement",
              api->CreateGpuInstanceWithPlacement) &&
      Resolve(lib, "nvmlGpuInstanceDestroy", api->GpuInstanceDestroy) &&
      Resolve(lib, "nvmlGpuInstanceGetComputeInstanceProfileInfo", api->GetComputeProfileInfo) &&
      Resolve(lib, "nvmlGpuInstanceCreateComputeInstance", api->CreateComputeInstance) &&
      Resolve(lib, "nvmlGpuInstanceGetComputeInstances", api->GetComputeInstances) &&
      Resolve(lib, "nvmlComputeInstanceDestroy", api->ComputeInstanceDestroy);
  if (missing != nullptr) {
    dlclose(lib);
    return Fail("NVML: {} lacks {} (driver too old?)", library, missing);
  }
  if (nvmlReturn_t r = api->Init(); r != NVML_SUCCESS) {
    const std::string why = api->Why(r);
    dlclose(lib);
    return Fail("NVML: nvmlInit failed: {}", why);
  }
  return std::unique_ptr<NvmlBackend>(new NvmlBackend(std::move(api)));
}

NvmlBackend::NvmlBackend(std::unique_ptr<Api> api) : api_(std::move(api)) {}

NvmlBackend::~NvmlBackend() {
  api_->Shutdown();
  dlclose(api_->lib);
}

Expected<std::vector<store::GpuInventory>> NvmlBackend::Discover() {
  const Api& a = *api_;
  unsigned int count = 0;
  if (nvmlReturn_t r = a.GetCount(&count); r != NVML_SUCCESS) {
    return Fail("NVML: nvmlDeviceGetCount: {}", a.Why(r));
  }
  std::vector<store::GpuInventory> out;
  for (unsigned int i = 0; i < count; ++i) {
    store::GpuInventory g;
    g.index = static_cast<int>(i);
    nvmlDevice_t dev = nullptr;
    char buf[kNameSize > kUuidSize ? kNameSize : kUuidSize] = {};
    nvmlReturn_t r = a.GetHandleByIndex(i, &dev);
    if (r == NVML_SUCCESS) r = a.GetUUID(dev, buf, kUuidSize);
    if (r != NVML_SUCCESS) {
      if (r != NVML_ERROR_GPU_IS_LOST) return Fail("NVML: GPU {}: {}", i, a.Why(r));
      g.uuid = fmt::format("GPU-lost-index-{}", i);
      g.lost = true;
      out.push_back(std::move(g));
      continue;
    }
    g.uuid = buf;
    if (a.GetName(dev, buf, kNameSize) == NVML_SUCCESS) g.product_name = buf;
    const auto model_id = model::FindGpuModel(g.product_name);
    if (model_id) g.model = model::GetGpuModel(*model_id).name;
    nvmlMemory_t mem{};
    if ((r = a.GetMemoryInfo(dev, &mem)) == NVML_ERROR_GPU_IS_LOST) g.lost = true;
    g.memory_mib = static_cast<int64_t>(mem.total >> 20);
    unsigned int current = 0, pending = 0;
    r = a.GetMigMode(dev, &current, &pending);
    g.mig_enabled = r == NVML_SUCCESS && current == NVML_DEVICE_MIG_ENABLE;
    if (!g.mig_enabled) {
      g.partitions = {{g.uuid, "", -1, 0, g.memory_mib}};
      out.push_back(std::move(g));
      continue;
    }
    unsigned int max_mig = 0;
    if ((r = a.GetMaxMigDeviceCount(dev, &max_mig)) != NVML_SUCCESS) {
      return Fail("NVML: GPU {}: nvmlDeviceGetMaxMigDeviceCount: {}", g.uuid, a.Why(r));
    }
    for (unsigned int m = 0; m < max_mig; ++m) {
      nvmlDevice_t mig = nullptr;
      r = a.GetMigDeviceHandleByIndex(dev, m, &mig);
      if (r == NVML_ERROR_NOT_FOUND) continue;  // an empty slot
      if (r != NVML_SUCCESS) return Fail("NVML: GPU {}: MIG device {}: {}", g.uuid, m, a.Why(r));
      store::PartitionInventory p;
      char uuid[kUuidSize] = {};
      if ((r = a.GetUUID(mig, uuid, kUuidSize)) != NVML_SUCCESS) {
        return Fail("NVML: GPU {}: MIG device {}: uuid: {}", g.uuid, m, a.Why(r));
      }
      p.uuid = uuid;
      unsigned int gi = 0;
      if (a.GetGpuInstanceId(mig, &gi) == NVML_SUCCESS) p.gi_id = static_cast<int>(gi);
      nvmlMemory_t mm{};
      if (a.GetMemoryInfo(mig, &mm) == NVML_SUCCESS) p.memory_mib = mm.total >> 20;
      nvmlGpuInstance_t handle = nullptr;
      nvmlGpuInstanceInfo_t info{};
      if (p.gi_id >= 0 && a.GetGpuInstanceById(dev, gi, &handle) == NVML_SUCCESS &&
          a.GpuInstanceGetInfo(handle, &info) == NVML_SUCCESS) {
        p.start = static_cast<int>(info.placement.start);
        if (model_id) {
          for (const auto& prof : model::GetGpuModel(*model_id).mig_profiles) {
            if (prof.gi_profile_id == static_cast<int>(info.profileId)) {
              p.profile = prof.name;
              p.memory_mib = prof.memory_mib;  // the catalog's nominal size
              break;
            }
          }
        }
        if (p.profile.empty()) p.profile = fmt::format("profile-{}", info.profileId);
      }
      g.partitions.push_back(std::move(p));
    }
    out.push_back(std::move(g));
  }
  return out;
}

Expected<std::vector<GpuSample>> NvmlBackend::Sample(const std::vector<store::GpuInventory>& gpus) {
  const Api& a = *api_;
  std::vector<GpuSample> out;
  for (const auto& g : gpus) {
    GpuSample s;
    s.partitions.resize(g.partitions.size());
    nvmlDevice_t dev = nullptr;
    if (g.lost || a.GetHandleByIndex(static_cast<unsigned>(g.index), &dev) != NVML_SUCCESS) {
      out.push_back(std::move(s));
      continue;
    }
    unsigned int mw = 0;
    if (a.GetPowerUsage(dev, &mw) == NVML_SUCCESS) s.power_w = mw / 1000.0;
    unsigned long long mj = 0;
    if (a.GetTotalEnergyConsumption(dev, &mj) == NVML_SUCCESS)
      s.energy_mj = static_cast<double>(mj);
    unsigned int mhz = 0;
    if (a.GetClockInfo && a.GetClockInfo(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) {
      s.sm_clock_mhz = mhz;
    }
    // Used and free as nvidia-smi prints them: without the driver's reserved memory where the
    // driver has nvmlDeviceGetMemoryInfo_v2.
    auto memory = [&](nvmlDevice_t d, PartitionSample& p) {
      nvmlMemory_v2_t v2{};
      v2.version = kNvmlMemoryV2;
      if (a.GetMemoryInfoV2 && a.GetMemoryInfoV2(d, &v2) == NVML_SUCCESS) {
        p.fb_used_mib = static_cast<double>(v2.used >> 20);
        p.fb_free_mib = static_cast<double>(v2.free >> 20);
        return;
      }
      nvmlMemory_t m{};
      if (a.GetMemoryInfo(d, &m) != NVML_SUCCESS) return;
      p.fb_used_mib = static_cast<double>(m.used >> 20);
      p.fb_free_mib = static_cast<double>(m.free >> 20);
    };
    if (!g.mig_enabled) {
      nvmlUtilization_t u{};
      if (a.GetUtilizationRates(dev, &u) == NVML_SUCCESS) {
        s.gpu_util_pct = u.gpu;
        s.partitions[0].activity = u.gpu / 100.0;
        // "Percent of time device memory was read or written": DCGM's DRAM_ACTIVE counts
        // cycles the interface is busy instead; the nearest NVML has (docs/runtime.md).
        s.partitions[0].dram_active = u.memory / 100.0;
      }
      memory(dev, s.partitions[0]);
      // MPS clients: with a count of 0, NVML answers SUCCESS (none) or INSUFFICIENT_SIZE and
      // the count. Clients imply a server; none leaves it unknown (an idle server has no
      // clients, and NVML does not name processes we may not see). Whether the server answers
      // is not NVML's to say: docs/runtime.md.
      unsigned int clients = 0;
      const nvmlReturn_t r = a.GetMpsProcesses ? a.GetMpsProcesses(dev, &clients, nullptr) : -1;
      if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
        MpsSample m;
        m.clients = r == NVML_SUCCESS ? 0 : static_cast<int>(clients);
        if (m.clients > 0) m.server = true;
        s.mps = m;
      }
    } else {
      // MIG devices by uuid: indices can shift when instances are destroyed.
      unsigned int max_mig = 0;
      if (a.GetMaxMigDeviceCount(dev, &max_mig) == NVML_SUCCESS) {
        for (unsigned int m = 0; m < max_mig; ++m) {
          nvmlDevice_t mig = nullptr;
          char uuid[kUuidSize] = {};
          if (a.GetMigDeviceHandleByIndex(dev, m, &mig) != NVML_SUCCESS ||
              a.GetUUID(mig, uuid, kUuidSize) != NVML_SUCCESS) {
            continue;
          }
          for (size_t k = 0; k < g.partitions.size(); ++k) {
            if (g.partitions[k].uuid == uuid) memory(mig, s.partitions[k]);
          }
        }
      }
    }
    ReadProcesses(a, dev, g, s);
    out.push_back(std::move(s));
  }
  return out;
}

// MIG management.

MigControl* NvmlBackend::mig_control() { return api_->mig_management ? this : nullptr; }

namespace {

MigError Failure(const NvmlBackend::Api& a, nvmlReturn_t r, std::string what) {
  MigFault f = MigFault::kOther;
  switch (r) {
    case NVML_ERROR_IN_USE:
      f = MigFault::kBusy;
      break;
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      f = MigFault::kInsufficientResources;
      break;
    case NVML_ERROR_NOT_SUPPORTED:
      f = MigFault::kNotSupported;
      break;
    case NVML_ERROR_NO_PERMISSION:
      f = MigFault::kNoPermission;
      break;
    case NVML_ERROR_GPU_IS_LOST:
      f = MigFault::kGpuLost;
      break;
    default:
      break;
  }
  return {f, fmt::format("{}: {}", what, a.Why(r))};
}

// The handle of `g`, checked to still be the GPU discovery named.
MigResult<nvmlDevice_t> Device(const NvmlBackend::Api& a, const store::GpuInventory& g) {
  nvmlDevice_t dev = nullptr;
  char uuid[kUuidSize] = {};
  nvmlReturn_t r = a.GetHandleByIndex(static_cast<unsigned>(g.index), &dev);
  if (r == NVML_SUCCESS) r = a.GetUUID(dev, uuid, kUuidSize);
  if (r != NVML_SUCCESS) return std::unexpected(Failure(a, r, fmt::format("GPU {}", g.index)));
  if (g.uuid != uuid) {
    return std::unexpected(
        MigError{MigFault::kOther, fmt::format("GPU {} is now {}, not {}", g.index, uuid, g.uuid)});
  }
  return dev;
}

// The compute instances of `gi`, of every compute-instance profile the instance offers.
MigResult<std::vector<nvmlComputeInstance_t>> ComputeInstances(const NvmlBackend::Api& a,
                                                               nvmlGpuInstance_t gi,
                                                               const std::string& what) {
  std::vector<nvmlComputeInstance_t> out;
  for (unsigned p = 0; p < kComputeProfiles; ++p) {
    nvmlComputeInstanceProfileInfo_t info{};
    if (a.GetComputeProfileInfo(gi, p, 0, &info) != NVML_SUCCESS) continue;  // not offered
    nvmlComputeInstance_t cis[kMaxInstances] = {};
    unsigned int n = 0;
    if (nvmlReturn_t r = a.GetComputeInstances(gi, info.id, cis, &n); r != NVML_SUCCESS) {
      return std::unexpected(Failure(a, r, what + ": listing its compute instances"));
    }
    out.insert(out.end(), cis, cis + std::min(n, kMaxInstances));
  }
  return out;
}

}  // namespace

MigResult<std::vector<MigInstanceState>> NvmlBackend::ListInstances(
    const store::GpuInventory& gpu) {
  const Api& a = *api_;
  auto dev = Device(a, gpu);
  if (!dev) return std::unexpected(dev.error());
  const auto model_id = model::FindGpuModel(gpu.model);
  if (!model_id) {
    return std::unexpected(
        MigError{MigFault::kNotSupported,
                 fmt::format("GPU {}: model '{}' is not in the catalog", gpu.uuid, gpu.model)});
  }
  // Processes by GPU instance, to know which instances are busy.
  std::map<unsigned, int> procs;
  const auto listed = ComputeProcesses(a, *dev);
  if (listed) {
    for (const nvmlProcessInfo_t& p : *listed) ++procs[p.gpuInstanceId];
  }
  std::vector<MigInstanceState> out;
  std::set<int> profiles;
  for (const auto& prof : model::GetGpuModel(*model_id).mig_profiles) {
    if (!profiles.insert(prof.gi_profile_id).second) continue;
    nvmlGpuInstance_t gis[kMaxInstances] = {};
    unsigned int n = 0;
    nvmlReturn_t r = a.GetGpuInstances(*dev, static_cast<unsigned>(prof.gi_profile_id), gis, &n);
    // A profile this GPU or driver does not offer (1g.10gb before R525, say).
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NOT_FOUND ||
        r == NVML_ERROR_INVALID_ARGUMENT) {
      continue;
    }
    if (r != NVML_SUCCESS) {
      return std::unexpected(
          Failure(a, r, fmt::format("GPU {}: listing its {} instances", gpu.uuid, prof.name)));
    }
    for (unsigned i = 0; i < std::min(n, kMaxInstances); ++i) {
      nvmlGpuInstanceInfo_t info{};
      if ((r = a.GpuInstanceGetInfo(gis[i], &info)) != NVML_SUCCESS) {
        return std::unexpected(
            Failure(a, r, fmt::format("GPU {}: a {} instance", gpu.uuid, prof.name)));
      }
      MigInstanceState s;
      s.gi_id = static_cast<int>(info.id);
      s.profile_id = prof.gi_profile_id;
      s.start = static_cast<int>(info.placement.start);
      auto cis = ComputeInstances(a, gis[i], fmt::format("GPU {} GI {}", gpu.uuid, info.id));
      if (!cis) return std::unexpected(cis.error());
      s.compute_instances = static_cast<int>(cis->size());
      s.processes = listed ? procs[info.id] : -1;
      out.push_back(s);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const MigInstanceState& x, const MigInstanceState& y) { return x.start < y.start; });
  return out;
}

MigResult<int> NvmlBackend::CreateInstance(const store::GpuInventory& gpu, int profile_id,
                                           int start, int memory_slices, int compute_slices) {
  const Api& a = *api_;
  auto dev = Device(a, gpu);
  if (!dev) return std::unexpected(dev.error());
  const std::string what = fmt::format("GPU {}: creating a profile-{} instance at slice {}",
                                       gpu.uuid, profile_id, start);
  const int ci_profile = ComputeProfileForSlices(compute_slices);
  if (ci_profile < 0) {
    return std::unexpected(MigError{
        MigFault::kNotSupported,
        fmt::format("{}: no compute-instance profile of {} slices", what, compute_slices)});
  }
  const nvmlGpuInstancePlacement_t where{static_cast<unsigned>(start),
                                         static_cast<unsigned>(memory_slices)};
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t r =
      a.CreateGpuInstanceWithPlacement(*dev, static_cast<unsigned>(profile_id), &where, &gi);
  if (r != NVML_SUCCESS) return std::unexpected(Failure(a, r, what));
  nvmlGpuInstanceInfo_t info{};
  nvmlComputeInstanceProfileInfo_t ci_info{};
  nvmlComputeInstance_t ci = nullptr;
  r = a.GpuInstanceGetInfo(gi, &info);
  if (r == NVML_SUCCESS) {
    r = a.GetComputeProfileInfo(gi, static_cast<unsigned>(ci_profile), 0, &ci_info);
  }
  if (r == NVML_SUCCESS) r = a.CreateComputeInstance(gi, ci_info.id, &ci);
  if (r != NVML_SUCCESS) {
    MigError e = Failure(a, r, what + ": its compute instance");
    if (nvmlReturn_t undo = a.GpuInstanceDestroy(gi); undo != NVML_SUCCESS) {
      e.message += fmt::format("; destroying the GPU instance again failed too: {}", a.Why(undo));
    }
    return std::unexpected(e);
  }
  return static_cast<int>(info.id);
}

MigResult<void> NvmlBackend::DestroyInstance(const store::GpuInventory& gpu, int gi_id) {
  const Api& a = *api_;
  auto dev = Device(a, gpu);
  if (!dev) return std::unexpected(dev.error());
  const std::string what = fmt::format("GPU {}: destroying GI {}", gpu.uuid, gi_id);
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t r = a.GetGpuInstanceById(*dev, static_cast<unsigned>(gi_id), &gi);
  if (r != NVML_SUCCESS) return std::unexpected(Failure(a, r, what));
  auto cis = ComputeInstances(a, gi, what);
  if (!cis) return std::unexpected(cis.error());
  for (nvmlComputeInstance_t ci : *cis) {
    if ((r = a.ComputeInstanceDestroy(ci)) != NVML_SUCCESS) {
      return std::unexpected(Failure(a, r, what + ": its compute instance"));
    }
  }
  if ((r = a.GpuInstanceDestroy(gi)) != NVML_SUCCESS) return std::unexpected(Failure(a, r, what));
  return {};
}

}  // namespace tessera::agent
