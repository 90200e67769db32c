#include "predict/migprofiler.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>

#include "base/csv.h"

namespace tessera::predict {
namespace {

namespace fs = std::filesystem;

struct Source {
  std::string path;
  std::string gpu;  // GPU model name used in configuration keys
};

// The combined per-model tables of one A100-40g sweep: <sweep>/<m>/<m>_<suffix>.csv.
void AddCombinedTables(const fs::path& sweep, const std::string& suffix,
                       std::vector<Source>* sources) {
  std::error_code ec;
  if (!fs::is_directory(sweep, ec)) return;
  std::vector<fs::path> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(sweep, ec)) {
    if (!entry.is_directory()) continue;
    const fs::path table =
        entry.path() / (entry.path().filename().string() + "_" + suffix + ".csv");
    if (fs::is_regular_file(table, ec)) found.push_back(table);
  }
  std::sort(found.begin(), found.end());  // directory order is unspecified
  for (const fs::path& p : found) sources->push_back({p.string(), "A100-40GB"});
}

std::vector<Source> FindSources(const fs::path& dir) {
  std::vector<Source> sources;
  AddCombinedTables(dir / "A100-40g" / "infer_bsz", "bsz", &sources);
  AddCombinedTables(dir / "A100-40g" / "infer_seq", "seq", &sources);
  for (const char* name : {"A100-80g/infer/nlp/integrated_result_bsz.csv",
                           "A100-80g/infer/nlp/integrated_result_seq.csv",
                           "A100-80g/infer/cv/integrated_result.csv"}) {
    std::error_code ec;
    if (fs::is_regular_file(dir / name, ec))
      sources.push_back({(dir / name).string(), "A100-80GB"});
  }
  return sources;
}

// 40 GB A100 tables give the instance size in GB; the instance names follow NVIDIA's table.
std::optional<std::string> ProfileFromMemory(long long gb) {
  switch (gb) {
    case 5:
      return "1g.5gb";
    case 10:
      return "2g.10gb";
    case 20:
      return "3g.20gb";
    case 40:
      return "7g.40gb";
    default:
      return std::nullopt;
  }
}

// "<slices>g.<memory>gb", e.g. 1g.10gb.
bool IsMigProfileName(const std::string& s) {
  const size_t g = s.find("g.");
  if (g == 0 || g == std::string::npos || s.size() < g + 5 || !s.ends_with("gb")) return false;
  const auto digits = [](std::string_view v) {
    return !v.empty() &&
           std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return digits(std::string_view(s).substr(0, g)) &&
         digits(std::string_view(s).substr(g + 2, s.size() - g - 4));
}

struct Run {
  std::string app, config;
  double throughput;
  long long start;
  double fb_used_mib;  // 0 when the table has no fb_used_mean
  AppFeatures features;
  std::string where;  // file:line, for errors
};

Expected<void> ReadTable(const Source& source, std::vector<Run>* runs) {
  Expected<CsvTable> table = CsvTable::ReadFile(source.path);
  if (!table) return std::unexpected(table.error());
  const std::optional<int> model = table->FindColumn("model_name"),
                           batch = table->FindColumn("batch_size"),
                           seq = table->FindColumn("seq_length"),
                           tput = table->FindColumn("throughput"),
                           start = table->FindColumn("start_timestamp"),
                           mem = table->FindColumn("instance_memory"),
                           profile = table->FindColumn("mig_profile"),
                           fb = table->FindColumn("fb_used_mean"),
                           params = table->FindColumn("total_params");
  if (!model || !batch || !tput || !start || (!mem && !profile)) {
    return FailAt(source.path, table->header_line(),
                  "header lacks model_name, batch_size, throughput, start_timestamp and "
                  "instance_memory or mig_profile");
  }
  for (const CsvRow& row : table->rows()) {
    const std::string& name = row.cells[*model];
    if (name.empty() || name.find('/') != std::string::npos) {
      return table->FailAt(row, fmt::format("bad model_name '{}'", name));
    }
    Expected<long long> bs = table->Int(row, *batch);
    if (!bs) return std::unexpected(bs.error());
    if (*bs < 1) return table->FailAt(row, "batch_size must be at least 1");
    std::string app = fmt::format("{}/bs{}", name, *bs);
    AppFeatures features{{"model", name},
                         {"task", std::string(seq ? "nlp" : "cv")},
                         {"batch", static_cast<double>(*bs)}};
    if (seq) {
      Expected<long long> tokens = table->Int(row, *seq);
      if (!tokens) return std::unexpected(tokens.error());
      if (*tokens < 1) return table->FailAt(row, "seq_length must be at least 1");
      app += fmt::format("/seq{}", *tokens);
      features["seq"] = static_cast<double>(*tokens);
      features["tokens"] = static_cast<double>(*tokens * *bs);
    }
    if (params) {
      Expected<long long> p = table->Int(row, *params);
      if (!p) return std::unexpected(p.error());
      if (*p < 1) return table->FailAt(row, "total_params must be at least 1");
      features["params"] = static_cast<double>(*p);
    }
    std::string instance;
    if (mem) {
      Expected<long long> gb = table->Int(row, *mem);
      if (!gb) return std::unexpected(gb.error());
      const std::optional<std::string> p = ProfileFromMemory(*gb);
      if (!p) {
        return table->FailAt(row,
                             fmt::format("instance_memory {} is not an A100-40GB MIG size", *gb));
      }
      instance = *p;
    } else {
      instance = row.cells[*profile];
      if (!IsMigProfileName(instance)) {
        return table->FailAt(row,
                             fmt::format("mig_profile '{}' is not a MIG profile name", instance));
      }
    }
    Expected<double> qps = table->Double(row, *tput);
    if (!qps) return std::unexpected(qps.error());
    if (*qps <= 0) return table->FailAt(row, "throughput must be positive");
    Expected<long long> t0 = table->Int(row, *start);
    if (!t0) return std::unexpected(t0.error());
    double fb_used = 0;
    if (fb) {
      Expected<double> v = table->Double(row, *fb);
      if (!v) return std::unexpected(v.error());
      fb_used = *v;
    }
    runs->push_back({std::move(app), fmt::format("{}/{}/100", source.gpu, instance), *qps, *t0,
                     fb_used, std::move(features), fmt::format("{}:{}", source.path, row.line)});
  }
  return {};
}

}  // namespace

Expected<ProfileMatrix> LoadMigProfiler(const std::string& dir, MigProfilerExtras* extras) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Fail("{}: {}", dir,
                fs::exists(dir, ec) ? "not a directory (expected the MIGProfiler data folder)"
                                    : "does not exist (the MIGProfiler data is in "
                                      "../shared/data/migprofiler beside a checkout)");
  }
  const std::vector<Source> sources = FindSources(dir);
  if (sources.empty()) {
    return Fail(
        "{}: no MIGProfiler tables found (expected A100-40g/infer_bsz/<m>/<m>_bsz.csv "
        "or A100-80g/infer/*/integrated_result*.csv)",
        dir);
  }
  std::vector<Run> runs;
  for (const Source& source : sources) {
    if (Expected<void> ok = ReadTable(source, &runs); !ok) return std::unexpected(ok.error());
  }
  ProfileMatrix matrix;
  std::set<std::tuple<std::string, std::string, long long>> seen;
  MigProfilerExtras out;
  out.stats = {static_cast<int>(sources.size()), static_cast<int>(runs.size()), 0};
  std::map<std::string, const AppFeatures*> declared;
  for (const Run& run : runs) {
    if (!seen.emplace(run.app, run.config, run.start).second) {
      ++out.stats.duplicate_runs;
      continue;
    }
    matrix.Observe(matrix.AddRow(run.app), matrix.AddCol(run.config), run.throughput);
    if (run.fb_used_mib > 0) {
      auto [it, fresh] = out.min_memory_mib.emplace(run.app, run.fb_used_mib);
      if (!fresh) it->second = std::min(it->second, run.fb_used_mib);
    }
    auto [it, fresh] = declared.emplace(run.app, &run.features);
    if (fresh) {
      if (Expected<void> ok = out.features.Set(run.app, run.features); !ok) {
        return Fail("{}: {}", run.where, ok.error().message);
      }
    } else if (*it->second != run.features) {
      return Fail("{}: {} disagrees with its earlier runs on model, batch, seq or params",
                  run.where, run.app);
    }
  }
  if (extras != nullptr) *extras = std::move(out);
  return matrix;
}

}  // namespace tessera::predict
