#include "policy/frag_pack.h"

#include <algorithm>
#include <cmath>

#include "policy/fgd.h"

namespace tessera::policy {

std::vector<OptionInfo> FragPackOptionList() {
  std::vector<OptionInfo> list = TypicalPodsOptionList();
  list.push_back({"stranding_weight", "1",
                  "weight of the GPU share the node's CPU will strand, beside the fragment; 0: "
                  "FGD's score"});
  list.push_back({"lookahead", "true", "break score ties by the look-ahead over leftovers"});
  return list;
}

Expected<std::unique_ptr<Policy>> MakeFragPack(const PolicyContext& context,
                                               const nlohmann::json& options) {
  auto typical = TypicalPods("frag-pack", context, options);
  if (!typical) return std::unexpected(typical.error());
  double weight = 1;
  bool lookahead = true;
  if (auto ok = ReadOption("frag-pack", options, "stranding_weight", weight); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = OptionWithin("frag-pack", "stranding_weight", weight, 0, 10); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = ReadOption("frag-pack", options, "lookahead", lookahead); !ok) {
    return std::unexpected(ok.error());
  }
  return std::make_unique<FragPack>(std::move(*typical), weight, lookahead);
}

FragPack::FragPack(ShapeDistribution typical, double stranding_weight, bool lookahead)
    : FragmentationPolicy(std::move(typical)),
      stranding_weight_(stranding_weight),
      lookahead_(lookahead) {
  TypicalChanged();
}

void FragPack::TypicalChanged() {
  waste_.assign(1001, 0.0);
  double total = 0;
  double cpu = 0;
  double gpu = 0;
  for (const PodShape& s : typical().shapes()) {
    if (s.gpu_count == 0) continue;
    total += s.weight;
    cpu += s.weight * static_cast<double>(s.cpu_milli);
    gpu += s.weight * s.gpu_count * s.gpu_milli;
  }
  rho_ = gpu > 0 ? cpu / gpu : 0;
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

double FragPack::Stranded(const NodeFree& n) const {
  if (rho_ <= 0) return 0;
  const double feedable = static_cast<double>(std::max<int64_t>(0, n.cpu_milli)) / rho_;
  return std::max(0.0, static_cast<double>(n.TotalFree()) - feedable);
}

double FragPack::Rate(double before, double after, const NodeFree& before_free,
                      const NodeFree& after_free) const {
  double score = Fgd::ScoreOf(before + stranding_weight_ * Stranded(before_free),
                              after + stranding_weight_ * Stranded(after_free));
  // |ΔW| <= 8000 milli on an 8-GPU node, so 1e-6 * ΔW stays below the integer step.
  if (lookahead_) score -= 1e-6 * (NodeWaste(after_free) - NodeWaste(before_free));
  return score;
}

}  // namespace tessera::policy
