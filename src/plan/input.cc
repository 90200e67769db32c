#include "plan/input.h"

#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>
#include <sstream>

namespace tessera::plan {
namespace {

// yaml-cpp marks are 0-based.
std::unexpected<Error> At(const std::string& file, const YAML::Node& node, const std::string& msg) {
  return FailAt(file, node.Mark().line + 1, msg);
}

// A number from a scalar node, or an error naming `what`.
Expected<double> Number(const std::string& file, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) return At(file, node, what + " must be a number");
  try {
    const double v = node.as<double>();
    if (!std::isfinite(v)) return At(file, node, what + " must be finite");
    return v;
  } catch (const YAML::Exception&) {
    return At(file, node, what + " must be a number");
  }
}

Expected<predict::AppFeatures> ParseFeatures(const std::string& file, const std::string& service,
                                             const YAML::Node& map) {
  if (!map.IsMap()) {
    return At(file, map, fmt::format("service {}: 'features' must be a map", service));
  }
  predict::AppFeatures features;
  for (const auto& kv : map) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if (auto ok = predict::CheckFeatureName(name); !ok) {
      return At(file, kv.first, fmt::format("service {}: {}", service, ok.error().message));
    }
    auto value = kv.second.IsScalar()
                     ? predict::ParseFeatureValue(kv.second.Scalar())
                     : Expected<predict::FeatureValue>(Fail("must be a number or a word"));
    // YAML's own spellings of infinity and NaN (.inf, -.Inf, .nan, …) in a plain scalar are
    // numbers to YAML, and not finite ones: refused as the annotation "inf" is.
    double yaml_number = 0;
    if (value && kv.second.Tag() == "?" && YAML::convert<double>::decode(kv.second, yaml_number) &&
        !std::isfinite(yaml_number)) {
      value = Fail("feature value '{}' is not finite", kv.second.Scalar());
    }
    if (!value) {
      return At(file, kv.first,
                fmt::format("service {}: feature '{}': {}", service, name, value.error().message));
    }
    features.emplace(name, std::move(*value));
  }
  return features;
}

Expected<sim::DailyLoad> ParseLoad(const std::string& file, const ServiceSpec& s,
                                   const YAML::Node& map) {
  const std::string who = "service " + s.name + ": ";
  if (!map.IsMap()) return At(file, map, who + "'load' must be a map {trough, peak_hour}");
  sim::DailyLoad load{.trough_qps = 0, .peak_qps = s.slo_qps};
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    auto v = Number(file, kv.second, who + "load." + key);
    if (!v) return std::unexpected(v.error());
    if (key == "trough") {
      if (*v < 0 || *v > 1) return At(file, kv.second, who + "load.trough must be in [0, 1]");
      load.trough_qps = *v * s.slo_qps;
    } else if (key == "peak_hour") {
      if (*v < 0 || *v >= 24) return At(file, kv.second, who + "load.peak_hour must be in [0, 24)");
      load.peak_hour = *v;
    } else {
      return At(file, kv.first, who + "unknown key 'load." + key + "' (trough, peak_hour)");
    }
  }
  return load;
}

Expected<ServiceSpec> ParseService(const std::string& file, const YAML::Node& node) {
  if (!node.IsMap()) return At(file, node, "a service must be a map");
  ServiceSpec s;
  s.line = node.Mark().line + 1;
  const YAML::Node name = node["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty()) {
    return At(file, node, "a service needs a 'name'");
  }
  s.name = name.Scalar();
  const std::string who = "service " + s.name + ": ";
  static const std::set<std::string> kKeys = {"name",         "app",        "features", "slo_qps",
                                              "min_replicas", "memory_mib", "load"};
  for (const auto& kv : node) {
    if (!kKeys.contains(kv.first.Scalar())) {
      return At(file, kv.first, who + "unknown key '" + kv.first.Scalar() + "'");
    }
  }
  if (const YAML::Node app = node["app"]) {
    if (!app.IsScalar() || app.Scalar().empty()) return At(file, app, who + "'app' must be a name");
    s.app = app.Scalar();
  }
  if (const YAML::Node f = node["features"]) {
    auto features = ParseFeatures(file, s.name, f);
    if (!features) return std::unexpected(features.error());
    s.features = std::move(*features);
  }
  if (s.app.empty() && s.features.empty()) {
    return At(file, node, who + "needs an 'app' or its 'features'");
  }
  const YAML::Node slo = node["slo_qps"];
  if (!slo) return At(file, node, who + "needs 'slo_qps'");
  auto qps = Number(file, slo, who + "slo_qps");
  if (!qps) return std::unexpected(qps.error());
  if (*qps <= 0) return At(file, slo, who + "slo_qps must be > 0");
  s.slo_qps = *qps;
  if (const YAML::Node r = node["min_replicas"]) {
    auto v = Number(file, r, who + "min_replicas");
    if (!v) return std::unexpected(v.error());
    if (*v < 1 || *v > 10000 || *v != std::floor(*v)) {
      return At(file, r, who + "min_replicas must be a whole number from 1 to 10000");
    }
    s.min_replicas = static_cast<int>(*v);
  }
  if (const YAML::Node m = node["memory_mib"]) {
    auto v = Number(file, m, who + "memory_mib");
    if (!v) return std::unexpected(v.error());
    if (*v <= 0) return At(file, m, who + "memory_mib must be > 0");
    s.memory_mib = static_cast<int64_t>(std::ceil(*v));
  }
  if (const YAML::Node l = node["load"]) {
    auto load = ParseLoad(file, s, l);
    if (!load) return std::unexpected(load.error());
    s.load = *load;
  }
  return s;
}

Expected<std::vector<GpuOffer>> ParseMenu(const std::vector<std::string>& names,
                                          const std::string& where) {
  std::vector<GpuOffer> menu;
  std::set<model::GpuModelId> seen;
  for (const std::string& name : names) {
    const std::optional<model::GpuModelId> id = model::FindGpuModel(name);
    if (!id || model::GetGpuModel(*id).opaque) {
      return Fail("{}: unknown GPU model '{}'", where, name);
    }
    if (seen.insert(*id).second) menu.push_back({*id, 1});
  }
  if (menu.empty()) return Fail("{}: the GPU menu is empty", where);
  return menu;
}

Expected<std::vector<GpuOffer>> MenuFrom(const std::string& file, const YAML::Node& root,
                                         const std::string& menu_flag) {
  std::vector<std::string> names;
  if (!menu_flag.empty()) return ParseMenuFlag(menu_flag);
  if (const YAML::Node gpus = root["gpus"]) {
    if (!gpus.IsSequence()) return At(file, gpus, "'gpus' must be a list of GPU model names");
    for (const YAML::Node& g : gpus) names.push_back(g.IsScalar() ? g.Scalar() : "");
    return ParseMenu(names, fmt::format("{}:{}", file, gpus.Mark().line + 1));
  }
  for (const model::GpuModel& m : model::AllGpuModels()) {
    if (!m.opaque) names.push_back(m.name);
  }
  return ParseMenu(names, file);
}

// The document, or its syntax error at its line.
Expected<YAML::Node> LoadYaml(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return FailAt(file, e.mark.line + 1, e.msg);
  }
}

}  // namespace

Expected<std::vector<GpuOffer>> ParseMenuFlag(const std::string& menu) {
  std::vector<std::string> names;
  std::stringstream in(menu);
  for (std::string name; std::getline(in, name, ',');) names.push_back(name);
  return ParseMenu(names, "--gpus");
}

Expected<PlanInput> ParsePlanInput(const std::string& yaml_text, const std::string& file_name,
                                   const std::string& menu) {
  auto loaded = LoadYaml(yaml_text, file_name);
  if (!loaded) return std::unexpected(loaded.error());
  const YAML::Node root = *loaded;
  if (!root.IsMap()) return FailAt(file_name, 1, "expected a map with 'services'");
  PlanInput input;
  input.file = file_name;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key != "services" && key != "gpus") {
      return At(file_name, kv.first, "unknown key '" + key + "' (services, gpus)");
    }
  }
  const YAML::Node services = root["services"];
  if (!services || !services.IsSequence() || services.size() == 0) {
    return At(file_name, root, "'services' must be a non-empty list");
  }
  std::set<std::string> names;
  for (const YAML::Node& node : services) {
    auto s = ParseService(file_name, node);
    if (!s) return std::unexpected(s.error());
    if (!names.insert(s->name).second) {
      return FailAt(file_name, s->line, "service " + s->name + ": named twice");
    }
    input.services.push_back(std::move(*s));
  }
  auto gpus = MenuFrom(file_name, root, menu);
  if (!gpus) return std::unexpected(gpus.error());
  input.gpus = std::move(*gpus);
  return input;
}

Expected<void> ApplyPrices(PlanInput& input, const std::string& yaml_text,
                           const std::string& file_name) {
  auto loaded = LoadYaml(yaml_text, file_name);
  if (!loaded) return std::unexpected(loaded.error());
  const YAML::Node root = *loaded;
  const YAML::Node prices = root.IsMap() ? root["prices"] : YAML::Node();
  if (!prices || !prices.IsMap()) return FailAt(file_name, 1, "expected a map 'prices'");
  std::vector<double> price(input.gpus.size(), -1);
  for (const auto& kv : prices) {
    const std::optional<model::GpuModelId> id = model::FindGpuModel(kv.first.Scalar());
    if (!id) return At(file_name, kv.first, "unknown GPU model '" + kv.first.Scalar() + "'");
    auto v = Number(file_name, kv.second, "price of " + kv.first.Scalar());
    if (!v) return std::unexpected(v.error());
    if (*v <= 0) return At(file_name, kv.second, "price of " + kv.first.Scalar() + " must be > 0");
    for (size_t i = 0; i < input.gpus.size(); ++i) {
      if (input.gpus[i].model == *id) price[i] = *v;
    }
  }
  for (size_t i = 0; i < input.gpus.size(); ++i) {
    if (price[i] < 0) {
      return FailAt(file_name, 1,
                    "no price for " + model::GetGpuModel(input.gpus[i].model).name +
                        ", which is on the menu");
    }
  }
  for (size_t i = 0; i < input.gpus.size(); ++i) input.gpus[i].price = price[i];
  const YAML::Node source = root["source"];
  input.price_source = source && source.IsScalar() ? source.Scalar() : file_name;
  return {};
}

}  // namespace tessera::plan
