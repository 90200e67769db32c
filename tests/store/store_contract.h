#pragma once
// The Store contract (store/store.h), written once and instantiated for every implementation:
// memory_store_test.cc (unit) and integration/redis_store_test.cc (a real redis-server).
// Include it in exactly one file per test binary.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "base/rng.h"
#include "store/store.h"
#include "store/store_fixtures.h"
#include "harness_env.h"

namespace tessera::store::contract {

// One implementation under test: its store, and a way to let `s` seconds of store time pass.
class Harness {
 public:
  virtual ~Harness() = default;
  virtual Store& store() = 0;
  virtual void Advance(double s) = 0;
};

struct Param {
  std::string name;
  // nullptr means "not available here" (the test skips).
  std::function<std::unique_ptr<Harness>()> make;
};
// GoogleTest prints a parameter in test listings (and so in CTest's names): its name, not the
// bytes of the struct.
inline void PrintTo(const Param& p, std::ostream* os) { *os << p.name; }

class StoreContract : public testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    harness_ = GetParam().make();
    if (!harness_) TESSERA_SKIP_WITHOUT_HARNESS(GetParam().name + " store");
  }
  Store& store() { return harness_->store(); }
  PartitionUsage Usage(const std::string& uuid) {
    auto u = store().GetPartition(uuid);
    EXPECT_TRUE(u.has_value()) << (u ? "" : u.error().message);
    if (!u || !u->has_value()) {
      ADD_FAILURE() << "no partition " << uuid;
      return {};
    }
    return **u;
  }
  PutOutcome Put(const PlacementRecord& p) {
    auto r = store().PutPlacement(p);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
    return r.value_or(PutOutcome{});
  }
  std::unique_ptr<Harness> harness_;
};

TEST_P(StoreContract, InventoryRoundTripsAndListsNodesSorted) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("node-b")));
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("node-a")));
  auto got = store().GetInventory("node-b");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, TwoGpuNode("node-b"));
  auto none = store().GetInventory("node-z");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  auto nodes = store().ListNodes();
  ASSERT_TRUE(nodes);
  EXPECT_EQ(*nodes, (std::vector<std::string>{"node-a", "node-b"}));
  // Partitions carry the inventory's capacities and start empty.
  EXPECT_EQ(Usage("MIG-node-a-0a"), (PartitionUsage{"MIG-node-a-0a", "node-a", 20480, 0, 0, true}));
  EXPECT_EQ(Usage("GPU-node-a-1").memory_mib, 24576);
}

TEST_P(StoreContract, PlacementsAccountMilliAndMemoryAndRefuseOvercommit) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  EXPECT_TRUE(Put(Place("w1", "n", {{"MIG-n-0a", 500, 8192}})).applied);
  EXPECT_TRUE(Put(Place("w2", "n", {{"MIG-n-0a", 500, 8192}})).applied);
  EXPECT_EQ(Usage("MIG-n-0a").used_milli, 1000);
  EXPECT_EQ(Usage("MIG-n-0a").used_memory_mib, 16384);
  // 1000 + 1 milli > 1000.
  PutOutcome o = Put(Place("w3", "n", {{"MIG-n-0a", 1, 0}}));
  EXPECT_FALSE(o.applied);
  EXPECT_NE(o.refusal.find("milli"), std::string::npos) << o.refusal;
  // Memory: the 2g.10gb holds 10240 MiB; 6000 fits, another 6000 (12000 > 10240) does not.
  EXPECT_TRUE(Put(Place("w4", "n", {{"MIG-n-0b", 100, 6000}})).applied);
  o = Put(Place("w5", "n", {{"MIG-n-0b", 100, 6000}}));
  EXPECT_FALSE(o.applied);
  EXPECT_NE(o.refusal.find("MiB"), std::string::npos) << o.refusal;
  EXPECT_EQ(Usage("MIG-n-0b"), (PartitionUsage{"MIG-n-0b", "n", 10240, 100, 6000, true}));
  auto none = store().GetPlacement("w5");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

TEST_P(StoreContract, MultiSlicePlacementIsAllOrNothing) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  ASSERT_TRUE(Put(Place("big", "n", {{"GPU-n-1", 800, 20000}})).applied);
  // The first slice fits, the second (800 + 300 > 1000) does not: nothing may change.
  const PlacementRecord two = Place("two", "n", {{"MIG-n-0a", 300, 1000}, {"GPU-n-1", 300, 1000}});
  EXPECT_FALSE(Put(two).applied);
  EXPECT_EQ(Usage("MIG-n-0a").used_milli, 0);
  EXPECT_EQ(Usage("MIG-n-0a").used_memory_mib, 0);
  EXPECT_EQ(Usage("GPU-n-1").used_milli, 800);
  // A slice on an unknown partition refuses the whole placement too.
  EXPECT_FALSE(Put(Place("ghost", "n", {{"MIG-n-0a", 100, 0}, {"MIG-nope", 100, 0}})).applied);
  EXPECT_EQ(Usage("MIG-n-0a").used_milli, 0);
  auto all = store().ListPlacements();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].workload, "big");
}

TEST_P(StoreContract, RewritingTheSamePlacementIsIdempotent) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  const PlacementRecord p = Place("w", "n", {{"GPU-n-1", 250, 4096}});
  PutOutcome first = Put(p);
  EXPECT_TRUE(first.applied);
  EXPECT_FALSE(first.already);
  PutOutcome again = Put(p);
  EXPECT_TRUE(again.applied);
  EXPECT_TRUE(again.already);
  EXPECT_EQ(Usage("GPU-n-1").used_milli, 250);  // counted once
  // A different placement under the same id is refused until the first is removed.
  EXPECT_FALSE(Put(Place("w", "n", {{"MIG-n-0a", 100, 0}})).applied);
  auto got = store().GetPlacement("w");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, p);
}

TEST_P(StoreContract, RemoveReleasesTheAccounting) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  ASSERT_TRUE(Put(Place("a", "n", {{"MIG-n-0a", 600, 10000}, {"GPU-n-1", 400, 2000}})).applied);
  ASSERT_TRUE(Put(Place("b", "n", {{"MIG-n-0a", 400, 10000}})).applied);
  auto removed = store().RemovePlacement("a");
  ASSERT_TRUE(removed);
  EXPECT_TRUE(*removed);
  EXPECT_EQ(Usage("MIG-n-0a"), (PartitionUsage{"MIG-n-0a", "n", 20480, 400, 10000, true}));
  EXPECT_EQ(Usage("GPU-n-1").used_milli, 0);
  auto again = store().RemovePlacement("a");
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
  // The freed 600 milli can be placed again.
  EXPECT_TRUE(Put(Place("c", "n", {{"MIG-n-0a", 600, 10480}})).applied);
}

// A best-effort slice (muxflow's offline job) reserves no compute: placing and removing it
// moves only the memory (Redis: removing 0 milli must not send HINCRBY "-0", which it refuses).
TEST_P(StoreContract, ABestEffortSliceReservesNoComputeAndIsRemovedCleanly) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  ASSERT_TRUE(Put(Place("svc", "n", {{"GPU-n-1", 1000, 9000}})).applied);
  SliceRecord job{"GPU-n-1", 700, 6000};
  job.best_effort = true;
  ASSERT_TRUE(Put(Place("job", "n", {job})).applied);
  EXPECT_EQ(Usage("GPU-n-1").used_milli, 1000);
  EXPECT_EQ(Usage("GPU-n-1").used_memory_mib, 15000);
  auto removed = store().RemovePlacement("job");
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_TRUE(*removed);
  EXPECT_EQ(Usage("GPU-n-1").used_milli, 1000);
  EXPECT_EQ(Usage("GPU-n-1").used_memory_mib, 9000);
}

TEST_P(StoreContract, BadPlacementsAreErrorsNotRefusals) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  EXPECT_FALSE(store().PutPlacement(Place("z", "n", {{"GPU-n-1", 0, 0}})));
  EXPECT_FALSE(store().PutPlacement(Place("z", "n", {{"GPU-n-1", 1001, 0}})));
  EXPECT_FALSE(store().PutPlacement(Place("z", "n", {{"GPU-n-1", 10, 0}, {"GPU-n-1", 10, 0}})));
  EXPECT_FALSE(store().PutPlacement(Place("", "n", {})));
  EXPECT_EQ(Usage("GPU-n-1").used_milli, 0);
}

TEST_P(StoreContract, ReshapeDropsFreePartitionsAndKeepsHeldOnesNotPresent) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  ASSERT_TRUE(Put(Place("held", "n", {{"MIG-n-0b", 200, 1024}})).applied);
  // GPU 0 reshaped to one 7g.40gb; GPU 1 lost.
  NodeInventory inv = TwoGpuNode("n");
  inv.gpus[0].partitions = {{"MIG-n-0c", "7g.40gb", 0, 0, 40960}};
  inv.gpus[1].lost = true;
  ASSERT_TRUE(store().PutInventory(inv));
  auto gone = store().GetPartition("MIG-n-0a");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->has_value());          // nothing held it
  EXPECT_FALSE(Usage("MIG-n-0b").present);  // held: kept, but accepts nothing
  EXPECT_EQ(Usage("MIG-n-0b").used_milli, 200);
  EXPECT_FALSE(Put(Place("x", "n", {{"MIG-n-0b", 100, 0}})).applied);
  EXPECT_FALSE(Put(Place("y", "n", {{"GPU-n-1", 100, 0}})).applied);  // lost GPU
  EXPECT_TRUE(Put(Place("z", "n", {{"MIG-n-0c", 1000, 40960}})).applied);
  // Releasing the last holder of a vanished partition forgets it.
  ASSERT_TRUE(store().RemovePlacement("held"));
  auto forgotten = store().GetPartition("MIG-n-0b");
  ASSERT_TRUE(forgotten);
  EXPECT_FALSE(forgotten->has_value());
}

TEST_P(StoreContract, HeartbeatExpiresAfterItsTtl) {
  auto before = store().IsAlive("n");
  ASSERT_TRUE(before);
  EXPECT_FALSE(*before);
  ASSERT_TRUE(store().Heartbeat("n", 0.2));
  EXPECT_TRUE(*store().IsAlive("n"));
  harness_->Advance(0.4);
  EXPECT_FALSE(*store().IsAlive("n"));
}

TEST_P(StoreContract, LeaseIsExclusiveRenewableAndExpires) {
  auto a = store().TryAcquireLease("leader", "A", 0.3);
  ASSERT_TRUE(a);
  EXPECT_TRUE(*a);
  EXPECT_FALSE(*store().TryAcquireLease("leader", "B", 0.3));
  EXPECT_TRUE(*store().TryAcquireLease("leader", "A", 0.3));  // renew
  EXPECT_EQ(*store().LeaseHolder("leader"), std::optional<std::string>("A"));
  EXPECT_FALSE(*store().ReleaseLease("leader", "B"));
  harness_->Advance(0.5);
  EXPECT_EQ(*store().LeaseHolder("leader"), std::nullopt);
  EXPECT_TRUE(*store().TryAcquireLease("leader", "B", 0.3));
  EXPECT_TRUE(*store().ReleaseLease("leader", "B"));
  EXPECT_EQ(*store().LeaseHolder("leader"), std::nullopt);
}

TEST_P(StoreContract, ProfilesRoundTrip) {
  const std::string doc = R"({"rows":["resnet50"],"cols":["A30-24GB/1g.6gb/100"],"v":[12.5]})";
  ASSERT_TRUE(store().PutProfile("throughput", doc));
  EXPECT_EQ(*store().GetProfile("throughput"), std::optional<std::string>(doc));
  EXPECT_EQ(*store().GetProfile("absent"), std::nullopt);
}

// Property: after random puts and removes, each partition's accounting equals the sum over the
// placements read back, and never passes 1000 milli or its memory.
TEST_P(StoreContract, RandomOperationsKeepAccountingEqualToPlacements) {
  ASSERT_TRUE(store().PutInventory(TwoGpuNode("n")));
  const std::vector<std::string> parts = {"MIG-n-0a", "MIG-n-0b", "GPU-n-1"};
  Rng rng(7);
  for (int i = 0; i < 150; ++i) {
    const std::string id = "w" + std::to_string(rng.Below(30));
    if (rng.Uniform() < 0.35) {
      ASSERT_TRUE(store().RemovePlacement(id));
      continue;
    }
    std::vector<SliceRecord> slices;
    for (const auto& p : parts) {
      if (rng.Uniform() < 0.5) {
        slices.push_back(
            {p, static_cast<int32_t>(1 + rng.Below(600)), static_cast<int64_t>(rng.Below(12001))});
      }
    }
    ASSERT_TRUE(store().PutPlacement(Place(id, "n", slices)));
  }
  std::map<std::string, std::pair<int64_t, int64_t>> sum;
  auto all = store().ListPlacements();
  ASSERT_TRUE(all);
  for (const auto& p : *all) {
    for (const auto& s : p.slices) {
      sum[s.partition_uuid].first += s.milli;
      sum[s.partition_uuid].second += s.memory_mib;
    }
  }
  for (const auto& p : parts) {
    const PartitionUsage u = Usage(p);
    EXPECT_EQ(u.used_milli, sum[p].first) << p;
    EXPECT_EQ(u.used_memory_mib, sum[p].second) << p;
    EXPECT_LE(u.used_milli, 1000);
    EXPECT_LE(u.used_memory_mib, u.memory_mib);
  }
}

}  // namespace tessera::store::contract
