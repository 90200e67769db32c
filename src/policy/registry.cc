#include "policy/registry.h"

#include <functional>

#include "policy/best_fit.h"
#include "policy/dot_product.h"
#include "policy/fgd.h"
#include "policy/first_fit.h"
#include "policy/frag_pack.h"
#include "policy/gpu_clustering.h"
#include "policy/gpu_packing.h"
#include "policy/max.h"
#include "policy/min.h"
#include "policy/predictive.h"
#include "policy/random.h"
#include "policy/round_robin.h"
#include "policy/whole_gpu.h"

namespace tessera::policy {
namespace {

using Factory =
    std::function<Expected<std::unique_ptr<Policy>>(const PolicyContext&, const nlohmann::json&)>;
struct Entry {
  PolicyInfo info;
  Factory make;
};

template <typename P>
Factory NoOptions(const char* name) {
  return [name](const PolicyContext&,
                const nlohmann::json& options) -> Expected<std::unique_ptr<Policy>> {
    if (auto ok = RejectUnknownOptions(name, options, {}); !ok) return std::unexpected(ok.error());
    return std::make_unique<P>();
  };
}

Factory NeedsRng(const char* name) {
  return [name](const PolicyContext& context,
                const nlohmann::json& options) -> Expected<std::unique_ptr<Policy>> {
    if (auto ok = RejectUnknownOptions(name, options, {}); !ok) return std::unexpected(ok.error());
    if (context.rng == nullptr) return Fail("policy {}: needs a seeded Rng", name);
    return std::make_unique<RandomFit>(*context.rng);
  };
}

Factory MakePredictive() {
  return [](const PolicyContext& context,
            const nlohmann::json& options) -> Expected<std::unique_ptr<Policy>> {
    if (auto ok =
            RejectUnknownOptions("predictive", options,
                                 {"mps_percents", "reshape", "interference_kind", "slo_headroom"});
        !ok) {
      return std::unexpected(ok.error());
    }
    if (context.predictor == nullptr) {
      return Fail("policy predictive: needs a predictor (a profile matrix to predict from)");
    }
    PredictiveOptions o;
    try {
      if (options.contains("mps_percents")) {
        o.mps_percents = options.at("mps_percents").get<std::vector<int>>();
      }
      if (options.contains("reshape")) o.reshape = options.at("reshape").get<bool>();
      if (options.contains("slo_headroom")) {
        o.slo_headroom = options.at("slo_headroom").get<double>();
      }
      if (options.contains("interference_kind")) {
        o.interference_kind = options.at("interference_kind").get<std::string>();
      }
    } catch (const nlohmann::json::exception& e) {
      return Fail("policy predictive: bad option: {}", e.what());
    }
    if (!(o.slo_headroom >= 0 && o.slo_headroom <= 1)) {
      return Fail("policy predictive: slo_headroom {} is outside 0..1", o.slo_headroom);
    }
    if (o.mps_percents.empty()) return Fail("policy predictive: mps_percents is empty");
    for (int pct : o.mps_percents) {
      if (pct < 1 || pct > 100) {
        return Fail("policy predictive: MPS percentage {} is outside 1..100", pct);
      }
    }
    return std::make_unique<Predictive>(*context.predictor, context.telemetry, std::move(o));
  };
}

template <typename P>
Factory WithTypicalPods(const char* name) {
  return [name](const PolicyContext&,
                const nlohmann::json& options) -> Expected<std::unique_ptr<Policy>> {
    auto typical = TypicalPodsOption(name, options);
    if (!typical) return std::unexpected(typical.error());
    return std::make_unique<P>(std::move(*typical));
  };
}

const std::vector<Entry>& Registry() {
  static const std::vector<Entry> entries = {
      {{"predictive",
        "thesis Ch. 8.3: predicted QPS vs SLO score, MPS limits, idle-GPU MIG reshape", true},
       MakePredictive()},
      {{"first-fit", "first node and GPUs that fit, in cluster order (reference policy)"},
       NoOptions<FirstFit>("first-fit")},
      {{"whole-gpu", "Kubernetes default + NVIDIA device plugin: whole GPUs, first fit"},
       NoOptions<WholeGpu>("whole-gpu")},
      {{"max", "thesis Ch. 9.2.2: whole GPUs, MIG off, no MPS, one workload per GPU"},
       NoOptions<Max>("max")},
      {{"min", "thesis Ch. 9.2.1: smallest MIG instances, 25% MPS slots, one workload per slot"},
       NoOptions<Min>("min")},
      {{"round-robin", "thesis Ch. 9.2.3: smallest chunks in turn, equal 1/n MPS shares"},
       NoOptions<RoundRobin>("round-robin")},
      {{"random", "uniformly random feasible node and GPU (FGD paper §6.1 Random-fit)"},
       NeedsRng("random")},
      {{"best-fit", "least CPU+GPU left after placing (FGD paper §6.1 Best-fit)"},
       NoOptions<BestFit>("best-fit")},
      {{"dot-product", "Tetris alignment of free and requested CPU/GPU (FGD paper §6.1)"},
       NoOptions<DotProduct>("dot-product")},
      {{"gpu-packing", "shared GPUs, then used nodes, then idle nodes (FGD paper §6.1)"},
       NoOptions<GpuPacking>("gpu-packing")},
      {{"gpu-clustering", "nodes holding the same kind of GPU request (FGD paper §6.1)"},
       NoOptions<GpuClustering>("gpu-clustering")},
      {{"fgd", "least growth of expected fragmentation (FGD, ATC'23 §4.2)"},
       WithTypicalPods<Fgd>("fgd")},
      {{"frag-pack", "FGD with its ties broken by a look-ahead over the typical pods (Tessera)"},
       WithTypicalPods<FragPack>("frag-pack")},
  };
  return entries;
}

}  // namespace

Expected<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyContext& context,
                                             const nlohmann::json& options) {
  for (const Entry& e : Registry()) {
    if (e.info.name == name) return e.make(context, options);
  }
  std::string known;
  for (const Entry& e : Registry()) known += (known.empty() ? "" : ", ") + e.info.name;
  return Fail("unknown policy '{}' (known: {})", name, known);
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
                                    const std::vector<std::string>& known) {
  if (options.is_null()) return {};
  if (!options.is_object()) return Fail("policy {}: options must be a JSON object", policy);
  for (const auto& [key, value] : options.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Fail("policy {}: unknown option '{}'", policy, key);
    }
  }
  return {};
}

}  // namespace tessera::policy
