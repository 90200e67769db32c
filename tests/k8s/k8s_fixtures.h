#pragma once
// Shared helpers of the k8s tests: a fake API server with GPU nodes whose inventories sit in a
// MemoryStore as agents would publish them, credentials for it, and wait-for-condition loops
// (never timed assertions: the machine may be loaded).

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "a100_inventory.h"
#include "fake_api_server.h"
#include "k8s/api_client.h"
#include "k8s/scheduler.h"
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

// Waits until `done` holds, up to `timeout_s` (generous: the check is the condition, not time).
inline bool WaitFor(const std::function<bool()>& done, double timeout_s = 120) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// A scheduler configuration for tests: short leases, quick retries and polls.
inline SchedulerConfig FastConfig(const std::string& identity) {
  SchedulerConfig c;
  c.leader.namespace_ = "tessera-system";
  c.leader.identity = identity;
  c.leader.lease_duration_s = 2;
  c.leader.renew_deadline_s = 1.5;
  c.leader.retry_period_s = 0.2;
  c.retry_s = 0.2;
  c.inventory_poll_s = 0.5;
  c.informer.backoff_initial_s = 0.05;
  c.informer.backoff_max_s = 0.5;
  return c;
}

}  // namespace tessera::k8s::testing_support
