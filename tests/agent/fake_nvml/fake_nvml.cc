// A stand-in for libnvidia-ml.so.1, written from the NVML API Reference, so the agent's NVML
// path (dlopen, dlsym, discovery, MIG mapping, readings, MIG management, errors) runs on
// machines without an NVIDIA GPU. It implements exactly the functions NvmlBackend resolves,
// with one node that starts as:
//   0: NVIDIA A100-SXM4-40GB, MIG on: slot 0 = GI 1, profile 9 (3g.20gb) at slice 4;
//      slot 1 empty; slot 2 = GI 5, profile 19 (1g.5gb) at slice 0 (each with one compute
//      instance spanning it: a MIG device is a compute instance)
//   1: NVIDIA H100 80GB HBM3, MIG off, 37 % busy, 250 W, 123456789 mJ, 2048 of 81559 MiB used,
//      2 MPS clients
//   2: a GPU that has fallen off the bus (NVML_ERROR_GPU_IS_LOST)
// Compute processes (the per-pod usage series): on the H100 pid 100 (3072 MiB, SM 40 %, memory
// 10 %; an older sample of it at 90 % that must not win), pid 101 (memory unknown, no utilisation
// sample) and a stale sample of pid 102 (20 s older than the newest: stopped); on the A100 pid 200
// on GI 5 (256 MiB) and pid 201 on GI 7, an instance that does not exist. SM clocks: H100 1755 MHz,
// A100 1410 MHz.
// MIG management (docs/runtime.md, "MIG reshapes") on the A100 follows the reference and NVIDIA's
// MIG User Guide for the A100-40GB: GPU-instance profiles 19 (1g.5gb), 20 (1g.5gb+me), 15
// (1g.10gb), 14 (2g.10gb), 9 (3g.20gb), 5 (4g.20gb) and 0 (7g.40gb) at their allowed starts; a
// placement that overlaps another instance's memory slices or passes 7 compute slices is
// INSUFFICIENT_RESOURCES; destroying a compute instance a process runs on, or a GPU instance that
// still has compute instances, is IN_USE. New GPU instances get ids from 8 up (so GI 7 stays
// absent).
// Controls for the tests (dlsym): fake_nvml_fail_count(1) makes nvmlDeviceGetCount fail, as a
// driver in trouble would; fake_nvml_fail_call(name, n, code) makes the n-th next call of the
// function `name` answer `code` (once); fake_nvml_a100_processes(0) stops the A100's processes;
// fake_nvml_mutations() counts the calls that changed MIG state; fake_nvml_reset() restores all.
// fake_nvml_load(nvml_json, reserved_mib) replaces the node by one real GPU as NVML answered on
// it (tools/characterise/nvml_dump.py's JSON: name, uuid, memory, utilisation, power, energy,
// SM clock, compute and MPS processes, process utilisation; tests/agent/fixtures/h200), with
// `reserved_mib` of driver-reserved memory for nvmlDeviceGetMemoryInfo_v2 (nvidia-smi's
// "Reserved"); it answers 0 on success. Without it every device reserves nothing.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

extern "C" {

typedef int nvmlReturn_t;
struct nvmlDevice_st {
  const char* name;
  const char* uuid;
  unsigned long long total_mib, used_mib;
  int mig;      // 1: MIG mode on
  int lost;     // 1: every query answers GPU_IS_LOST
  int gi_id;    // for MIG devices
  int profile;  // GPU-instance profile id
  int start;    // placement start
  nvmlDevice_st* slots[7];
  const struct Real* real = nullptr;  // a GPU loaded by fake_nvml_load: its readings
};
struct nvmlGpuInstance_st {
  int live;
  unsigned id, profile, start, size, compute_slices;
};
struct nvmlComputeInstance_st {
  int live;
  unsigned id, profile;
  nvmlGpuInstance_st* gi;
  int slot;
  char uuid[32];
  nvmlDevice_st dev;  // the MIG device
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlGpuInstancePlacement_t {
  unsigned int start, size;
};
struct nvmlGpuInstanceInfo_t {
  nvmlDevice_st* device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};
struct nvmlComputeInstanceProfileInfo_t {
  unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
      sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
};

enum {
  kSuccess = 0,
  kInvalid = 2,
  kNotSupported = 3,
  kNotFound = 6,
  kInsufficientSize = 7,
  kLost = 15,
  kInUse = 19,
  kInsufficientResources = 23,
  kUnknown = 999
};

// The A100-40GB's GPU-instance profiles: id, compute slices, memory slices, MiB, starts.
struct Profile {
  unsigned id, compute, memory;
  unsigned long long mib;
  unsigned starts_mask;  // bit s: may start at memory slice s
};
static const Profile kProfiles[] = {
    {19, 1, 1, 4864, 0x7f}, {20, 1, 1, 4864, 0x7f}, {15, 1, 2, 9856, 0x55}, {14, 2, 2, 9856, 0x15},
    {9, 3, 4, 19968, 0x11}, {5, 4, 4, 19968, 0x01}, {0, 7, 8, 40192, 0x01}};
static const Profile* FindProfile(unsigned id) {
  for (const Profile& p : kProfiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}
// NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7,8,6}_SLICE, 1_SLICE_REV1: their slice counts.
static const unsigned kCiSlices[] = {1, 2, 3, 4, 7, 8, 6, 1};

struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
// The A100's compute processes (while fake_nvml_a100_processes is on): pid 200 on GI 5, pid 201
// on GI 7, which does not exist.
static const nvmlProcessInfo_t a100[] = {{200, 256ULL << 20, 5, 0}, {201, 1ULL << 20, 7, 0}};

// A real GPU's readings (fake_nvml_load), in NVML's units.
struct Real {
  std::string name, uuid;
  unsigned long long total = 0, used_v1 = 0, free = 0, reserved = 0;  // bytes
  unsigned int util_gpu = 0, util_memory = 0, power_mw = 0, sm_clock_mhz = 0;
  unsigned long long energy_mj = 0;
  std::vector<nvmlProcessInfo_t> processes;
  unsigned int mps_processes = 0;
  std::vector<unsigned int> sampled_pids, sampled_sm, sampled_memory;
};
static Real real;
static nvmlDevice_st real_gpu;
static int real_loaded = 0;

static nvmlDevice_st gpu0 = {"NVIDIA A100-SXM4-40GB", "GPU-f0", 40960, 1536, 1, 0, -1, -1, 0, {}};
static nvmlDevice_st gpu1 = {"NVIDIA H100 80GB HBM3", "GPU-f1", 81559, 2048, 0, 0, -1, -1, 0, {}};
static nvmlDevice_st gpu2 = {"NVIDIA A30", "GPU-f2", 24576, 0, 0, 1, -1, -1, 0, {}};
static nvmlDevice_st* devices[] = {&gpu0, &gpu1, &gpu2};
static nvmlGpuInstance_st gis[8];
static nvmlComputeInstance_st cis[8];
static unsigned next_gi_id = 8;
static unsigned next_uuid = 1;
static int fail_count = 0;
static int a100_processes = 1;
static int mutations = 0;
static char fail_name[64];
static int fail_in = 0;  // calls of fail_name until the injected failure; 0: none
static int fail_code = 0;

// A compute instance spanning `gi`, in MIG-device slot `slot`, with the MIG device's uuid and
// memory (total the profile's, `used_mib` in use).
static nvmlComputeInstance_st* AddCi(nvmlGpuInstance_st* gi, unsigned profile, int slot,
                                     const char* uuid, unsigned long long used_mib) {
  for (nvmlComputeInstance_st& c : cis) {
    if (c.live) continue;
    c = {};
    c.live = 1;
    c.profile = profile;
    c.gi = gi;
    c.slot = slot;
    unsigned id = 0;  // compute-instance ids count within their GPU instance
    for (const nvmlComputeInstance_st& o : cis) {
      if (&o != &c && o.live && o.gi == gi && o.id >= id) id = o.id + 1;
    }
    c.id = id;
    std::snprintf(c.uuid, sizeof c.uuid, "%s", uuid);
    c.dev = {"",
             c.uuid,
             FindProfile(gi->profile)->mib,
             used_mib,
             0,
             0,
             static_cast<int>(gi->id),
             static_cast<int>(gi->profile),
             static_cast<int>(gi->start),
             {}};
    gpu0.slots[slot] = &c.dev;
    return &c;
  }
  return nullptr;
}

static nvmlGpuInstance_st* AddGi(unsigned id, unsigned profile, unsigned start) {
  const Profile* p = FindProfile(profile);
  for (nvmlGpuInstance_st& g : gis) {
    if (g.live) continue;
    g = {1, id, profile, start, p->memory, p->compute};
    return &g;
  }
  return nullptr;
}

void fake_nvml_reset() {
  std::memset(gis, 0, sizeof gis);
  for (auto& c : cis) c = {};  // value-initialised: nvmlDevice_st has member initialisers
  for (auto*& s : gpu0.slots) s = nullptr;
  AddCi(AddGi(1, 9, 4), 2, 0, "MIG-f0a", 1024);
  AddCi(AddGi(5, 19, 0), 0, 2, "MIG-f0b", 512);
  next_gi_id = 8;
  next_uuid = 1;
  fail_count = 0;
  a100_processes = 1;
  mutations = 0;
  fail_in = 0;
  real_loaded = 0;
}
__attribute__((constructor)) static void Init() { fake_nvml_reset(); }

int fake_nvml_load(const char* path, unsigned long long reserved_mib) {
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("devices") || j["devices"].empty()) return 1;
  const nlohmann::json& d = j["devices"][0];
  real = Real{};
  real.name = d.value("name", "");
  real.uuid = d.value("uuid", "");
  real.total = d["memory"].value("total", 0ULL);
  real.used_v1 = d["memory"].value("used", 0ULL);
  real.free = d["memory"].value("free", 0ULL);
  real.reserved = reserved_mib << 20;
  real.util_gpu = d["utilization"].value("gpu", 0u);
  real.util_memory = d["utilization"].value("memory", 0u);
  real.power_mw = d.value("power_mw", 0u);
  real.energy_mj = d.value("energy_mj", 0ULL);
  real.sm_clock_mhz = d.value("clock_sm_mhz", 0u);
  for (const auto& p : d["compute_processes"]) {
    real.processes.push_back({p.value("pid", 0u), p.value("used_gpu_memory", 0ULL),
                              p.value("gpu_instance_id", ~0u), ~0u});
  }
  real.mps_processes = static_cast<unsigned int>(d["mps_processes"].size());
  if (d["process_utilization"].is_array()) {
    for (const auto& u : d["process_utilization"]) {
      real.sampled_pids.push_back(u.value("pid", 0u));
      real.sampled_sm.push_back(u.value("sm", 0u));
      real.sampled_memory.push_back(u.value("mem", 0u));
    }
  }
  real_gpu = {real.name.c_str(),
              real.uuid.c_str(),
              real.total >> 20,
              real.used_v1 >> 20,
              0,
              0,
              -1,
              -1,
              0,
              {},
              &real};
  real_loaded = 1;
  return 0;
}

void fake_nvml_fail_count(int on) { fail_count = on; }
void fake_nvml_a100_processes(int on) { a100_processes = on; }
int fake_nvml_mutations() { return mutations; }
void fake_nvml_fail_call(const char* name, int nth, int code) {
  std::snprintf(fail_name, sizeof fail_name, "%s", name);
  fail_in = nth;
  fail_code = code;
}
// The injected failure, when this call of `name` is the one to fail.
static int Injected(const char* name) {
  if (fail_in <= 0 || std::strcmp(name, fail_name) != 0) return 0;
  return --fail_in == 0 ? fail_code : 0;
}

nvmlReturn_t nvmlInit_v2() { return kSuccess; }
nvmlReturn_t nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kLost:
      return "GPU is lost";
    case kNotFound:
      return "Not Found";
    case kNotSupported:
      return "Not Supported";
    case kInUse:
      return "In use by another client";
    case kInsufficientResources:
      return "Insufficient resources";
    case kInvalid:
      return "Invalid Argument";
    default:
      return "Unknown Error";
  }
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  if (fail_count) return kUnknown;
  *n = real_loaded ? 1 : 3;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_st** d) {
  if (i >= (real_loaded ? 1u : 3u)) return kInvalid;
  *d = real_loaded ? &real_gpu : devices[i];
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_st* d, char* buf, unsigned int len) {
  if (d->lost) return kLost;
  std::strncpy(buf, d->name, len);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_st* d, char* buf, unsigned int len) {
  if (d->lost) return kLost;
  std::strncpy(buf, d->uuid, len);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_st* d, nvmlMemory_t* m) {
  if (d->lost) return kLost;
  if (d->real) {  // v1: "used" includes what the driver reserves
    *m = {d->real->total, d->real->free, d->real->used_v1};
    return kSuccess;
  }
  m->total = d->total_mib << 20;
  m->used = d->used_mib << 20;
  m->free = m->total - m->used;
  return kSuccess;
}
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
// v2 (R510 on): the driver's reserved memory apart; refuses a struct of another version.
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_st* d, nvmlMemory_v2_t* m) {
  if (d->lost) return kLost;
  if (m->version != (sizeof(nvmlMemory_v2_t) | (2u << 24))) return 25;  // VERSION_MISMATCH
  nvmlMemory_t v1{};
  nvmlDeviceGetMemoryInfo(d, &v1);
  const unsigned long long reserved = d->real ? d->real->reserved : 0;
  m->total = v1.total;
  m->reserved = reserved;
  m->free = v1.free;
  // The fixture's reserved memory is nvidia-smi's, rounded to MiB: never more than in use.
  m->used = v1.used > reserved ? v1.used - reserved : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_st* d, unsigned int* current, unsigned int* pending) {
  if (d->lost) return kLost;
  *current = *pending = static_cast<unsigned>(d->mig);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_st* d, unsigned int* n) {
  *n = d->mig ? 7 : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_st* d, unsigned int i,
                                                 nvmlDevice_st** mig) {
  if (!d->mig || i >= 7) return kInvalid;
  if (d->slots[i] == nullptr) return kNotFound;
  *mig = d->slots[i];
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_st* d, unsigned int* id) {
  if (d->gi_id < 0) return kNotSupported;
  *id = static_cast<unsigned>(d->gi_id);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_st* d, unsigned int id,
                                          nvmlGpuInstance_st** gi) {
  if (d->lost) return kLost;
  if (!d->mig) return kNotSupported;
  for (auto& g : gis) {
    if (g.live && g.id == id) {
      *gi = &g;
      return kSuccess;
    }
  }
  return kNotFound;
}
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_st* gi, nvmlGpuInstanceInfo_t* info) {
  if (!gi->live) return kInvalid;
  info->device = &gpu0;
  info->id = gi->id;
  info->profileId = gi->profile;
  info->placement = {gi->start, gi->size};
  return kSuccess;
}

// MIG management (NVML reference, "Multi Instance GPU Management").
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_st* d, unsigned int profileId,
                                       nvmlGpuInstance_st** out, unsigned int* count) {
  if (d->lost) return kLost;
  if (!d->mig) return kNotSupported;
  if (FindProfile(profileId) == nullptr || count == nullptr) return kInvalid;
  if (int r = Injected("nvmlDeviceGetGpuInstances")) return r;
  unsigned n = 0;
  for (auto& g : gis) {
    if (g.live && g.profile == profileId) out[n++] = &g;
  }
  *count = n;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_st* d, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* where,
                                                      nvmlGpuInstance_st** gi) {
  if (d->lost) return kLost;
  if (!d->mig) return kNotSupported;
  const Profile* p = FindProfile(profileId);
  if (p == nullptr || where == nullptr || where->start > 7 ||
      !(p->starts_mask >> where->start & 1u) || where->size != p->memory) {
    return kInvalid;
  }
  if (int r = Injected("nvmlDeviceCreateGpuInstanceWithPlacement")) return r;
  unsigned compute = p->compute;
  for (const auto& g : gis) {
    if (!g.live) continue;
    if (where->start < g.start + g.size && g.start < where->start + where->size) {
      return kInsufficientResources;  // a memory slice is taken
    }
    compute += g.compute_slices;
  }
  if (compute > 7) return kInsufficientResources;
  nvmlGpuInstance_st* made = AddGi(next_gi_id, profileId, where->start);
  if (made == nullptr) return kInsufficientResources;
  ++next_gi_id;
  ++mutations;
  *gi = made;
  return kSuccess;
}
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_st* gi) {
  if (!gi->live) return kInvalid;
  if (int r = Injected("nvmlGpuInstanceDestroy")) return r;
  for (const auto& c : cis) {
    if (c.live && c.gi == gi) return kInUse;  // its compute instances first
  }
  gi->live = 0;
  ++mutations;
  return kSuccess;
}
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_st* gi,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  if (!gi->live || engProfile != 0 || profile >= 8) return kInvalid;
  const unsigned slices = kCiSlices[profile];
  if (slices > gi->compute_slices || profile == 7) return kNotSupported;
  *info = {profile, slices, gi->compute_slices / slices, 14 * slices, 1, 0, 0, 0, 0};
  return kSuccess;
}
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_st* gi, unsigned int profileId,
                                                  nvmlComputeInstance_st** ci) {
  if (!gi->live || profileId >= 7) return kInvalid;
  if (kCiSlices[profileId] != gi->compute_slices) return kNotSupported;  // only whole ones here
  if (int r = Injected("nvmlGpuInstanceCreateComputeInstance")) return r;
  for (const auto& c : cis) {
    if (c.live && c.gi == gi) return kInsufficientResources;  // it already spans the instance
  }
  int slot = 0;
  while (slot < 7 && gpu0.slots[slot] != nullptr) ++slot;
  if (slot == 7) return kInsufficientResources;
  char uuid[32];
  std::snprintf(uuid, sizeof uuid, "MIG-new-%u", next_uuid++);
  nvmlComputeInstance_st* made = AddCi(gi, profileId, slot, uuid, 0);
  if (made == nullptr) return kInsufficientResources;
  ++mutations;
  *ci = made;
  return kSuccess;
}
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_st* gi, unsigned int profileId,
                                                nvmlComputeInstance_st** out, unsigned int* count) {
  if (!gi->live || profileId >= 8 || count == nullptr) return kInvalid;
  unsigned n = 0;
  for (auto& c : cis) {
    if (c.live && c.gi == gi && c.profile == profileId) out[n++] = &c;
  }
  *count = n;
  return kSuccess;
}
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_st* ci) {
  if (!ci->live) return kInvalid;
  if (int r = Injected("nvmlComputeInstanceDestroy")) return r;
  for (const nvmlProcessInfo_t& p : a100) {
    if (a100_processes && p.gpuInstanceId == ci->gi->id) return kInUse;  // a process runs there
  }
  ci->live = 0;
  gpu0.slots[ci->slot] = nullptr;
  ++mutations;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_st* d, nvmlUtilization_t* u) {
  if (d->mig || d->gi_id >= 0) return kNotSupported;  // not on MIG
  u->gpu = d->real ? d->real->util_gpu : 37;
  u->memory = d->real ? d->real->util_memory : 12;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_st* d, unsigned int* mw) {
  if (d->lost) return kLost;
  *mw = d->real ? d->real->power_mw : d == &gpu1 ? 250000 : 180000;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st* d, unsigned long long* mj) {
  if (d->lost) return kLost;
  *mj = d->real ? d->real->energy_mj : d == &gpu1 ? 123456789ULL : 987654321ULL;
  return kSuccess;
}

// As the NVML reference describes it: with *count too small (0), INSUFFICIENT_SIZE and the
// count; with no processes, SUCCESS and 0. The agent never passes a buffer.
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_st* d, unsigned int* count,
                                                        void* infos) {
  if (d->lost) return kLost;
  if (d->mig) return kNotSupported;
  const unsigned int n = d->real ? d->real->mps_processes : d == &gpu1 ? 2 : 0;
  if (n == 0) {
    *count = 0;
    return kSuccess;
  }
  if (*count < n || infos == nullptr) {
    *count = n;
    return kInsufficientSize;
  }
  return kInvalid;  // filling the entries is not implemented: the agent never asks
}

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
};

// The count-then-buffer protocol of nvmlDeviceGetComputeRunningProcesses_v3.
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st* d, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  if (d->lost) return kLost;
  static const nvmlProcessInfo_t h100[] = {{100, 3072ULL << 20, ~0u, ~0u}, {101, ~0ULL, ~0u, ~0u}};
  const nvmlProcessInfo_t* list = d == &gpu1 ? h100 : d == &gpu0 && a100_processes ? a100 : nullptr;
  unsigned int n = list ? 2 : 0;
  if (d->real) {
    list = d->real->processes.data();
    n = static_cast<unsigned int>(d->real->processes.size());
  }
  if (*count < n || (n > 0 && infos == nullptr)) {
    *count = n;
    return kInsufficientSize;
  }
  for (unsigned int i = 0; i < n; ++i) infos[i] = list[i];
  *count = n;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_st* d,
                                             nvmlProcessUtilizationSample_t* samples,
                                             unsigned int* count, unsigned long long) {
  if (d->lost) return kLost;
  if (d->real) {  // no samples since the last call: NOT_FOUND, as the H200 answered when idle
    const unsigned int n = static_cast<unsigned int>(d->real->sampled_pids.size());
    if (n == 0) return kNotFound;
    if (samples == nullptr || *count < n) {
      *count = n;
      return kInsufficientSize;
    }
    for (unsigned int i = 0; i < n; ++i) {
      samples[i] = {d->real->sampled_pids[i],
                    1000000000ULL,
                    d->real->sampled_sm[i],
                    d->real->sampled_memory[i],
                    0,
                    0};
    }
    *count = n;
    return kSuccess;
  }
  if (d != &gpu1) return kNotSupported;
  static const nvmlProcessUtilizationSample_t list[] = {{100, 1000000000ULL, 90, 50, 0, 0},
                                                        {100, 1002000000ULL, 40, 10, 0, 0},
                                                        {102, 982000000ULL, 70, 70, 0, 0}};
  if (samples == nullptr || *count < 3) {
    *count = 3;
    return kInsufficientSize;
  }
  for (unsigned int i = 0; i < 3; ++i) samples[i] = list[i];
  *count = 3;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_st* d, int type, unsigned int* mhz) {
  if (d->lost) return kLost;
  if (type != 1) return kInvalid;  // only NVML_CLOCK_SM is asked
  *mhz = d->real ? d->real->sm_clock_mhz : d == &gpu1 ? 1755 : 1410;
  return kSuccess;
}

}  // extern "C"
