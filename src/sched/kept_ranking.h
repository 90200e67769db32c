#pragma once
// KeptRanking: one request shape's nodes ranked by their offers — the highest score first, the
// lower node among equal scores, the choice of the core's scan in node order under the
// lowest-node tie rule — kept across decisions for a policy whose offer on a node follows that
// node's state alone (Policy::OfferInputs::node_local_score). Sync re-rates only the nodes the
// cluster touched since the last Sync (ClusterState::NodesTouchedSince), so a decision costs
// the nodes that changed, not every node (issue #39: the openb replay asked 1,213 nodes for
// each of its 8,152 arrivals while one node changed between them).
//
// Contract: after Sync(c, rate), Best() is the node the scan would choose, and Reasons() the
// scan's count of refusals by reason, given that rate(n) — Filter and Score on node n: a
// score, or the reason it has none — depends on n's state alone.
// The nodes are the leaves of a tournament tree: a re-rated node replays its path to the root
// (log₂ nodes comparisons), the root is the best. A NaN score makes the ranking unusable
// while it lasts (the caller scans): the scan's comparisons are not an order then. Not
// thread-safe.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "model/cluster.h"

namespace tessera::sched {

class KeptRanking {
 public:
  // A node's rating: its offer's score, or why it has none.
  struct Rating {
    std::optional<double> score;
    std::string_view reason;
  };
  // Bytes kept (≈ 32 per node).
  size_t bytes() const {
    return version_.size() * (sizeof(uint64_t) + sizeof(double) + 1) + tree_.size() * 4;
  }

  template <typename Rate>
  void Sync(const model::ClusterState& c, Rate&& rate) {
    const size_t nodes = static_cast<size_t>(c.node_count());
    touched_.clear();
    const bool incremental = version_.size() == nodes && c.NodesTouchedSince(mark_, touched_);
    mark_ = c.touch_mark();
    if (!incremental) {
      Reset(nodes);
      for (model::NodeIndex n = 0; n < static_cast<model::NodeIndex>(nodes); ++n) {
        Rate1(c, n, rate);
      }
      for (size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = Winner(tree_[2 * i], tree_[2 * i + 1]);
      return;
    }
    for (model::NodeIndex n : touched_) {
      if (version_[n] == c.node(n).version) continue;
      Rate1(c, n, rate);
      // Up the path while n won or wins there: above a slot whose winner is another node,
      // before and after, nothing changed.
      for (size_t i = (leaves_ + n) / 2; i >= 1; i /= 2) {
        const int32_t was = tree_[i];
        tree_[i] = Winner(tree_[2 * i], tree_[2 * i + 1]);
        if (was != n && tree_[i] != n) break;
      }
    }
  }

  // A NaN score was rated, or more reasons than kept, since the last full Sync: Best() and
  // Reasons() are not the scan's.
  bool unusable() const { return nans_ > 0 || overflow_; }
  // The best node after Sync; nullopt when no node offers.
  std::optional<model::NodeIndex> Best() const {
    if (tree_.size() < 2) return std::nullopt;
    const int32_t top = tree_[1];
    if (top < 0 || !Offers(top)) return std::nullopt;
    return top;
  }
  // The nodes without an offer, counted by reason (every node when Best() is nullopt).
  void Reasons(std::vector<std::pair<std::string_view, int>>& out) const {
    for (size_t r = 0; r < names_.size(); ++r) {
      if (counts_[r] > 0) out.emplace_back(names_[r], counts_[r]);
    }
  }

 private:
  // state_: the node offers nothing (its reason is kReason + the reason's index), a score, or
  // a NaN score.
  static constexpr uint8_t kNone = 0, kOffer = 1, kNan = 2, kReason = 3;
  static constexpr size_t kMaxReasons = 256 - kReason;

  void Reset(size_t nodes) {
    leaves_ = 1;
    while (leaves_ < std::max<size_t>(nodes, 1)) leaves_ *= 2;
    version_.assign(nodes, 0);
    score_.assign(nodes, 0);
    state_.assign(nodes, kNone);
    nans_ = 0;
    overflow_ = false;
    names_.clear();
    counts_.clear();
    tree_.assign(2 * leaves_, -1);
    for (size_t n = 0; n < nodes; ++n) tree_[leaves_ + n] = static_cast<int32_t>(n);
  }
  // The better of two nodes (-1: none): an offer beats none, then the higher score, then the
  // lower node — the scan's choice under the lowest-node tie rule.
  bool Offers(int32_t n) const { return state_[n] == kOffer || state_[n] == kNan; }
  int32_t Winner(int32_t a, int32_t b) const {
    if (b < 0 || !Offers(b)) return a;
    if (a < 0 || !Offers(a)) return b;
    return score_[b] > score_[a] ? b : a;  // a < b always: the left subtree's nodes are lower
  }
  template <typename Rate>
  void Rate1(const model::ClusterState& c, model::NodeIndex n, Rate& rate) {
    version_[n] = c.node(n).version;
    const Rating r = rate(n);
    uint8_t& state = state_[n];
    if (state == kNan) --nans_;
    if (state >= kReason) --counts_[state - kReason];
    score_[n] = r.score.value_or(0);
    if (r.score) {
      state = std::isnan(*r.score) ? kNan : kOffer;
      if (state == kNan) ++nans_;
    } else {
      state = static_cast<uint8_t>(kReason + ReasonIndex(r.reason));
      ++counts_[state - kReason];
    }
  }
  // Reasons are a few static strings: compared by address first, as the core's CountReason.
  size_t ReasonIndex(std::string_view reason) {
    for (size_t i = 0; i < names_.size(); ++i) {
      if ((names_[i].data() == reason.data() && names_[i].size() == reason.size()) ||
          names_[i] == reason) {
        return i;
      }
    }
    if (names_.size() == kMaxReasons) {
      overflow_ = true;  // counted under the last reason; the caller scans instead
      return kMaxReasons - 1;
    }
    names_.push_back(reason);
    counts_.push_back(0);
    return names_.size() - 1;
  }

  model::TouchJournal::Mark mark_;
  size_t leaves_ = 0;              // a power of two ≥ the nodes
  std::vector<uint64_t> version_;  // per node: the version it was rated at
  std::vector<double> score_;      // per node: its offer's score
  std::vector<uint8_t> state_;     // per node: kNone, kOffer, kNan or kReason + reason
  size_t nans_ = 0;
  bool overflow_ = false;
  std::vector<std::string_view> names_;  // the reasons seen
  std::vector<int> counts_;              // per reason: the nodes it refuses now
  std::vector<int32_t> tree_;            // a tournament: slot i's winner; leaves at leaves_ + node
  std::vector<model::NodeIndex> touched_;
};

}  // namespace tessera::sched
