// The Store contract and the Redis-only guarantees against a real redis-server: the harness's
// server (TESSERA_TEST_REDIS=host:port) for the contract, and servers these tests own for the
// crash-and-restart, AUTH and database-index cases. Everything skips without the harness.
#include "store/redis_store.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "store/integration/redis_process.h"
#include "store/store_contract.h"
#include "harness_env.h"

namespace tessera::store {
namespace {

using testing_support::RedisProcess;

std::string UniquePrefix() {
  static std::atomic<int> n{0};
  std::random_device rd;
  return "tessera-test:" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000) + "-" +
         std::to_string(n++) + ":";
}

std::optional<RedisOptions> HarnessRedis() {
  const char* addr = std::getenv("TESSERA_TEST_REDIS");
  if (addr == nullptr || *addr == '\0') return std::nullopt;
  auto o = ParseRedisAddress(addr);
  if (!o) return std::nullopt;
  o->prefix = UniquePrefix();  // tests run in parallel against one server
  return *o;
}

class RedisHarness : public contract::Harness {
 public:
  explicit RedisHarness(std::unique_ptr<RedisStore> s) : store_(std::move(s)) {}
  Store& store() override { return *store_; }
  // TTLs run on the server's clock: let real time pass.
  void Advance(double s) override { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

 private:
  std::unique_ptr<RedisStore> store_;
};

using contract::StoreContract;
INSTANTIATE_TEST_SUITE_P(Redis, StoreContract,
                         testing::Values(contract::Param{
                             "redis",
                             []() -> std::unique_ptr<contract::Harness> {
                               auto o = HarnessRedis();
                               if (!o) return nullptr;
                               auto s = RedisStore::Connect(*o);
                               EXPECT_TRUE(s) << (s ? "" : s.error().message);
                               if (!s) return nullptr;
                               return std::make_unique<RedisHarness>(std::move(*s));
                             }}),
                         [](const auto& info) { return info.param.name; });

// `nodes` nodes of `gpus` whole H100s each: nodes × gpus partitions of 81920 MiB.
NodeInventory WholeGpuNode(const std::string& name, int gpus) {
  NodeInventory inv{.node = name, .backend = "fake"};
  for (int g = 0; g < gpus; ++g) {
    const std::string uuid = "GPU-" + name + "-" + std::to_string(g);
    inv.gpus.push_back(GpuInventory{.index = g,
                                    .uuid = uuid,
                                    .product_name = "NVIDIA H100 80GB HBM3",
                                    .model = "H100-80GB",
                                    .memory_mib = 81920,
                                    .partitions = {{uuid, "", -1, 0, 81920}}});
  }
  return inv;
}

PlacementRecord Nth(int i, int partitions_per_node, int nodes) {
  const int part = i % (partitions_per_node * nodes);
  const std::string node = "node-" + std::to_string(part / partitions_per_node);
  return contract::Place(
      "w" + std::to_string(i), node,
      {{"GPU-" + node + "-" + std::to_string(part % partitions_per_node), 250, 1024}});
}

TEST(RedisStoreTest, TenThousandPlacementBurstReadsBackIdentical) {
  auto o = HarnessRedis();
  if (!o) TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_REDIS");
  auto s = RedisStore::Connect(*o);
  ASSERT_TRUE(s) << s.error().message;
  RedisStore& store = **s;
  // 10 nodes × 250 GPUs = 2500 partitions; four 250-milli placements fill each one.
  constexpr int kNodes = 10, kGpus = 250, kPlacements = 10000;
  for (int n = 0; n < kNodes; ++n) {
    ASSERT_TRUE(store.PutInventory(WholeGpuNode("node-" + std::to_string(n), kGpus)));
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kPlacements; ++i) {
    auto r = store.PutPlacement(Nth(i, kGpus, kNodes));
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->applied) << r->refusal;
  }
  const auto t1 = std::chrono::steady_clock::now();
  auto all = store.ListPlacements();
  ASSERT_TRUE(all) << all.error().message;
  const auto t2 = std::chrono::steady_clock::now();
  ASSERT_EQ(all->size(), static_cast<size_t>(kPlacements));
  std::map<std::string, PlacementRecord> by_id;
  for (auto& p : *all) by_id.emplace(p.workload, p);
  for (int i = 0; i < kPlacements; ++i) {
    const PlacementRecord want = Nth(i, kGpus, kNodes);
    ASSERT_EQ(by_id.at(want.workload), want);
  }
  for (int g : {0, 137, 249}) {
    auto u = store.GetPartition("GPU-node-3-" + std::to_string(g));
    ASSERT_TRUE(u && u->has_value());
    EXPECT_EQ((*u)->used_milli, 1000);
    EXPECT_EQ((*u)->used_memory_mib, 4096);
  }
  // A fifth placement on a full partition is refused.
  auto r = store.PutPlacement(contract::Place("extra", "node-0", {{"GPU-node-0-0", 1, 0}}));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->applied);
  const double write_s = std::chrono::duration<double>(t1 - t0).count();
  const double read_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("burst: %d placements written in %.3f s (%.0f/s), listed in %.3f s (%.0f/s)\n",
              kPlacements, write_s, kPlacements / write_s, read_s, kPlacements / read_s);
  RecordProperty("writes_per_s", std::to_string(kPlacements / write_s));
  RecordProperty("reads_per_s", std::to_string(kPlacements / read_s));
}

// "Nothing lost": every write acknowledged before redis-server is SIGKILLed is read back after
// it restarts (append-only file, fsync always), and the write in flight at the crash is retried
// by the client until the server is back and applied exactly once (the accounting proves no
// write was doubled or dropped).
TEST(RedisStoreTest, KillAndRestartMidBurstLosesNothing) {
  RedisProcess server("s3cret");
  if (!server.Available()) TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_REDIS_SERVER");
  ASSERT_TRUE(server.Start());
  RedisOptions o;
  o.port = server.port();
  o.password = "s3cret";
  o.db = 2;
  o.prefix = UniquePrefix();
  auto s = RedisStore::Connect(o);
  ASSERT_TRUE(s) << s.error().message;
  RedisStore& store = **s;
  constexpr int kNodes = 4, kGpus = 125, kPlacements = 2000;  // 500 partitions, 4 each
  for (int n = 0; n < kNodes; ++n) {
    ASSERT_TRUE(store.PutInventory(WholeGpuNode("node-" + std::to_string(n), kGpus)));
  }
  std::atomic<int> acked{0};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::thread writer([&] {
    for (int i = 0; i < kPlacements; ++i) {
      auto r = store.PutPlacement(Nth(i, kGpus, kNodes));
      if (!r || !r->applied) {
        if (failures++ == 0) first_failure = r ? r->refusal : r.error().message;
      }
      ++acked;
    }
  });
  while (acked.load() < 500) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server.Kill(SIGKILL);
  const int acked_at_kill = acked.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(server.Start());
  writer.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;
  EXPECT_LT(acked_at_kill, kPlacements) << "the kill came after the burst; nothing was tested";
  EXPECT_GE(store.reconnects(), 1);
  auto all = store.ListPlacements();
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), static_cast<size_t>(kPlacements));
  std::map<std::string, PlacementRecord> by_id;
  for (auto& p : *all) by_id.emplace(p.workload, p);
  for (int i = 0; i < kPlacements; ++i) {
    const PlacementRecord want = Nth(i, kGpus, kNodes);
    ASSERT_EQ(by_id.at(want.workload), want);
  }
  for (int n = 0; n < kNodes; ++n) {
    for (int g = 0; g < kGpus; ++g) {
      auto u = store.GetPartition("GPU-node-" + std::to_string(n) + "-" + std::to_string(g));
      ASSERT_TRUE(u && u->has_value());
      ASSERT_EQ((*u)->used_milli, 1000);  // 4 × 250, once each
      ASSERT_EQ((*u)->used_memory_mib, 4096);
    }
  }
}

TEST(RedisStoreTest, AuthAndDatabaseIndexAreHonoured) {
  RedisProcess server("s3cret");
  if (!server.Available()) TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_REDIS_SERVER");
  ASSERT_TRUE(server.Start());
  RedisOptions o;
  o.port = server.port();
  o.prefix = "tessera:";
  o.password = "wrong";
  auto refused = RedisStore::Connect(o);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("AUTH"), std::string::npos) << refused.error().message;
  o.password = "s3cret";
  o.db = 3;
  auto db3 = RedisStore::Connect(o);
  ASSERT_TRUE(db3) << db3.error().message;
  o.db = 0;
  auto db0 = RedisStore::Connect(o);
  ASSERT_TRUE(db0) << db0.error().message;
  ASSERT_TRUE((*db3)->PutProfile("p", "in db 3"));
  EXPECT_EQ(*(*db3)->GetProfile("p"), std::optional<std::string>("in db 3"));
  EXPECT_EQ(*(*db0)->GetProfile("p"), std::nullopt);
}

TEST(RedisStoreTest, UnreachableServerIsAnErrorNamingIt) {
  RedisOptions o;
  o.port = testing_support::FreeLoopbackPort();  // nobody listens
  o.retry_budget_s = 0.2;
  auto s = RedisStore::Connect(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("127.0.0.1:" + std::to_string(o.port)), std::string::npos)
      << s.error().message;
}

// Ping, what the daemons' readiness asks: one attempt, an Error naming the server and the
// cause, and no retry budget spent (budget 30 s here; the test would wait that long if it were).
TEST(RedisStoreTest, PingNamesAnUnreachableServerWithoutRetrying) {
  RedisOptions o;
  o.port = testing_support::FreeLoopbackPort();  // nobody listens
  o.retry_budget_s = 30;
  auto s = RedisStore::Create(o);
  EXPECT_EQ(s->Name(), "redis 127.0.0.1:" + std::to_string(o.port) + "/0");
  auto ping = s->Ping();
  ASSERT_FALSE(ping);
  EXPECT_EQ(ping.error().message,
            "redis 127.0.0.1:" + std::to_string(o.port) + "/0: Connection refused");
}

TEST(RedisStoreTest, PingAnswersWhenTheServerDoes) {
  auto o = HarnessRedis();
  if (!o) TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_REDIS");
  auto s = RedisStore::Create(*o);
  EXPECT_TRUE(s->Ping().has_value());
}

TEST(RedisStoreTest, ParsesAddresses) {
  auto a = ParseRedisAddress("redis.local:6380/4");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "redis.local");
  EXPECT_EQ(a->port, 6380);
  EXPECT_EQ(a->db, 4);
  EXPECT_FALSE(ParseRedisAddress("nohost"));
  EXPECT_FALSE(ParseRedisAddress("h:99999"));
  EXPECT_FALSE(ParseRedisAddress("h:1/x"));
  // IPv6 in brackets, as in a URL (the brackets are not part of the host, which no resolver
  // would know with them); without them the address is ambiguous and refused.
  auto v6 = ParseRedisAddress("[::1]:6379");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6379);
  EXPECT_EQ(RedisStore::Create(*v6)->endpoint(), "redis [::1]:6379/0");
  auto url = ParseRedisAddress("redis://[fe80::1]:6380/2");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->host, "fe80::1");
  EXPECT_EQ(url->db, 2);
  EXPECT_FALSE(ParseRedisAddress("::1:6379"));
  EXPECT_FALSE(ParseRedisAddress("[::1:6379"));
  EXPECT_FALSE(ParseRedisAddress("[]:6379"));
}

}  // namespace
}  // namespace tessera::store
