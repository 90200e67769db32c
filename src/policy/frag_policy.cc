#include "policy/frag_policy.h"

#include <algorithm>
#include <array>

#include "policy/fit.h"

namespace tessera::policy {
namespace {

// The first partition of GPU g that takes w's share, or -1.
model::PartitionIndex ShareOn(const Workload& w, const ClusterState& c, GpuIndex g) {
  const model::Gpu& gpu = c.gpu(g);
  for (int slot = 0; slot < gpu.partition_count; ++slot) {
    const model::PartitionIndex p = ClusterState::PartitionOf(g, slot);
    if (PartitionFits(w, gpu, c.partition(p))) return p;
  }
  return -1;
}

}  // namespace

FragmentationPolicy::FragmentationPolicy(ShapeDistribution typical)
    : typical_(std::move(typical)), learn_online_(typical_.empty()) {}

void FragmentationPolicy::ResetCaches() {
  offers_.clear();
  shapes_.clear();
  node_frag_.clear();
  last_shape_id_ = -1;
  last_workload_ = nullptr;
}

void FragmentationPolicy::Learn(const Workload& w) {
  if (!learned_ids_.insert(w.id).second) return;
  const PodShape s = ShapeOf(w);
  auto it = std::find_if(learned_counts_.begin(), learned_counts_.end(),
                         [&](const PodShape& x) { return x.SameShape(s); });
  if (it == learned_counts_.end()) {
    learned_counts_.push_back(s);
    learned_counts_.back().weight = 1;
  } else {
    it->weight += 1;
  }
  typical_ = ShapeDistribution::TypicalFromCounts(learned_counts_, 0.95);
  ResetCaches();
  TypicalChanged();
}

int FragmentationPolicy::ShapeId(const Workload& w) {
  // The core asks about one workload on every node in turn: its shape is known after the first
  // (the same object, id and request; ShapeOf builds a model mask).
  if (&w == last_workload_ && w.id == last_workload_id_ && last_shape_id_ >= 0 &&
      w.cpu_milli == last_shape_.shape.cpu_milli && w.gpu.count == last_shape_.shape.gpu_count &&
      w.gpu.memory_mib == last_shape_.gpu_memory_mib) {
    return last_shape_id_;
  }
  const ShapeKey s{ShapeOf(w), w.gpu.memory_mib, w.gpu.mig_profile};
  last_workload_ = &w;
  last_workload_id_ = w.id;
  if (last_shape_id_ >= 0 && s == last_shape_) return last_shape_id_;
  auto it = std::find(shapes_.begin(), shapes_.end(), s);
  last_shape_id_ = static_cast<int>(it - shapes_.begin());
  if (it == shapes_.end()) {
    shapes_.push_back(s);
    offers_.emplace_back();
  }
  last_shape_ = s;
  return last_shape_id_;
}

double FragmentationPolicy::FragOf(NodeIndex node, const ClusterState& c) {
  if (node_frag_.size() < static_cast<size_t>(c.node_count())) node_frag_.resize(c.node_count());
  NodeFrag& f = node_frag_[node];
  const uint64_t version = c.node(node).version;
  if (f.version != version) {
    f.frag = FragmentMilli(NodeFreeOf(c, node), typical_);
    f.version = version;
  }
  return f.frag;
}

FragmentationPolicy::Offer FragmentationPolicy::Evaluate(const Workload& w, NodeIndex node,
                                                         const ClusterState& c) {
  Offer offer;
  offer.version = c.node(node).version;
  const double before = FragOf(node, c);
  const NodeFree free = NodeFreeOf(c, node);
  const model::Node& n = c.node(node);
  if (w.gpu.sharing() && w.gpu.mig_profile.empty()) {
    // Every fitting GPU; GPUs with the same free share and model give the same fragment, so
    // only the first of them is evaluated (the first wins ties anyway).
    std::array<model::PartitionIndex, kMaxFragGpus> share_on;
    for (int i = 0; i < free.gpus; ++i) share_on[i] = ShareOn(w, c, n.first_gpu + i);
    for (int i = 0; i < free.gpus; ++i) {
      const model::PartitionIndex p = share_on[i];
      if (p < 0) continue;
      bool seen = false;
      for (int j = 0; j < i && !seen; ++j) {
        seen = free.free_milli[j] == free.free_milli[i] && free.model[j] == free.model[i] &&
               share_on[j] >= 0;
      }
      if (seen) continue;
      NodeFree after = free;
      after.cpu_milli -= w.cpu_milli;
      after.free_milli[i] = std::max(0, after.free_milli[i] - w.gpu.milli);
      const double frag_after = FragmentMilli(after, typical_);
      const double score = Rate(before, frag_after, free, after);
      if (!offer.ok || score > offer.score) {
        offer.ok = true;
        offer.score = score;
        offer.gpu = i;
        offer.slices = 1;
        offer.slice = SliceFor(w, p, c.partition(p));
      }
    }
    return offer;
  }
  std::optional<Placement> p = FirstFitPlacement(w, node, c);
  if (!p) return offer;
  NodeFree after = free;
  after.cpu_milli -= w.cpu_milli;
  for (const model::Slice& s : p->slices) {
    const model::Partition& part = c.partition(s.partition);
    const int i = part.gpu - n.first_gpu;
    if (i < kMaxFragGpus) {
      after.free_milli[i] = std::max<int32_t>(
          0, after.free_milli[i] - static_cast<int32_t>(s.milli * part.compute_share + 0.5));
    }
  }
  offer.ok = true;
  offer.score = Rate(before, FragmentMilli(after, typical_), free, after);
  if (p->slices.size() <= 1) {
    offer.slices = static_cast<int8_t>(p->slices.size());
    if (offer.slices == 1) offer.slice = p->slices[0];
  }
  return offer;
}

std::optional<Candidate> FragmentationPolicy::Score(const Workload& w, NodeIndex node,
                                                    const ClusterState& c) {
  Candidate cand;
  if (!ScoreInto(w, node, c, cand)) return std::nullopt;
  return cand;
}

bool FragmentationPolicy::ScoreInto(const Workload& w, NodeIndex node, const ClusterState& c,
                                    Candidate& out) {
  if (learn_online_) Learn(w);
  const int id = ShapeId(w);
  std::vector<Offer>& offers = offers_[id];
  if (offers.size() < static_cast<size_t>(c.node_count())) offers.resize(c.node_count());
  Offer& offer = offers[node];
  if (offer.version != c.node(node).version || offer.version == 0) {
    offer = Evaluate(w, node, c);
  }
  if (!offer.ok) return false;
  if (offer.slices >= 0) {
    out.placement.workload = w.id;
    out.placement.node = node;
    out.placement.slices.assign(offer.slices, offer.slice);
  } else if (!FirstFitInto(w, node, c, out.placement)) {
    return false;
  }
  out.score = offer.score;
  out.reshape.reset();
  out.resizes.clear();
  return true;
}

}  // namespace tessera::policy
