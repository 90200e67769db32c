#pragma once
// Shared helpers of the k8s tests: a fake API server with GPU nodes whose inventories sit in a
// MemoryStore as agents would publish them, credentials for it, and wait-for-condition loops
// (never timed assertions: the machine may be loaded).

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "fake_api_server.h"
#include "k8s/api_client.h"
#include "store/memory_store.h"

namespace tessera::k8s::testing_support {

inline Credentials CredentialsFor(const FakeApiServer& api) {
  Credentials c;
  c.server = api.url();
  c.ca_pem = api.pki().ca_pem;
  c.token = FakeApiServer::kToken;
  c.source = "test";
  return c;
}

// `gpus` whole A100-40GB GPUs, uuids GPU-<node>-<i> (as NVML would report them).
inline store::NodeInventory A100Inventory(const std::string& node, int gpus) {
  store::NodeInventory inv;
  inv.node = node;
  inv.backend = "fake";
  inv.agent_id = "agent-" + node;
  inv.generation = 1;
  inv.cpu_milli = 64000;
  inv.memory_mib = 512 * 1024;
  for (int i = 0; i < gpus; ++i) {
    store::GpuInventory g;
    g.index = i;
    g.uuid = "GPU-" + node + "-" + std::to_string(i);
    g.product_name = "NVIDIA A100-SXM4-40GB";
    g.model = "A100-40GB";
    g.memory_mib = 40960;
    g.partitions.push_back({g.uuid, "", -1, 0, 40960});
    inv.gpus.push_back(g);
  }
  return inv;
}

// Waits until `done` holds, up to `timeout_s` (generous: the check is the condition, not time).
inline bool WaitFor(const std::function<bool()>& done, double timeout_s = 120) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace tessera::k8s::testing_support
