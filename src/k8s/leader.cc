#include "k8s/leader.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "k8s/objects.h"

namespace tessera::k8s {

using nlohmann::json;

std::string MicroTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}Z", buf, static_cast<int>(us % 1000000));
}

LeaderElector::LeaderElector(ApiClient& api, const Clock& clock, LeaderOptions options)
    : api_(api), clock_(clock), options_(std::move(options)) {}

std::string LeaderElector::Path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + UrlEscape(options_.namespace_) + "/leases/" +
         UrlEscape(options_.name);
}

std::string LeaderElector::holder() const {
  std::lock_guard lock(holder_mu_);
  return holder_;
}

bool LeaderElector::Leading() const {
  return clock_.Now() - renewed_at_.load() < options_.renew_deadline_s;
}

namespace {

// Writes us into a Lease's spec as holder, renewed at `stamp`; a takeover (not `mine`) also
// restarts acquireTime and counts a transition when someone held it.
void ClaimSpec(json& spec, bool mine, const std::string& holder, const std::string& identity,
               const std::string& stamp, int duration) {
  if (!mine) {
    spec["acquireTime"] = stamp;
    const int64_t transitions =
        spec.contains("leaseTransitions") && spec["leaseTransitions"].is_number_integer()
            ? spec["leaseTransitions"].get<int64_t>()
            : 0;
    spec["leaseTransitions"] = transitions + (holder.empty() ? 0 : 1);
  }
  spec["holderIdentity"] = identity;
  spec["leaseDurationSeconds"] = duration;
  spec["renewTime"] = stamp;
}

}  // namespace

void LeaderElector::SetHolder(const std::string& holder) {
  std::lock_guard lock(holder_mu_);
  holder_ = holder;
}

Expected<bool> LeaderElector::CreateLease(double now, const std::string& stamp, int duration) {
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", options_.name}, {"namespace", options_.namespace_}}},
                {"spec",
                 {{"holderIdentity", options_.identity},
                  {"leaseDurationSeconds", duration},
                  {"acquireTime", stamp},
                  {"renewTime", stamp},
                  {"leaseTransitions", 0}}}};
  auto made = api_.Post(
      "/apis/coordination.k8s.io/v1/namespaces/" + UrlEscape(options_.namespace_) + "/leases",
      lease.dump());
  if (!made) return std::unexpected(made.error());
  if (made->status == 409) return false;  // another replica created it first
  if (!made->ok()) return Fail("create Lease {}: status {}", options_.name, made->status);
  renewed_at_ = now;
  SetHolder(options_.identity);
  spdlog::info("leader election: {} acquired Lease {}/{}", options_.identity, options_.namespace_,
               options_.name);
  return true;
}

Expected<bool> LeaderElector::RenewOrTakeOver(const std::string& body, double now,
                                              const std::string& stamp, int duration) {
  json lease = json::parse(body, nullptr, false);
  if (lease.is_discarded() || !lease.is_object()) {
    return Fail("Lease {}/{}: not a JSON object", options_.namespace_, options_.name);
  }
  json& spec = lease["spec"];
  if (!spec.is_object()) spec = json::object();
  const std::string holder = StringMember(spec, "holderIdentity");
  SetHolder(holder);
  const std::string record = holder + "|" + StringMember(spec, "renewTime");
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = now;
  }
  const int lease_s =
      spec.contains("leaseDurationSeconds") && spec["leaseDurationSeconds"].is_number_integer()
          ? spec["leaseDurationSeconds"].get<int>()
          : duration;
  const bool mine = holder == options_.identity;
  if (!mine && !holder.empty() && now - observed_at_ < lease_s) return false;
  ClaimSpec(spec, mine, holder, options_.identity, stamp, duration);
  auto put = api_.Put(Path(), lease.dump());  // carries metadata.resourceVersion as read
  if (!put) return std::unexpected(put.error());
  if (put->status == 409) return false;
  if (!put->ok()) return Fail("update Lease {}: status {}", options_.name, put->status);
  if (!mine) {
    spdlog::info("leader election: {} took over Lease {}/{} from '{}'", options_.identity,
                 options_.namespace_, options_.name, holder);
  }
  observed_record_ = options_.identity + "|" + stamp;
  observed_at_ = now;
  renewed_at_ = now;
  SetHolder(options_.identity);
  return true;
}

Expected<bool> LeaderElector::TryAcquireOrRenew() {
  const double now = clock_.Now();
  auto got = api_.Get(Path());
  if (!got) return std::unexpected(got.error());
  const std::string stamp = MicroTimeNow();
  const int duration = std::max(1, static_cast<int>(std::lround(options_.lease_duration_s)));
  if (got->status == 404) return CreateLease(now, stamp, duration);
  if (!got->ok()) return Fail("get Lease {}: status {}", options_.name, got->status);
  return RenewOrTakeOver(got->body, now, stamp, duration);
}

void LeaderElector::Release() {
  if (!Leading()) return;
  renewed_at_ = -1e18;
  auto got = api_.Get(Path());
  if (!got || !got->ok()) return;
  json lease = json::parse(got->body, nullptr, false);
  if (lease.is_discarded() || !lease.contains("spec") ||
      StringMember(lease["spec"], "holderIdentity") != options_.identity) {
    return;
  }
  lease["spec"]["holderIdentity"] = "";
  if (auto put = api_.Put(Path(), lease.dump()); put && put->ok()) {
    spdlog::info("leader election: {} released Lease {}/{}", options_.identity, options_.namespace_,
                 options_.name);
  }
}

}  // namespace tessera::k8s
