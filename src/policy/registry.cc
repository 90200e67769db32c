#include "policy/registry.h"

#include <algorithm>
#include <functional>

#include "policy/best_fit.h"
#include "policy/dot_product.h"
#include "policy/drmaestro.h"
#include "policy/fgd.h"
#include "policy/first_fit.h"
#include "policy/frag_pack.h"
#include "policy/gpu_clustering.h"
#include "policy/gpu_packing.h"
#include "policy/gpushare.h"
#include "policy/knots_cbp.h"
#include "policy/knots_pp.h"
#include "policy/knots_resag.h"
#include "policy/max.h"
#include "policy/min.h"
#include "policy/muxflow.h"
#include "policy/predictive.h"
#include "policy/random.h"
#include "policy/resource_aware.h"
#include "policy/round_robin.h"
#include "policy/slo_aware.h"
#include "policy/whole_gpu.h"

namespace tessera::policy {
namespace {

using Factory =
    std::function<Expected<std::unique_ptr<Policy>>(const PolicyContext&, const nlohmann::json&)>;
struct Entry {
  PolicyInfo info;
  Factory make;
};

// Factories see options whose keys the entry advertises (MakePolicy checked them).
template <typename P>
Factory NoOptions() {
  return [](const PolicyContext&, const nlohmann::json&) -> Expected<std::unique_ptr<Policy>> {
    return std::make_unique<P>();
  };
}

Expected<std::unique_ptr<Policy>> MakeRandom(const PolicyContext& context, const nlohmann::json&) {
  if (context.rng == nullptr) return Fail("policy random: needs a seeded Rng");
  return std::make_unique<RandomFit>(*context.rng);
}

template <typename P>
Factory WithTypicalPods(const char* name) {
  return [name](const PolicyContext& context,
                const nlohmann::json& options) -> Expected<std::unique_ptr<Policy>> {
    auto typical = TypicalPods(name, context, options);
    if (!typical) return std::unexpected(typical.error());
    return std::make_unique<P>(std::move(*typical));
  };
}

// The thesis's own policy, slo-aware and the related systems' (seeds 001-004).
std::vector<Entry> SeedEntries() {
  return {
      {{"predictive",
        "thesis Ch. 8.3: predicted QPS vs SLO score, MPS limits, idle-GPU MIG reshape", true,
        PredictiveOptionList()},
       MakePredictive},
      {{"slo-aware",
        "Ch. 8.3's score on a lower bound of predicted QPS, admission control (waits), finer MPS",
        true, SloAwareOptionList()},
       MakeSloAware},
      {{"muxflow",
        "001 §4–5: offline jobs beside online services: dynamic SM, memory quota, SysMonitor, "
        "max-weight matching",
        true,
        MuxflowOptionList(),
        /*allocates_compute=*/true,
        "online-offline",
        {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_USED"},
        /*batch=*/true},
       MakeMuxflow},
      {{"resource-aware",
        "003 §5: largest memory request first; resource-agnostic fit, CBP (percentile of use), "
        "peak prediction (AR(1))",
        false,
        ResourceAwareOptionList(),
        /*allocates_compute=*/false,
        "overprovision",
        {"tessera_pod_fb_used_mib"}},
       MakeResourceAware},
      {{"knots-resag",
        "004 resource-agnostic sharing: first-fit decreasing by requested GPU memory",
        false,
        {},
        /*allocates_compute=*/false,
        "overprovision"},
       NoOptions<KnotsResag>()},
      {{"knots-cbp",
        "004 CBP: FFD, pods sized at p90 of use, co-located only where use does not correlate",
        false,
        KnotsCbpOptionList(),
        /*allocates_compute=*/false,
        "overprovision",
        {"tessera_pod_fb_used_mib", "tessera_pod_sm_active", "tessera_pod_dram_active"}},
       MakeKnotsCbp},
      {{"knots-pp",
        "004 peak prediction: CBP, plus a correlated pod where AR(1) forecasts room 1 s ahead",
        false,
        KnotsPpOptionList(),
        /*allocates_compute=*/false,
        "overprovision",
        {"tessera_pod_fb_used_mib", "tessera_pod_sm_active", "tessera_pod_dram_active"}},
       MakeKnotsPp},
      {{"drmaestro",
        "002: two-phase min-cost flow (CPU/memory, then each GPU, local or remote), utility of "
        "run time vs goal, waiting counter",
        false,
        DrmaestroOptionList(),
        /*allocates_compute=*/true,
        "disaggregation",
        {},
        /*batch=*/true},
       MakeDrmaestro},
  };
}

// References and the thesis's baselines (Ch. 9.2).
std::vector<Entry> BaselineEntries() {
  return {
      {{"first-fit", "first node and GPUs that fit, in cluster order (reference policy)"},
       NoOptions<FirstFit>()},
      {{"whole-gpu", "Kubernetes default + NVIDIA device plugin: whole GPUs, first fit"},
       NoOptions<WholeGpu>()},
      {{"gpushare",
        "003's baseline, Alibaba's gpushare extender: GPUs shared by requested memory, binpack",
        false,
        {},
        /*allocates_compute=*/false,
        "overprovision"},
       NoOptions<Gpushare>()},
      {{"max", "thesis Ch. 9.2.2: whole GPUs, MIG off, no MPS, one workload per GPU"},
       NoOptions<Max>()},
      {{"min", "thesis Ch. 9.2.1: smallest MIG instances, 25% MPS slots, one workload per slot",
        false, MinOptionList()},
       MakeMin},
      {{"round-robin", "thesis Ch. 9.2.3: smallest chunks in turn, equal 1/n MPS shares", false,
        RoundRobinOptionList()},
       MakeRoundRobin},
  };
}

// The packing policies the FGD paper compares (§6.1), FGD and Tessera's frag-pack.
std::vector<Entry> PackingEntries() {
  return {
      {{"random", "uniformly random feasible node and GPU (FGD paper §6.1 Random-fit)"},
       MakeRandom},
      {{"best-fit", "least CPU+GPU left after placing (FGD paper §6.1 Best-fit)"},
       NoOptions<BestFit>()},
      {{"dot-product", "Tetris alignment of free and requested CPU/GPU (FGD paper §6.1)"},
       NoOptions<DotProduct>()},
      {{"gpu-packing", "shared GPUs, then used nodes, then idle nodes (FGD paper §6.1)"},
       NoOptions<GpuPacking>()},
      {{"gpu-clustering", "nodes holding the same kind of GPU request (FGD paper §6.1)"},
       NoOptions<GpuClustering>()},
      {{"fgd", "least growth of expected fragmentation (FGD, ATC'23 §4.2)", false,
        TypicalPodsOptionList()},
       WithTypicalPods<Fgd>("fgd")},
      {{"frag-pack",
        "FGD's fragment plus the GPU share CPU will strand, ties by a look-ahead (Tessera)", false,
        FragPackOptionList()},
       MakeFragPack},
  };
}

// Every policy, in the order --list-policies shows them.
const std::vector<Entry>& Registry() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> all;
    for (std::vector<Entry> group : {SeedEntries(), BaselineEntries(), PackingEntries()}) {
      for (Entry& e : group) all.push_back(std::move(e));
    }
    return all;
  }();
  return entries;
}

}  // namespace

Expected<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyContext& context,
                                             const nlohmann::json& options) {
  for (const Entry& e : Registry()) {
    if (e.info.name != name) continue;
    if (auto ok = RejectUnknownOptions(e.info.name, options, e.info.options); !ok) {
      return std::unexpected(ok.error());
    }
    return e.make(context, options);
  }
  std::string known;
  for (const Entry& e : Registry()) known += (known.empty() ? "" : ", ") + e.info.name;
  return Fail("unknown policy '{}' (known: {})", name, known);
}

Expected<void> CheckPolicyOptions(const PolicySpec& spec) {
  Rng rng(0);
  ManualClock clock;
  PolicyContext probe{.rng = &rng, .clock = &clock, .options_only = true};
  auto made = MakePolicy(spec.name, probe, spec.options);
  if (!made) return std::unexpected(made.error());
  return {};
}

Expected<PolicySpec> ParsePolicySpec(std::string_view text) {
  const size_t brace = text.find('{');
  PolicySpec spec{std::string(text.substr(0, brace)), nlohmann::json()};
  if (spec.name.empty()) return Fail("policy '{}': no name", text);
  if (brace != std::string_view::npos) {
    spec.options = nlohmann::json::parse(text.substr(brace), nullptr, /*allow_exceptions=*/false);
    if (spec.options.is_discarded() || !spec.options.is_object()) {
      return Fail("policy '{}': the options after the name must be one JSON object", text);
    }
  }
  return spec;
}

std::optional<PolicyInfo> FindPolicy(std::string_view name) {
  for (const Entry& e : Registry()) {
    if (e.info.name == name) return e.info;
  }
  return std::nullopt;
}

std::vector<PolicyInfo> Policies() {
  std::vector<PolicyInfo> out;
  for (const Entry& e : Registry()) out.push_back(e.info);
  return out;
}

Expected<void> RejectUnknownOptions(std::string_view policy, const nlohmann::json& options,
                                    const std::vector<OptionInfo>& known) {
  if (options.is_null()) return {};
  if (!options.is_object()) return Fail("policy {}: options must be a JSON object", policy);
  for (const auto& [key, value] : options.items()) {
    if (std::none_of(known.begin(), known.end(),
                     [&key](const OptionInfo& o) { return o.name == key; })) {
      std::string names;
      for (const OptionInfo& o : known) names += (names.empty() ? "" : ", ") + o.name;
      return Fail("policy {}: unknown option '{}' (it takes: {})", policy, key,
                  names.empty() ? "none" : names);
    }
  }
  return {};
}

Expected<void> OptionWithin(std::string_view policy, const char* key, double value, double lo,
                            double hi) {
  if (value >= lo && value <= hi) return {};
  return Fail("policy {}: option '{}': {} is outside {}..{}", policy, key, value, lo, hi);
}

}  // namespace tessera::policy
