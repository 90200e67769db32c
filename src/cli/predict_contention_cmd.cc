// `tessera predict contention`: the simulator's co-location model against pairs measured on a
// real GPU (sim/contention_check.h; tools/characterise's campaign directory, e.g.
// data/h200-campaign). Per pair: the victim's measured and predicted samples/s beside its
// aggressor and the relative error, at the simulator's constants; then the two-fold fit of the
// constants for that GPU model and its held-out error (docs/simulator.md "Measured on an H200").
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "sim/contention_check.h"

namespace tessera::cli {
namespace {

struct ContentionFlags {
  std::string data;
  std::string constant = "fixed";
  bool json = false;
};

nlohmann::json PairsJson(const std::vector<sim::ContentionPair>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const sim::ContentionPair& p : pairs) {
    out.push_back({{"victim", p.victim},
                   {"aggressor", p.aggressor},
                   {"alone_qps", p.alone_qps},
                   {"measured_qps", p.measured_qps},
                   {"predicted_qps", p.predicted_qps},
                   {"relative_error", p.error()},
                   {"fold", p.fold}});
  }
  return out;
}

nlohmann::json FitJson(const std::string& kind, const sim::ContentionFit& f) {
  nlohmann::json j = {{"train_median_error", f.train_median},
                      {"held_out_median_error", f.held_out_median}};
  if (kind == "mps") {
    j["front_kappa"] = f.front_kappa;
    j["sm_kappa"] = f.sm_kappa;
  } else {
    j["fixed_active"] = f.fixed_active;
  }
  return j;
}

// Fitted on every pair: nothing is held out.
nlohmann::json AllFitJson(const std::string& kind, const sim::ContentionFit& f) {
  nlohmann::json j = FitJson(kind, f);
  j.erase("held_out_median_error");
  return j;
}

std::string Constants(const std::string& kind, double front, double sm, double active) {
  return kind == "mps" ? fmt::format("front_kappa {:.2f}, sm_kappa {:.2f}", front, sm)
                       : fmt::format("fixed_active {:.2f}", active);
}

Status RunContention(const ContentionFlags& f) {
  const auto part = f.constant == "fixed" ? sim::ConstantPart::kFixed : sim::ConstantPart::kMemory;
  auto check = sim::CheckContention(f.data, part);
  if (!check) return Failed(check.error());
  const sim::PhysicsOptions& d = check->defaults;
  if (f.json) {
    nlohmann::json j = {{"gpu", check->gpu}, {"constant_part", f.constant}, {"kinds", {}}};
    for (const sim::ContentionKindCheck& k : check->kinds) {
      nlohmann::json folds = nlohmann::json::array();
      for (const sim::ContentionFit& fit : k.folds) folds.push_back(FitJson(k.kind, fit));
      j["kinds"][k.kind] = {{"pairs", PairsJson(k.pairs)},
                            {"default_median_error", k.default_median},
                            {"folds", folds},
                            {"held_out_median_error", k.held_out_median},
                            {"fit_all", AllFitJson(k.kind, k.all)},
                            {"fitted_pairs", PairsJson(k.fitted_pairs)}};
    }
    for (const auto& r : check->rooflines) {
      j["rooflines"].push_back({{"app", r.app},
                                {"a_s", r.a},
                                {"b_s", r.b},
                                {"max_relative_error", r.max_relative_error}});
    }
    std::printf("%s\n", j.dump().c_str());
    return {};
  }
  std::printf(
      "co-location model vs pairs measured on %s (%s); constant part of each roofline "
      "read as %s time\n",
      check->gpu.c_str(), f.data.c_str(), f.constant.c_str());
  for (const sim::ContentionKindCheck& k : check->kinds) {
    std::printf("\n%s pairs: victim samples/s beside the aggressor\n", k.kind.c_str());
    std::printf("%-24s %-24s %9s %9s %9s %7s %9s %7s\n", "victim", "aggressor", "alone", "measured",
                "model", "error", "fitted", "error");
    for (size_t i = 0; i < k.pairs.size(); ++i) {
      const sim::ContentionPair& p = k.pairs[i];
      const sim::ContentionPair& q = k.fitted_pairs[i];
      std::printf("%-24s %-24s %9.1f %9.1f %9.1f %6.1f%% %9.1f %6.1f%%\n", p.victim.c_str(),
                  p.aggressor.c_str(), p.alone_qps, p.measured_qps, p.predicted_qps,
                  100 * p.error(), q.predicted_qps, 100 * q.error());
    }
    std::printf("median error at the simulator's constants (%s): %.1f %%\n",
                Constants(k.kind, d.mps_front_kappa, d.mps_sm_kappa, d.fixed_active).c_str(),
                100 * k.default_median);
    for (size_t i = 0; i < k.folds.size(); ++i) {
      const sim::ContentionFit& fit = k.folds[i];
      std::printf(
          "fold %zu fitted on the other fold (%s): median error %.1f %% held out, %.1f %% "
          "fitted\n",
          i, Constants(k.kind, fit.front_kappa, fit.sm_kappa, fit.fixed_active).c_str(),
          100 * fit.held_out_median, 100 * fit.train_median);
    }
    std::printf("held-out median error over every pair: %.1f %%; fitted on all pairs: %s\n",
                100 * k.held_out_median,
                Constants(k.kind, k.all.front_kappa, k.all.sm_kappa, k.all.fixed_active).c_str());
  }
  return {};
}

}  // namespace

void AddPredictContention(CLI::App* predict, Status* status) {
  auto flags = std::make_shared<ContentionFlags>();
  CLI::App* sub = predict->add_subcommand(
      "contention",
      "Check the simulator's co-location model against pairs measured on a real GPU, and fit "
      "its constants for that GPU model");
  sub->add_option("--data", flags->data,
                  "A campaign directory with profile.csv and interference.csv "
                  "(tools/characterise), e.g. data/h200-campaign")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("--constant-part", flags->constant,
                  "How to read the part of a query no MPS share speeds up: fixed (host) or "
                  "memory (bandwidth) time")
      ->check(CLI::IsMember({"fixed", "memory"}))
      ->capture_default_str();
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->callback([flags, status] { *status = RunContention(*flags); });
}

}  // namespace tessera::cli
