#pragma once
// TouchJournal: the nodes a ClusterState touched (moved their Node::version), newest last, so
// that a reader who kept something per node can revisit only the nodes that changed since it
// last looked instead of comparing every node's version (the core's kept rankings, issue #39).
//
// Contract: Since(mark) lists every node touched after `mark` was taken from this journal
// (with repeats, oldest first), or says false — the mark is another journal's (a copy, an
// assignment: each gets a fresh identity and starts empty) or older than the last kCapacity
// touches — and the reader must then revisit every node. A node absent from the list kept its
// version. Not thread-safe, as ClusterState.

#include <atomic>
#include <cstdint>
#include <vector>

namespace tessera::model {

class TouchJournal {
 public:
  static constexpr uint64_t kCapacity = 8192;
  struct Mark {
    uint64_t journal = 0;  // 0: no journal's (a reader that never looked)
    uint64_t touches = 0;
  };

  TouchJournal() : id_(NextId()) {}
  TouchJournal(const TouchJournal&) : id_(NextId()) {}
  TouchJournal& operator=(const TouchJournal&) {
    Reset();
    return *this;
  }
  TouchJournal(TouchJournal&&) noexcept : id_(NextId()) {}
  TouchJournal& operator=(TouchJournal&&) noexcept {
    Reset();
    return *this;
  }

  void Add(int32_t node) {
    if (ring_.size() < kCapacity) {
      ring_.push_back(node);  // touch t sits at t % kCapacity from the start
    } else {
      ring_[touches_ % kCapacity] = node;
    }
    ++touches_;
  }
  Mark mark() const { return {id_, touches_}; }
  // Appends to `out` the nodes touched since `m`; false (nothing appended) when it cannot.
  bool Since(Mark m, std::vector<int32_t>& out) const {
    if (m.journal != id_ || m.touches > touches_ || touches_ - m.touches > kCapacity) return false;
    for (uint64_t t = m.touches; t < touches_; ++t) out.push_back(ring_[t % kCapacity]);
    return true;
  }

 private:
  static uint64_t NextId() {
    static std::atomic<uint64_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  void Reset() {
    id_ = NextId();
    touches_ = 0;
    ring_.clear();
  }

  uint64_t id_;
  uint64_t touches_ = 0;
  std::vector<int32_t> ring_;  // grown to kCapacity, then reused: touch t at t % kCapacity
};

}  // namespace tessera::model
