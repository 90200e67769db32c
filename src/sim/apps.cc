#include "sim/apps.h"

#include <fmt/core.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
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

// Refuses a key of `map` not in `allowed`, naming the allowed ones.
Expected<void> OnlyKeys(const std::string& file, const std::string& what, const YAML::Node& map,
                        std::initializer_list<const char*> allowed) {
  for (const auto& kv : map) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if (std::find_if(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }) ==
        allowed.end()) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return At(file, kv.first, fmt::format("{}: unknown key '{}' (allowed: {})", what, k, list));
    }
  }
  return {};
}

// {memory_mib, sm, bandwidth} of a phase or burst of app `key`'s usage; all three required,
// memory ≥ 0, the two activities in 0..1.
Expected<UsagePoint> ParseUsagePoint(const std::string& file, const std::string& what,
                                     const YAML::Node& n) {
  UsagePoint u;
  for (auto [name, field] :
       {std::pair{"memory_mib", &UsagePoint::memory_mib}, std::pair{"sm", &UsagePoint::sm},
        std::pair{"bandwidth", &UsagePoint::bandwidth}}) {
    auto v = Get<double>(file, n, name, true, 0.0);
    if (!v) return std::unexpected(v.error());
    const bool fraction = field != &UsagePoint::memory_mib;
    if (!std::isfinite(*v) || *v < 0 || (fraction && *v > 1)) {
      return At(file, n[name],
                fmt::format("{}: '{}' must be {}", what, name,
                            fraction ? "in 0..1" : "a finite number >= 0"));
    }
    u.*field = *v;
  }
  return u;
}

// `usage:` of app `key` (sim/usage.h): {repeat: hold|loop, phases: [{duration_s, memory_mib, sm,
// bandwidth}...], burst: {period_s, duration_s, memory_mib, sm, bandwidth}}.
Expected<UsageTrajectory> ParseUsage(const std::string& file, const std::string& key,
                                     const YAML::Node& n) {
  const std::string what = fmt::format("app {}: usage", key);
  if (!n.IsMap()) return At(file, n, what + " must be a map");
  if (auto ok = OnlyKeys(file, what, n, {"repeat", "phases", "burst"}); !ok) {
    return std::unexpected(ok.error());
  }
  UsageTrajectory u;
  auto repeat = Get<std::string>(file, n, "repeat", false, std::string("hold"));
  if (!repeat) return std::unexpected(repeat.error());
  if (*repeat != "hold" && *repeat != "loop") {
    return At(file, n["repeat"], what + ": 'repeat' must be hold or loop");
  }
  u.loop = *repeat == "loop";
  const YAML::Node phases = n["phases"];
  if (!phases || !phases.IsSequence() || phases.size() == 0) {
    return At(file, phases ? phases : n, what + ": 'phases' must be a non-empty list");
  }
  for (const YAML::Node& p : phases) {
    if (!p.IsMap()) return At(file, p, what + ": a phase must be a map");
    if (auto ok =
            OnlyKeys(file, what + " phase", p, {"duration_s", "memory_mib", "sm", "bandwidth"});
        !ok) {
      return std::unexpected(ok.error());
    }
    UsagePhase phase;
    auto d = Get<double>(file, p, "duration_s", true, 0.0);
    if (!d) return std::unexpected(d.error());
    if (!std::isfinite(*d) || *d <= 0) {
      return At(file, p["duration_s"], what + ": 'duration_s' must be a finite number > 0");
    }
    phase.duration_s = *d;
    auto use = ParseUsagePoint(file, what + " phase", p);
    if (!use) return std::unexpected(use.error());
    phase.use = *use;
    u.phases.push_back(phase);
  }
  if (const YAML::Node b = n["burst"]) {
    if (!b.IsMap()) return At(file, b, what + ": 'burst' must be a map");
    if (auto ok = OnlyKeys(file, what + " burst", b,
                           {"period_s", "duration_s", "memory_mib", "sm", "bandwidth"});
        !ok) {
      return std::unexpected(ok.error());
    }
    UsageBurst burst;
    auto period = Get<double>(file, b, "period_s", true, 0.0);
    if (!period) return std::unexpected(period.error());
    auto duration = Get<double>(file, b, "duration_s", true, 0.0);
    if (!duration) return std::unexpected(duration.error());
    if (!std::isfinite(*period) || !std::isfinite(*duration) || !(*duration > 0) ||
        !(*period > *duration)) {
      return At(file, b, what + ": a burst needs 0 < duration_s < period_s");
    }
    burst.period_s = *period;
    burst.duration_s = *duration;
    auto peak = ParseUsagePoint(file, what + " burst", b);
    if (!peak) return std::unexpected(peak.error());
    burst.peak = *peak;
    u.burst = burst;
  }
  return u;
}

void EmitUsagePoint(YAML::Emitter& out, const UsagePoint& u) {
  out << YAML::Key << "memory_mib" << YAML::Value << u.memory_mib;
  out << YAML::Key << "sm" << YAML::Value << u.sm;
  out << YAML::Key << "bandwidth" << YAML::Value << u.bandwidth;
}

// `remote:` {network_share, network_share_loaded} of app `key`.
Expected<RemoteProfile> ParseRemote(const std::string& file, const std::string& key,
                                    const YAML::Node& r) {
  if (!r.IsMap()) return At(file, r, fmt::format("app {}: 'remote' must be a map", key));
  auto share = Get<double>(file, r, "network_share", true, 0.0);
  if (!share) return std::unexpected(share.error());
  auto loaded = Get<double>(file, r, "network_share_loaded", true, 0.0);
  if (!loaded) return std::unexpected(loaded.error());
  if (!(*share >= 0) || !(*loaded >= *share) || !(*loaded < 1)) {
    return At(
        file, r,
        fmt::format("app {}: remote needs 0 <= network_share <= network_share_loaded < 1", key));
  }
  return RemoteProfile{.network_share = *share, .network_share_loaded = *loaded};
}

// `link:` {disk_share, load} of app `key`.
Expected<LinkUse> ParseLink(const std::string& file, const std::string& key, const YAML::Node& l) {
  if (!l.IsMap()) return At(file, l, fmt::format("app {}: 'link' must be a map", key));
  auto disk = Get<double>(file, l, "disk_share", false, 0.0);
  if (!disk) return std::unexpected(disk.error());
  auto load = Get<double>(file, l, "load", false, 0.0);
  if (!load) return std::unexpected(load.error());
  if (!(*disk >= 0 && *disk < 1) || !(*load >= 0 && *load <= 1)) {
    return At(file, l,
              fmt::format("app {}: link needs 0 <= disk_share < 1 and 0 <= load <= 1", key));
  }
  return LinkUse{.disk_share = *disk, .load = *load};
}

Expected<AppSpec> ParseApp(const std::string& file, const YAML::Node& n,
                           std::set<std::string>& keys, predict::FeatureTable& declared) {
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
  TESSERA_FIELD(host_s, "host_s", false, 0.0);
  TESSERA_FIELD(footprint_mib, "footprint_mib", true, int64_t{0});
  TESSERA_FIELD(sensitivity, "sensitivity", false, 1.0);
  TESSERA_FIELD(queries_min, "queries_min", false, int64_t{1000});
  TESSERA_FIELD(queries_max, "queries_max", false, int64_t{1000});
#undef TESSERA_FIELD
  if (a.compute_s < 0 || a.memory_s < 0 || a.fixed_s < 0 || a.host_s < 0 ||
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
      if (!(qps > 0)) return At(file, kv.second, fmt::format("app {}: measured value <= 0", a.key));
      a.measured[kv.first.as<std::string>()] = qps;
    }
  }
  if (const YAML::Node f = n["features"]) {
    auto features = ParseFeatures(file, a.key, f);
    if (!features) return std::unexpected(features.error());
    if (auto ok = declared.Set(a.key, *features); !ok) return At(file, f, ok.error().message);
    a.features = std::move(*features);
  }
  if (const YAML::Node u = n["usage"]) {
    auto usage = ParseUsage(file, a.key, u);
    if (!usage) return std::unexpected(usage.error());
    a.usage = std::move(*usage);
  }
  if (const YAML::Node r = n["remote"]) {
    auto remote = ParseRemote(file, a.key, r);
    if (!remote) return std::unexpected(remote.error());
    a.remote = *remote;
  }
  if (const YAML::Node l = n["link"]) {
    auto link = ParseLink(file, a.key, l);
    if (!link) return std::unexpected(link.error());
    a.link = *link;
  }
  return a;
}

// One app of a list, as ParseApp reads it.
void EmitApp(YAML::Emitter& out, const AppSpec& a) {
  out << YAML::BeginMap;
  out << YAML::Key << "key" << YAML::Value << a.key;
  if (!a.description.empty()) out << YAML::Key << "description" << YAML::Value << a.description;
  out << YAML::Key << "compute_s" << YAML::Value << a.compute_s;
  out << YAML::Key << "memory_s" << YAML::Value << a.memory_s;
  out << YAML::Key << "fixed_s" << YAML::Value << a.fixed_s;
  if (a.host_s > 0) out << YAML::Key << "host_s" << YAML::Value << a.host_s;
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
  if (!a.usage.empty()) {
    out << YAML::Key << "usage" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "repeat" << YAML::Value << (a.usage.loop ? "loop" : "hold");
    out << YAML::Key << "phases" << YAML::Value << YAML::BeginSeq;
    for (const UsagePhase& p : a.usage.phases) {
      out << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "duration_s" << YAML::Value << p.duration_s;
      EmitUsagePoint(out, p.use);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    if (a.usage.burst) {
      out << YAML::Key << "burst" << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "period_s" << YAML::Value << a.usage.burst->period_s;
      out << YAML::Key << "duration_s" << YAML::Value << a.usage.burst->duration_s;
      EmitUsagePoint(out, a.usage.burst->peak);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  if (!a.remote.empty()) {
    out << YAML::Key << "remote" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "network_share" << YAML::Value << a.remote.network_share;
    out << YAML::Key << "network_share_loaded" << YAML::Value << a.remote.network_share_loaded;
    out << YAML::EndMap;
  }
  if (!a.link.empty()) {
    out << YAML::Key << "link" << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (a.link.disk_share > 0) out << YAML::Key << "disk_share" << YAML::Value << a.link.disk_share;
    if (a.link.load > 0) out << YAML::Key << "load" << YAML::Value << a.link.load;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

const AppSpec* AppCatalog::Find(const std::string& key) const {
  for (const AppSpec& a : apps) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

AppCatalog SharingCatalog(const AppCatalog& catalog) {
  AppCatalog out;
  out.reference_gpu = catalog.reference_gpu;
  out.apps = catalog.sharing;
  return out;
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
  std::set<std::string> keys;      // unique across the lists
  predict::FeatureTable declared;  // checks that a feature has one kind across the apps
  for (auto [key, list] :
       {std::pair{"apps", &catalog.apps}, std::pair{"training", &catalog.training},
        std::pair{"sharing", &catalog.sharing}}) {
    const YAML::Node seq = root[key];
    if (!seq) continue;
    if (!seq.IsSequence()) return At(file, seq, fmt::format("'{}' must be a list of apps", key));
    for (const YAML::Node& n : seq) {
      if (auto a = ParseApp(file, n, keys, declared); !a) {
        return std::unexpected(a.error());
      } else {
        list->push_back(std::move(*a));
      }
    }
  }
  return catalog;
}

Expected<AppCatalog> LoadAppCatalog(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Fail(
        "{}: is a directory; expected an application catalogue file (YAML, like "
        "data/apps.yaml)",
        path);
  }
  std::ifstream in(path);
  if (!in) {
    return Fail("{}: cannot open ({})", path,
                std::filesystem::exists(path, ec) ? "not readable" : "does not exist");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseAppCatalog(buffer.str(), path);
}

Expected<void> SaveAppCatalog(const AppCatalog& catalog, const std::string& path) {
  YAML::Emitter out;
  out.SetDoublePrecision(8);
  out << YAML::BeginMap << YAML::Key << "reference_gpu" << YAML::Value << catalog.reference_gpu;
  auto list = [&](const char* key, const std::vector<AppSpec>& apps) {
    out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
    for (const AppSpec& a : apps) EmitApp(out, a);
    out << YAML::EndSeq;
  };
  list("apps", catalog.apps);
  if (!catalog.training.empty()) list("training", catalog.training);
  if (!catalog.sharing.empty()) list("sharing", catalog.sharing);
  out << YAML::EndMap;
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
