// A stand-in for libnvidia-ml.so.1, written from the NVML API Reference, so the agent's NVML
// path (dlopen, dlsym, discovery, MIG mapping, readings, errors) runs on machines without an
// NVIDIA GPU. It implements exactly the functions NvmlBackend resolves, with one fixed node:
//   0: NVIDIA A100-SXM4-40GB, MIG on: slot 0 = GI 1, profile 9 (3g.20gb) at slice 4;
//      slot 1 empty; slot 2 = GI 5, profile 19 (1g.5gb) at slice 0
//   1: NVIDIA H100 80GB HBM3, MIG off, 37 % busy, 250 W, 123456789 mJ, 2048 of 81559 MiB used,
//      2 MPS clients
//   2: a GPU that has fallen off the bus (NVML_ERROR_GPU_IS_LOST)
// Compute processes (issue #16): on the H100 pid 100 (3072 MiB, SM 40 %, memory 10 %; an older
// sample of it at 90 % that must not win), pid 101 (memory unknown, no utilisation sample) and
// a stale sample of pid 102 (20 s older than the newest: stopped); on the A100 pid 200 on GI 5
// (256 MiB) and pid 201 on GI 7, an instance that does not exist. SM clocks: H100 1755 MHz,
// A100 1410 MHz.
// fake_nvml_fail_count(1) makes nvmlDeviceGetCount fail, as a driver in trouble would.
#include <cstring>

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
  nvmlDevice_st* slots[3];
};
struct nvmlGpuInstance_st {
  nvmlDevice_st* mig;
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

enum {
  kSuccess = 0,
  kInvalid = 2,
  kNotSupported = 3,
  kNotFound = 6,
  kInsufficientSize = 7,
  kUnknown = 999,
  kLost = 15
};

static nvmlDevice_st mig_a = {"", "MIG-f0a", 19968, 1024, 0, 0, 1, 9, 4, {}};
static nvmlDevice_st mig_b = {"", "MIG-f0b", 4864, 512, 0, 0, 5, 19, 0, {}};
static nvmlDevice_st gpu0 = {"NVIDIA A100-SXM4-40GB",  "GPU-f0", 40960, 1536, 1, 0, -1, -1, 0,
                             {&mig_a, nullptr, &mig_b}};
static nvmlDevice_st gpu1 = {"NVIDIA H100 80GB HBM3", "GPU-f1", 81559, 2048, 0, 0, -1, -1, 0, {}};
static nvmlDevice_st gpu2 = {"NVIDIA A30", "GPU-f2", 24576, 0, 0, 1, -1, -1, 0, {}};
static nvmlDevice_st* devices[] = {&gpu0, &gpu1, &gpu2};
static nvmlGpuInstance_st instances[] = {{&mig_a}, {&mig_b}};
static int fail_count = 0;

void fake_nvml_fail_count(int on) { fail_count = on; }

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
    default:
      return "Unknown Error";
  }
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  if (fail_count) return kUnknown;
  *n = 3;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_st** d) {
  if (i >= 3) return kInvalid;
  *d = devices[i];
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
  m->total = d->total_mib << 20;
  m->used = d->used_mib << 20;
  m->free = m->total - m->used;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_st* d, unsigned int* current, unsigned int* pending) {
  if (d->lost) return kLost;
  *current = *pending = static_cast<unsigned>(d->mig);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_st* d, unsigned int* n) {
  *n = d->mig ? 3 : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_st* d, unsigned int i,
                                                 nvmlDevice_st** mig) {
  if (!d->mig || i >= 3) return kInvalid;
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
  if (!d->mig) return kNotSupported;
  for (auto& inst : instances) {
    if (static_cast<unsigned>(inst.mig->gi_id) == id) {
      *gi = &inst;
      return kSuccess;
    }
  }
  return kNotFound;
}
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_st* gi, nvmlGpuInstanceInfo_t* info) {
  info->device = &gpu0;
  info->id = static_cast<unsigned>(gi->mig->gi_id);
  info->profileId = static_cast<unsigned>(gi->mig->profile);
  info->placement = {static_cast<unsigned>(gi->mig->start), 0};
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_st* d, nvmlUtilization_t* u) {
  if (d->mig || d->gi_id >= 0) return kNotSupported;  // not on MIG
  u->gpu = 37;
  u->memory = 12;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_st* d, unsigned int* mw) {
  if (d->lost) return kLost;
  *mw = d == &gpu1 ? 250000 : 180000;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st* d, unsigned long long* mj) {
  if (d->lost) return kLost;
  *mj = d == &gpu1 ? 123456789ULL : 987654321ULL;
  return kSuccess;
}

// As the NVML reference describes it: with *count too small (0), INSUFFICIENT_SIZE and the
// count; with no processes, SUCCESS and 0. The agent never passes a buffer.
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_st* d, unsigned int* count,
                                                        void* infos) {
  if (d->lost) return kLost;
  if (d->mig) return kNotSupported;
  const unsigned int n = d == &gpu1 ? 2 : 0;
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

struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
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
  static const nvmlProcessInfo_t a100[] = {{200, 256ULL << 20, 5, 0}, {201, 1ULL << 20, 7, 0}};
  const nvmlProcessInfo_t* list = d == &gpu1 ? h100 : d == &gpu0 ? a100 : nullptr;
  const unsigned int n = list ? 2 : 0;
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
  *mhz = d == &gpu1 ? 1755 : 1410;
  return kSuccess;
}

}  // extern "C"
