#pragma once
// PredictionView: the predictor and the telemetry as the predicting policies (`predictive`,
// `slo-aware`) read them while scoring — one implementation of the lookups and caches they
// share, so neither copies the other:
//   - isolated(app, GPU model, MIG profile, MPS %): the predictor's cell for the configuration
//     key "<GPU>/<profile|whole>/<MPS %>" (predict/config_key.h); with `interpolate`, a share
//     the profile has no column for is read between the two nearest profiled shares of the
//     same partition, linearly in time per query against 1 / share (a query's SM-bound part
//     scales with 1 / share and its fixed part does not: exact for a roofline application);
//     never extrapolated outside the profiled shares;
//   - the relative uncertainty of that value, as a prediction interval for one new run: a cell
//     measured n ≥ 2 times, its run-to-run spread s (sample standard deviation over the mean)
//     × √(1 + 1/n); a cell measured once (no spread known; the completion may also move it)
//     or completed, the predictor's calibrated σ (`calibrated_sigma`), else
//     `completed_sigma` (also where the predictor has none: a row new since the last refit);
//   - f(victim, aggressor) on a shared partition: the predictor's, else the kind's mean;
//   - util(p): the telemetry's, else an empty partition 0 and an occupied one its MPS share,
//     cached while Telemetry::UtilizationVersion holds, or, where the telemetry names what
//     changed (UtilizationChangedSince), while the partition's own value holds;
//   - the workloads already on a partition (application, SLO, isolated rate, Σ f over the
//     others), cached per partition and invalidated by the partition's version counter and the
//     predictor's generation;
//   - for each MIG-capable model, the layout with the most instances that holds each profile.
// Not thread-safe; the predictor and telemetry must outlive it.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/cluster.h"
#include "policy/policy.h"
#include "predict/predictor.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {

// Can `part` give a new client `percent` % of its threads and the same share of its memory,
// and is that share at least `need_mib`?
inline bool ShareFits(const model::Partition& part, int percent, int64_t need_mib) {
  const int64_t memory = part.memory_mib * percent / 100;
  return percent * 10 <= part.free_milli() && memory <= part.free_memory_mib() &&
         need_mib <= memory;
}

// The predicting policies' Filter: the node is ready with the CPU and memory; then, for a
// workload outside their model (`predictable` false), NodeFits; otherwise some available GPU of
// an allowed model has a partition with a free share of one of `percents` that holds the
// workload's GPU memory, or (with `reshape`) is idle and MIG-capable (and may go to MIG).
Feasibility PredictingFilter(const model::Workload& w, model::NodeIndex node,
                             const model::ClusterState& c, bool predictable,
                             const std::vector<int>& percents, bool reshape);

// Every feasible node's options for an Explain (`options_of(node)` returns a vector), and into
// `filtered` one "  <node>: <reason>" line per node the policy's Filter refuses.
template <typename OptionsOf>
auto AllOptions(const Policy& policy, const model::Workload& w, const model::ClusterState& c,
                OptionsOf options_of, std::vector<std::string>& filtered) {
  decltype(options_of(model::NodeIndex{})) all;
  for (model::NodeIndex n = 0; n < c.node_count(); ++n) {
    const Feasibility f = policy.Filter(w, n, c);
    if (!f.ok()) {
      filtered.push_back("  " + c.node(n).name + ": " + std::string(f.reason));
      continue;
    }
    auto opts = options_of(n);
    all.insert(all.end(), std::make_move_iterator(opts.begin()),
               std::make_move_iterator(opts.end()));
  }
  return all;
}

// When a per-partition cache entry was filled: it holds while its partition's version
// (model::Partition::version) and the predictor's generation do (what the predicting policies'
// per-partition caches key on).
struct CacheStamp {
  uint64_t partition_version = 0;
  uint64_t generation = 0;
  bool valid = false;
  bool Holds(uint64_t partition, uint64_t gen) const {
    return valid && partition_version == partition && generation == gen;
  }
  void Set(uint64_t partition, uint64_t gen) { *this = {partition, gen, true}; }
};

// An Error naming `policy` when `options` sets `interference_kind` to a kind the predictor has
// no interference measurements of while it has some of another kind (a typo would otherwise
// score every pair as the unknown kind's: no interference at all). A predictor without any
// interference data takes every kind: it is a valid input.
[[nodiscard]] Expected<void> CheckInterferenceKind(std::string_view policy,
                                                   const predict::Predictor& predictor,
                                                   const nlohmann::json& options);

class PredictionView {
 public:
  struct Options {
    std::string interference_kind = "mps";
    bool interpolate = false;
    double completed_sigma = 0.10;
    // A cell run fewer than twice takes the predictor's calibrated σ (Predictor::SigmaAt);
    // false: `completed_sigma` for every such cell.
    bool calibrated_sigma = false;
  };
  PredictionView(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
                 Options options);

  const predict::Predictor& predictor() const { return predictor_; }
  const telemetry::Telemetry* telemetry() const { return telemetry_; }

  // A workload already on a partition, as far as a score needs it (independent of x).
  struct Member {
    model::WorkloadId id = 0;
    predict::AppId app = -1;  // -1: the predictor does not know its application
    double slo = 0;           // 0: it has none, so it is not scored (only an aggressor)
    double isolated = 0;      // NaN: no prediction for its configuration
    double sigma = 0;         // relative uncertainty of `isolated`
    double lost_base = 0;     // Σ f(y, z) over the other workloads already there
    int percent = 0;          // its MPS share (the client's milli / 10)
  };
  const std::vector<Member>& Members(model::PartitionIndex p, const model::ClusterState& c);

  // The application handle of `app` (-1 when empty or unknown).
  predict::AppId AppOf(const std::string& app);
  // The isolated rate (NaN when there is no prediction) and its relative uncertainty, read
  // with one configuration lookup.
  struct Prediction {
    double isolated = predict::kMissing;
    double sigma = 0;
  };
  Prediction At(predict::AppId app, model::GpuModelId gpu_model, int profile, int percent) {
    return Read(app, gpu_model, profile, percent, true);
  }
  // The isolated rate alone (no uncertainty is looked up).
  double Isolated(predict::AppId app, model::GpuModelId gpu_model, int profile, int percent) {
    return Read(app, gpu_model, profile, percent, false).isolated;
  }
  // Over the shares the profile has columns for, the highest prediction and the smallest
  // uncertainty: no share, profiled or interpolated, predicts more or is surer (max NaN when
  // there are none).
  struct Bounds {
    double max_isolated = predict::kMissing;
    double min_sigma = 0;
    int min_share = 101;  // the smallest profiled share: none below it is predicted
  };
  Bounds SharesBounds(predict::AppId app, model::GpuModelId gpu_model, int profile);
  // f(victim, aggressor): the predictor's, else the kind's mean (0 without interference data).
  double Lost(predict::AppId victim, predict::AppId aggressor) const;

  // Outside the model: first fit, scored 100 · (1 − the chosen partitions' mean util).
  std::optional<Candidate> FirstFitOffer(const model::Workload& w, model::NodeIndex node,
                                         const model::ClusterState& c) const;

  // Call once per node scored: reads the telemetry's utilisation version for CachedUtil.
  void BeginNode();
  // Telemetry::UtilizationVersion as BeginNode read it (nullopt: no telemetry, or no promise).
  std::optional<uint64_t> utilization_version() const { return util_version_; }
  double Util(const model::Partition& part) const;
  // Util, and whether the value is the telemetry's (else the fallback from the partition).
  std::pair<double, bool> UtilAndSource(const model::Partition& part) const;
  double CachedUtil(model::PartitionIndex p, const model::ClusterState& c);
  // What CachedUtil's answers for the partitions of GPUs [first, first + count) were read under:
  // while it is unchanged (and the partitions' versions hold), each returns what it returned
  // before. Read after BeginNode. nullopt: no promise (a telemetry without a utilisation
  // version), so CachedUtil is not cached either.
  struct UtilStamp {
    uint64_t epoch = 0;
    uint64_t changes = 0;
    bool operator==(const UtilStamp&) const = default;
  };
  std::optional<UtilStamp> UtilStampOf(model::GpuIndex first, int count) const;

  struct LayoutChoice {
    model::MigLayout layout;
    int slot = 0;
  };
  // [model][profile]: the layout with the most instances containing that profile, if any.
  static const std::vector<std::vector<std::optional<LayoutChoice>>>& Layouts();

 private:
  predict::ConfigId Config(model::GpuModelId gpu_model, int profile, int percent);
  // At, with the uncertainty only when `with_sigma` (else `completed_sigma`).
  Prediction Read(predict::AppId app, model::GpuModelId gpu_model, int profile, int percent,
                  bool with_sigma);
  // The profiled shares of (model, profile) just below and above `percent`, or nullopt.
  std::optional<std::pair<int, int>> Bracket(model::GpuModelId gpu_model, int profile, int percent);
  double CellSigma(predict::AppId app, predict::ConfigId config);

  const predict::Predictor& predictor_;
  const telemetry::Telemetry* telemetry_;
  Options options_;
  std::optional<int> kind_;

  struct PartitionCache {
    CacheStamp stamp;
    uint64_t built = 0;  // the partition's Partition::built when `members` were read
    std::vector<Member> members;
  };
  std::vector<PartitionCache> partitions_;
  // util(p) as read in epoch `epoch` (0: never read, or dropped by BeginNode): a telemetry
  // value holds while the partition is not cut again (`stamp` is its Partition::built), its
  // fallback while the partition's version holds (`stamp` is its Partition::version). Apart
  // from PartitionCache, so that a pass over every partition reads 32 bytes a partition.
  struct UtilCache {
    uint64_t epoch = 0;
    uint64_t stamp = 0;
    double util = 0;
    // util_index_ maps this partition's uuid while index_epoch holds util_index_epoch_ and the
    // partition is not cut again (indexed_built is its Partition::built when it was mapped).
    uint64_t indexed_built = 0;
    uint32_t index_epoch = 0;
    bool from_telemetry = false;
  };
  std::vector<UtilCache> utils_;
  std::vector<uint64_t> gpu_util_changes_;  // [GPU]: entries of its partitions BeginNode dropped
  std::vector<Member> scratch_members_;     // Members' previous entry while it rebuilds one

  // (model, profile + 1, MPS %) -> ConfigId, -1 absent, -2 not looked up yet; and the
  // profiled shares around it (Bracket), {-2, -2} not looked up yet, {-1, -1} none.
  static constexpr int kProfiles = 16, kPercents = 101;
  std::vector<int> config_ids_;
  std::vector<std::pair<int8_t, int8_t>> brackets_;
  // (model, profile + 1) -> the shares with a column, looked up once per column count.
  std::vector<std::optional<std::vector<int>>> profiled_;
  // SharesBounds by (app, model, profile + 1), valid for the predictor's generation.
  std::vector<std::optional<Bounds>> bounds_;
  std::optional<uint64_t> bounds_generation_;
  // CellSigma by (app, config), NaN until computed; valid for `sigma_generation_`.
  std::vector<double> cell_sigma_;
  std::optional<uint64_t> sigma_generation_;
  int configs_seen_ = -1;

  std::optional<uint64_t> util_version_;  // the telemetry's utilisation version (BeginNode)
  // CachedUtil's entries hold while they carry util_epoch_; BeginNode moves it when the
  // telemetry's utilisation version moved and cannot say what changed, else drops only the
  // entries of the uuids that changed (util_index_: the partition each uuid was read for).
  uint64_t util_epoch_ = 1;
  std::optional<uint64_t> util_synced_;  // the utilisation version the entries reflect
  telemetry::UuidMap<model::PartitionIndex> util_index_;
  uint32_t util_index_epoch_ = 1;               // moves whenever util_index_ is cleared
  std::vector<std::string_view> util_changed_;  // scratch

  // The last application looked up (handles never change once assigned).
  std::string app_key_;
  predict::AppId app_ = -1;
};

}  // namespace tessera::policy
