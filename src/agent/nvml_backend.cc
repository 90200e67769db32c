#include "agent/nvml_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "model/gpu_model.h"

namespace tessera::agent {
namespace {

// The few NVML types used, declared from the NVML API Reference (nvml.h, "Device Queries",
// "Multi Instance GPU Management"); ABI-stable across drivers since their _v2 forms.
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpuInstance_t = struct nvmlGpuInstance_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;  // bytes
};
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
constexpr unsigned kNameSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned NVML_DEVICE_MIG_ENABLE = 1;

}  // namespace

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
    auto memory = [&](nvmlDevice_t d, PartitionSample& p) {
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
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessera::agent
