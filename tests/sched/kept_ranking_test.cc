// KeptRanking (issue #39) by hand: a cluster of four nodes rated from a table the test writes,
// so that every Best() and every reason count below is read off that table.
#include "sched/kept_ranking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/cluster.h"
#include "model/gpu_model.h"

namespace tessera::sched {
namespace {

using model::NodeIndex;

constexpr std::string_view kFull = "no GPU left", kCpu = "not enough CPU";

class KeptRankingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n = 0; n < 4; ++n) {
      ASSERT_TRUE(c_.AddNode(
          model::UniformNode("n" + std::to_string(n), *model::FindGpuModel("T4"), 1, 8000, 65536)));
    }
  }
  // Rates the nodes from table_ (a missing node: no GPU left), counting the calls.
  void Sync() {
    ranking_.Sync(c_, [this](NodeIndex n) -> KeptRanking::Rating {
      ++rated_[n];
      auto it = table_.find(n);
      if (it == table_.end()) return {std::nullopt, kFull};
      return it->second;
    });
  }
  // Moves node n's version, as a placement on it would.
  void Touch(NodeIndex n) { c_.SetNodeReady(n, c_.node(n).ready); }
  std::vector<std::pair<std::string_view, int>> Reasons() const {
    std::vector<std::pair<std::string_view, int>> out;
    ranking_.Reasons(out);
    std::sort(out.begin(), out.end());
    return out;
  }

  model::ClusterState c_;
  KeptRanking ranking_;
  std::map<NodeIndex, KeptRanking::Rating> table_;
  std::map<NodeIndex, int> rated_;
};

TEST_F(KeptRankingTest, TheHighestScoreWinsAndTheLowerNodeAmongEqualOnes) {
  table_ = {{0, {5.0, {}}}, {1, {7.0, {}}}, {2, {7.0, {}}}, {3, {std::nullopt, kCpu}}};
  Sync();
  EXPECT_EQ(ranking_.Best(), 1);  // 7 on nodes 1 and 2: the lower
  EXPECT_FALSE(ranking_.unusable());
  EXPECT_EQ(rated_, (std::map<NodeIndex, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
}

TEST_F(KeptRankingTest, OnlyTouchedNodesAreRatedAgain) {
  table_ = {{0, {5.0, {}}}, {1, {7.0, {}}}, {2, {6.0, {}}}, {3, {4.0, {}}}};
  Sync();
  rated_.clear();
  Sync();  // nothing changed
  EXPECT_TRUE(rated_.empty());
  EXPECT_EQ(ranking_.Best(), 1);

  // Node 1 drops to 3: node 2's 6 is the best now; only node 1 was asked.
  table_[1] = {3.0, {}};
  Touch(1);
  Touch(1);  // touched twice, rated once
  Sync();
  EXPECT_EQ(rated_, (std::map<NodeIndex, int>{{1, 1}}));
  EXPECT_EQ(ranking_.Best(), 2);

  // Node 3 rises to 6, tying node 2: the lower node, 2, keeps it; then to 9: node 3.
  table_[3] = {6.0, {}};
  Touch(3);
  Sync();
  EXPECT_EQ(ranking_.Best(), 2);
  table_[3] = {9.0, {}};
  Touch(3);
  Sync();
  EXPECT_EQ(ranking_.Best(), 3);

  // A node that changed but whose table did not is rated again all the same (it cannot know).
  rated_.clear();
  Touch(0);
  Sync();
  EXPECT_EQ(rated_, (std::map<NodeIndex, int>{{0, 1}}));
  EXPECT_EQ(ranking_.Best(), 3);
}

TEST_F(KeptRankingTest, WithNoOfferEveryNodeIsCountedByItsReason) {
  table_ = {{0, {std::nullopt, kCpu}}, {2, {std::nullopt, kCpu}}};  // 1 and 3: no GPU left
  Sync();
  EXPECT_EQ(ranking_.Best(), std::nullopt);
  EXPECT_EQ(Reasons(), (std::vector<std::pair<std::string_view, int>>{{kFull, 2}, {kCpu, 2}}));

  // Node 2 now offers: the reasons count the three others; then it is full again.
  table_[2] = {1.0, {}};
  Touch(2);
  Sync();
  EXPECT_EQ(ranking_.Best(), 2);
  EXPECT_EQ(Reasons(), (std::vector<std::pair<std::string_view, int>>{{kFull, 2}, {kCpu, 1}}));
  table_.erase(2);
  Touch(2);
  Sync();
  EXPECT_EQ(ranking_.Best(), std::nullopt);
  EXPECT_EQ(Reasons(), (std::vector<std::pair<std::string_view, int>>{{kFull, 3}, {kCpu, 1}}));
}

TEST_F(KeptRankingTest, ANanScoreMakesItUnusableUntilItIsRatedAway) {
  table_ = {{0, {5.0, {}}}, {1, {std::numeric_limits<double>::quiet_NaN(), {}}}};
  Sync();
  EXPECT_TRUE(ranking_.unusable());
  table_[1] = {2.0, {}};
  Touch(1);
  Sync();
  EXPECT_FALSE(ranking_.unusable());
  EXPECT_EQ(ranking_.Best(), 0);
}

TEST_F(KeptRankingTest, AJournalThatNoLongerReachesBackRatesEveryNode) {
  table_ = {{0, {5.0, {}}}, {1, {7.0, {}}}, {2, {6.0, {}}}, {3, {4.0, {}}}};
  Sync();
  rated_.clear();
  for (uint64_t i = 0; i <= model::TouchJournal::kCapacity; ++i) Touch(0);
  Sync();
  EXPECT_EQ(rated_, (std::map<NodeIndex, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(ranking_.Best(), 1);

  // Another state (a copy) has another journal: every node again.
  rated_.clear();
  model::ClusterState copy = c_;
  ranking_.Sync(copy, [this](NodeIndex n) -> KeptRanking::Rating {
    ++rated_[n];
    return table_.at(n);
  });
  EXPECT_EQ(rated_.size(), 4u);
}

TEST(TouchJournalTest, ListsTheTouchesSinceAMarkOfItsOwn) {
  model::TouchJournal j;
  j.Add(3);
  const model::TouchJournal::Mark m = j.mark();
  j.Add(1);
  j.Add(3);
  std::vector<int32_t> out;
  ASSERT_TRUE(j.Since(m, out));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 3}));

  model::TouchJournal copy = j;  // a copy starts a journal of its own
  out.clear();
  EXPECT_FALSE(copy.Since(m, out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(j.Since(model::TouchJournal::Mark{}, out));  // a reader that never looked

  // Past the ring's capacity the oldest mark no longer reaches back.
  const model::TouchJournal::Mark late = j.mark();
  for (uint64_t i = 0; i < model::TouchJournal::kCapacity; ++i) j.Add(static_cast<int32_t>(i));
  EXPECT_TRUE(j.Since(late, out));
  EXPECT_EQ(out.size(), model::TouchJournal::kCapacity);
  EXPECT_EQ(out.back(), static_cast<int32_t>(model::TouchJournal::kCapacity - 1));
  j.Add(7);
  out.clear();
  EXPECT_FALSE(j.Since(late, out));
}

}  // namespace
}  // namespace tessera::sched
