#pragma once
// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection does it, so two scheduler replicas never both schedule (DESIGN §6).
//
// TryAcquireOrRenew creates the Lease when absent, renews it while we hold it, and takes it
// over only when its record (holder, renewTime) has not changed for leaseDurationSeconds as
// observed on OUR clock — replicas never compare wall clocks. Every write carries the
// resourceVersion it read, so of two replicas racing for an expired Lease the API server lets
// exactly one win (the other gets 409 Conflict). Leading() is true only within renew_deadline_s
// of our last successful write; renew_deadline_s < lease_duration_s, so we stop acting before
// anyone else may start. Not thread-safe except Leading(), which any thread may call.

#include <atomic>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "base/error.h"
#include "k8s/api_client.h"

namespace tessera::k8s {

struct LeaderOptions {
  std::string namespace_ = "tessera-system";
  std::string name = "tessera-scheduler";
  std::string identity;  // unique per replica (pod name + random suffix)
  double lease_duration_s = 15;
  double renew_deadline_s = 10;
  double retry_period_s = 2;
};

class LeaderElector {
 public:
  LeaderElector(ApiClient& api, const Clock& clock, LeaderOptions options);

  // One round; true when we hold the Lease after it. An Error: the API server did not answer
  // (Leading() turns false by itself once renew_deadline_s passes without a renewal).
  [[nodiscard]] Expected<bool> TryAcquireOrRenew();
  // Gives the Lease up (holderIdentity cleared) so a standby takes over at once.
  void Release();
  bool Leading() const;
  // The holder the last round read ("" before any, or when the Lease is free). Any thread.
  std::string holder() const;
  const LeaderOptions& options() const { return options_; }

 private:
  std::string Path() const;
  void SetHolder(const std::string& holder);  // under holder_mu_
  // Creates the absent Lease with us as holder; false when another replica created it first.
  Expected<bool> CreateLease(double now, const std::string& stamp, int duration);
  // The Lease as read (`body`): renews it if ours, takes it over if its record has not changed
  // for its duration on our clock; false when another holds it or won the write.
  Expected<bool> RenewOrTakeOver(const std::string& body, double now, const std::string& stamp,
                                 int duration);

  ApiClient& api_;
  const Clock& clock_;
  LeaderOptions options_;
  std::string observed_record_;
  double observed_at_ = 0;
  std::atomic<double> renewed_at_{-1e18};
  mutable std::mutex holder_mu_;
  std::string holder_;
};

// RFC 3339 with microseconds in UTC ("2024-05-01T12:00:00.123456Z"): metav1.MicroTime.
std::string MicroTimeNow();

}  // namespace tessera::k8s
