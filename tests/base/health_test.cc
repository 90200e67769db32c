#include "base/health.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

struct Logged {
  std::vector<std::string> lines;
  Health::OnChange sink() {
    return [this](bool ok, const std::string& line) {
      lines.push_back((ok ? "ok: " : "fail: ") + line);
    };
  }
};

// A dependency that keeps failing with the same reason is reported once, not on every retry;
// a new reason and the recovery are reported once each.
TEST(HealthTest, ReportsEachChangeOnceNotEachRetry) {
  ManualClock clock;
  Logged log;
  Health h(clock, log.sink());
  const std::string redis = "redis 127.0.0.1:1/0";
  h.Declare(redis);
  for (int retry = 0; retry < 5; ++retry) h.Set(redis, redis + ": Connection refused");
  h.Set(redis, redis + ": Connection timed out");
  h.Set(redis, redis + ": Connection timed out");
  h.Set(redis, "");
  h.Set(redis, "");
  EXPECT_EQ(log.lines, (std::vector<std::string>{"fail: redis 127.0.0.1:1/0: Connection refused",
                                                 "fail: redis 127.0.0.1:1/0: Connection timed out",
                                                 "ok: redis 127.0.0.1:1/0: answers"}));
}

// Ready only when every declared dependency answers; failures come first, then the others,
// then the role; a declared dependency not yet checked is not ready.
TEST(HealthTest, ReadinessListsFailuresFirstAndTheRole) {
  ManualClock clock;
  Health h(clock);
  h.Declare("api server https://10.0.0.1:443");
  h.Declare("redis 10.0.0.5:6379/0");
  Health::Report r = h.Readiness();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text,
            "api server https://10.0.0.1:443: not checked yet\n"
            "redis 10.0.0.5:6379/0: not checked yet\n");
  h.Set("api server https://10.0.0.1:443", "");
  h.Set("redis 10.0.0.5:6379/0", "redis 10.0.0.5:6379/0: Connection refused");
  h.SetRole("standby (Lease tessera-system/tessera-scheduler held by a)");
  r = h.Readiness();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text,
            "redis 10.0.0.5:6379/0: Connection refused\n"
            "api server https://10.0.0.1:443: ok\n"
            "role: standby (Lease tessera-system/tessera-scheduler held by a)\n");
  h.Set("redis 10.0.0.5:6379/0", "");
  EXPECT_TRUE(h.Readiness().ok);
}

// Each loop has its own bound: live at exactly stall_s after the last beat, not after more.
TEST(HealthTest, LivenessFailsOnlyForTheLoopThatStalled) {
  ManualClock clock(100);
  Health h(clock);
  h.Beat("scheduling loop", 180);
  h.Beat("leader election", 60);
  clock.Advance(60);
  EXPECT_TRUE(h.Liveness().ok);
  clock.Advance(1);
  Health::Report r = h.Liveness();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.text,
            "leader election: stalled, no turn for 61 s (limit 60 s)\n"
            "scheduling loop: ok\n");
  h.Beat("leader election", 60);
  EXPECT_TRUE(h.Liveness().ok);
}

}  // namespace
}  // namespace tessera
