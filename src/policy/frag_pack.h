#pragma once
// frag-pack: Tessera's refinement of FGD (ATC'23 §4.2) for nodes whose CPU runs out before their
// GPUs do (docs/policies.md, "frag-pack"). Two terms beside FGD's fragment F:
//
//  - Stranding (option "stranding_weight" λ, default 1; 0 turns it off). The GPU share of a node
//    that its free CPU cannot feed, at the CPU the typical GPU pods bring per GPU milli:
//      S = max(0, G − C/ρ),   ρ = Σ_m p_m·cpu_m / Σ_m p_m·count_m·milli_m  (GPU shapes only),
//    G the node's free GPU milli, C its free CPU milli. FGD counts GPU share as fragment only
//    once a typical pod no longer fits; S counts what will be stranded once pods keep landing.
//    The node score is FGD's with S in the fragment: ⌊sigmoid((F + λS)_before − (F + λS)_after)
//    / 1000)·100⌋ — a CPU-heavy pod goes where CPU is to spare.
//  - Look-ahead (option "lookahead", default true). Ties of that integer score, nodes and GPUs
//    alike, go to the least growth of the GPUs' expected eventual waste
//      W(L) = Σ_m p_m · (m fits in L ? W(L − m) : L),   W(0) = 0,
//    L a GPU's free milli, m the GPU shapes of the typical pods (a multi-GPU shape needs a whole
//    GPU): the one-GPU Bellman recursion of the fragmentation measure. The table (1001 values)
//    is computed once per distribution. What still ties goes to the core's tie-break, as in FGD.
//
// With λ = 0 and no look-ahead it scores exactly as fgd. Options: {"typical_pods": [...]} as
// fgd, "stranding_weight" (0..10), "lookahead".

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "policy/frag_policy.h"
#include "policy/registry.h"

namespace tessera::policy {

std::vector<OptionInfo> FragPackOptionList();
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeFragPack(const PolicyContext& context,
                                                             const nlohmann::json& options);

class FragPack final : public FragmentationPolicy {
 public:
  explicit FragPack(ShapeDistribution typical, double stranding_weight = 1, bool lookahead = true);
  std::string_view name() const override { return "frag-pack"; }
  // W(L) for 0 <= L <= 1000.
  double Waste(int free_milli) const;
  // ρ: CPU milli per GPU milli of the typical GPU pods (0 without GPU shapes).
  double CpuPerGpuMilli() const { return rho_; }
  // S of a node (0 when ρ is 0).
  double Stranded(const NodeFree& n) const;

 protected:
  double Rate(double before, double after, const NodeFree& before_free,
              const NodeFree& after_free) const override;
  void TypicalChanged() override;

 private:
  double NodeWaste(const NodeFree& n) const;
  double stranding_weight_;
  bool lookahead_;
  double rho_ = 0;
  std::vector<double> waste_;
};

}  // namespace tessera::policy
