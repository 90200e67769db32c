#pragma once
// frag-pack: Tessera's refinement of FGD (ATC'23 §4.2) with a look-ahead over the typical-pod
// mix (docs/policies.md, "frag-pack"). The node score is FGD's — ⌊sigmoid(ΔF/1000)·100⌋ — so
// every decision FGD separates stays the same; what changes is how FGD's many ties (equal
// integer scores) are broken, nodes and GPUs alike: by the change of the expected eventual waste
//   W(L) = Σ_m p_m · (m fits in L ? W(L − m) : L),   W(0) = 0,
// of the GPUs touched, where L is a GPU's free milli and m runs over the GPU shapes of the typical
// pods (a multi-GPU shape needs a whole GPU). W is the one-GPU Bellman recursion of the
// fragmentation measure: not "can the next pod use this leftover" but "how much of it is still
// left over once pods keep landing on it". A smaller growth of Σ_g W wins; what still ties goes
// to the core's tie-break, as in FGD. The W table (1001 values) is computed once per
// distribution. Options: {"typical_pods": [...]} as fgd.

#include <vector>

#include "policy/frag_policy.h"

namespace tessera::policy {

class FragPack final : public FragmentationPolicy {
 public:
  explicit FragPack(ShapeDistribution typical);
  std::string_view name() const override { return "frag-pack"; }
  // W(L) for 0 <= L <= 1000.
  double Waste(int free_milli) const;

 protected:
  double Rate(double before, double after, const NodeFree& before_free,
              const NodeFree& after_free) const override;
  void TypicalChanged() override;

 private:
  double NodeWaste(const NodeFree& n) const;
  std::vector<double> waste_;
};

}  // namespace tessera::policy
