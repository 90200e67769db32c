#include "sim/apps.h"

#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <variant>

namespace tessera::sim {
namespace {

// yaml-cpp marks are 0-based.
std::unexpected<Error> At(const std::string& file, const YAML::Node& node, const std::string& msg) {
  return FailAt(file, node.Mark().line + 1, msg);
}

template <typename T>
Expected<T> Get(const std::string& file, const YAML::Node& map, const char* key, bool required,
                T fallback) {
  const YAML::Node v = map[key];
  if (!v) {
    if (required) return At(file, map, fmt::format("missing '{}'", key));
    return fallback;
  }
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    return At(file, v, fmt::format("'{}' has the wrong type", key));
  }
}

// `features:` of app `key`: a map of feature name to a scalar (predict/features.h).
Expected<predict::AppFeatures> ParseFeatures(const std::string& file, const std::string& key,
                                             const YAML::Node& map) {
  if (!map.IsMap()) return At(file, map, fmt::format("app {}: 'features' must be a map", key));
  predict::AppFeatures features;
  for (const auto& kv : map) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if (auto ok = predict::CheckFeatureName(name); !ok) {
      return At(file, kv.first, fmt::format("app {}: {}", key, ok.error().message));
    }
    // Errors point at the feature's name: a missing value has no line of its own.
    if (!kv.second.IsScalar()) {
      return At(file, kv.first,
                fmt::format("app {}: feature '{}' {}", key, name,
                            kv.second.IsNull() ? "has no value" : "must be a number or a word"));
    }
    auto value = predict::ParseFeatureValue(kv.second.Scalar());
    if (!value) {
      return At(file, kv.first,
                fmt::format("app {}: feature '{}': {}", key, name, value.error().message));
    }
    if (!features.emplace(name, std::move(*value)).second) {
      return At(file, kv.first, fmt::format("app {}: feature '{}' given twice", key, name));
    }
  }
  return features;
}

}  // namespace

const AppSpec* AppCatalog::Find(const std::string& key) const {
  for (const AppSpec& a : apps) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

Expected<AppCatalog> ParseAppCatalog(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return FailAt(file, e.mark.line + 1, e.msg);
  }
  if (!root.IsMap() || !root["apps"] || !root["apps"].IsSequence()) {
    return FailAt(file, 1, "expected a map with an 'apps' list");
  }
  AppCatalog catalog;
  auto ref = Get<std::string>(file, root, "reference_gpu", false, catalog.reference_gpu);
  if (!ref) return std::unexpected(ref.error());
  catalog.reference_gpu = *ref;
  std::set<std::string> keys;
  predict::FeatureTable declared;  // checks that a feature has one kind across the apps
  for (const YAML::Node& n : root["apps"]) {
    if (!n.IsMap()) return At(file, n, "an app must be a map");
    AppSpec a;
#define TESSERA_FIELD(member, key, required, fallback)                  \
  {                                                                     \
    auto v = Get<decltype(a.member)>(file, n, key, required, fallback); \
    if (!v) return std::unexpected(v.error());                          \
    a.member = *v;                                                      \
  }
    TESSERA_FIELD(key, "key", true, std::string());
    TESSERA_FIELD(description, "description", false, std::string());
    TESSERA_FIELD(compute_s, "compute_s", true, 0.0);
    TESSERA_FIELD(memory_s, "memory_s", true, 0.0);
    TESSERA_FIELD(fixed_s, "fixed_s", true, 0.0);
    TESSERA_FIELD(footprint_mib, "footprint_mib", true, int64_t{0});
    TESSERA_FIELD(sensitivity, "sensitivity", false, 1.0);
    TESSERA_FIELD(queries_min, "queries_min", false, int64_t{1000});
    TESSERA_FIELD(queries_max, "queries_max", false, int64_t{1000});
#undef TESSERA_FIELD
    if (a.compute_s < 0 || a.memory_s < 0 || a.fixed_s < 0 ||
        a.compute_s + a.memory_s + a.fixed_s <= 0) {
      return At(file, n, fmt::format("app {}: times must be >= 0 and not all zero", a.key));
    }
    if (a.footprint_mib < 0 || a.sensitivity < 0 || a.queries_min <= 0 ||
        a.queries_max < a.queries_min) {
      return At(file, n, fmt::format("app {}: bad footprint, sensitivity or query range", a.key));
    }
    if (!keys.insert(a.key).second) return At(file, n, fmt::format("app {} listed twice", a.key));
    if (const YAML::Node m = n["measured"]) {
      if (!m.IsMap()) return At(file, m, fmt::format("app {}: 'measured' must be a map", a.key));
      for (const auto& kv : m) {
        double qps = 0;
        try {
          qps = kv.second.as<double>();
        } catch (const YAML::Exception&) {
          return At(file, kv.second, fmt::format("app {}: measured value is not a number", a.key));
        }
        if (!(qps > 0))
          return At(file, kv.second, fmt::format("app {}: measured value <= 0", a.key));
        a.measured[kv.first.as<std::string>()] = qps;
      }
    }
    if (const YAML::Node f = n["features"]) {
      auto features = ParseFeatures(file, a.key, f);
      if (!features) return std::unexpected(features.error());
      if (auto ok = declared.Set(a.key, *features); !ok) return At(file, f, ok.error().message);
      a.features = std::move(*features);
    }
    catalog.apps.push_back(std::move(a));
  }
  return catalog;
}

Expected<AppCatalog> LoadAppCatalog(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail("{}: cannot open", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseAppCatalog(buffer.str(), path);
}

Expected<void> SaveAppCatalog(const AppCatalog& catalog, const std::string& path) {
  YAML::Emitter out;
  out.SetDoublePrecision(8);
  out << YAML::BeginMap << YAML::Key << "reference_gpu" << YAML::Value << catalog.reference_gpu;
  out << YAML::Key << "apps" << YAML::Value << YAML::BeginSeq;
  for (const AppSpec& a : catalog.apps) {
    out << YAML::BeginMap;
    out << YAML::Key << "key" << YAML::Value << a.key;
    if (!a.description.empty()) out << YAML::Key << "description" << YAML::Value << a.description;
    out << YAML::Key << "compute_s" << YAML::Value << a.compute_s;
    out << YAML::Key << "memory_s" << YAML::Value << a.memory_s;
    out << YAML::Key << "fixed_s" << YAML::Value << a.fixed_s;
    out << YAML::Key << "footprint_mib" << YAML::Value << a.footprint_mib;
    out << YAML::Key << "sensitivity" << YAML::Value << a.sensitivity;
    out << YAML::Key << "queries_min" << YAML::Value << a.queries_min;
    out << YAML::Key << "queries_max" << YAML::Value << a.queries_max;
    if (!a.measured.empty()) {
      out << YAML::Key << "measured" << YAML::Value << YAML::BeginMap;
      for (const auto& [k, v] : a.measured) out << YAML::Key << k << YAML::Value << v;
      out << YAML::EndMap;
    }
    if (!a.features.empty()) {
      out << YAML::Key << "features" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [name, value] : a.features) {
        out << YAML::Key << name << YAML::Value;
        if (const double* d = std::get_if<double>(&value)) {
          out << *d;
        } else {
          out << std::get<std::string>(value);
        }
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  std::ofstream f(path);
  if (!f) return Fail("{}: cannot write", path);
  f << "# Tessera simulator application catalogue (docs/simulator.md). The MIGProfiler entries "
       "are\n"
       "# generated: tessera simulate --experiment calibrate --data ../shared/data/migprofiler \\\n"
       "#   --apps data/apps.yaml --out data/apps.yaml\n"
    << out.c_str() << "\n";
  if (!f) return Fail("{}: write failed", path);
  return {};
}

predict::FeatureTable CatalogFeatures(const AppCatalog& catalog) {
  predict::FeatureTable table;
  for (const AppSpec& a : catalog.apps) {
    if (a.features.empty()) continue;
    if (auto ok = table.Set(a.key, a.features); !ok) Die("CatalogFeatures: " + ok.error().message);
  }
  return table;
}

}  // namespace tessera::sim
