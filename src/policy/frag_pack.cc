#include "policy/frag_pack.h"

#include <algorithm>
#include <cmath>

#include "policy/fgd.h"

namespace tessera::policy {

FragPack::FragPack(ShapeDistribution typical) : FragmentationPolicy(std::move(typical)) {
  TypicalChanged();
}

void FragPack::TypicalChanged() {
  waste_.assign(1001, 0.0);
  double total = 0;
  for (const PodShape& s : typical().shapes()) total += s.gpu_count > 0 ? s.weight : 0;
  if (total <= 0) return;
  for (int l = 1; l <= 1000; ++l) {
    double w = 0;
    for (const PodShape& s : typical().shapes()) {
      if (s.gpu_count == 0) continue;
      const int need = s.gpu_count > 1 ? 1000 : s.gpu_milli;
      w += s.weight / total * (need <= l ? waste_[l - need] : l);
    }
    waste_[l] = w;
  }
}

double FragPack::Waste(int free_milli) const { return waste_[std::clamp(free_milli, 0, 1000)]; }

double FragPack::NodeWaste(const NodeFree& n) const {
  double w = 0;
  for (int g = 0; g < n.gpus; ++g) w += Waste(n.free_milli[g]);
  return w;
}

double FragPack::Rate(double before, double after, const NodeFree& before_free,
                      const NodeFree& after_free) const {
  // |ΔW| <= 8000 milli on an 8-GPU node, so 1e-6 * ΔW stays below FGD's integer step.
  return Fgd::ScoreOf(before, after) - 1e-6 * (NodeWaste(after_free) - NodeWaste(before_free));
}

}  // namespace tessera::policy
