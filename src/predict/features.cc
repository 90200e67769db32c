#include "predict/features.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>

#include "base/csv.h"

namespace tessera::predict {

Expected<FeatureValue> ParseFeatureValue(std::string_view text) {
  if (text.empty()) return Fail("empty feature value");
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    return Fail("feature value '{}' is out of range", text);
  }
  if (ec == std::errc() && ptr == end) {
    if (!std::isfinite(v)) return Fail("feature value '{}' is not finite", text);
    return FeatureValue(v);
  }
  return FeatureValue(std::string(text));
}

Expected<void> CheckFeatureName(std::string_view name) {
  if (name.empty() || name.size() > 63) return Fail("feature name '{}' must be 1-63 characters", name);
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                    c == '.';
    if (!ok) {
      return Fail("feature name '{}' may hold only a-z, 0-9, '_', '-' and '.'", name);
    }
  }
  return {};
}

std::string FormatFeatureValue(const FeatureValue& value) {
  if (const double* d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  return std::get<std::string>(value);
}

Expected<void> FeatureTable::Set(const std::string& app, AppFeatures features) {
  if (app.empty()) return Fail("features for an empty application name");
  for (const auto& [name, value] : features) {
    if (Expected<void> ok = CheckFeatureName(name); !ok) {
      return Fail("application '{}': {}", app, ok.error().message);
    }
    const bool numeric = std::holds_alternative<double>(value);
    if (numeric && !std::isfinite(std::get<double>(value))) {
      return Fail("application '{}': feature '{}' is not finite", app, name);
    }
    if (!numeric && std::get<std::string>(value).empty()) {
      return Fail("application '{}': feature '{}' is empty", app, name);
    }
    if (auto it = numeric_.find(name); it != numeric_.end() && it->second != numeric) {
      return Fail("application '{}': feature '{}' is {} here but {} for other applications", app,
                  name, numeric ? "numeric" : "categorical", numeric ? "categorical" : "numeric");
    }
  }
  for (const auto& [name, value] : features)
    numeric_.emplace(name, std::holds_alternative<double>(value));
  apps_[app] = std::move(features);
  return {};
}

const AppFeatures* FeatureTable::Find(std::string_view app) const {
  auto it = apps_.find(app);
  return it == apps_.end() ? nullptr : &it->second;
}

Expected<FeatureTable> FeatureTable::LoadCsv(const std::string& path) {
  Expected<CsvTable> table = CsvTable::ReadFile(path);
  if (!table) return std::unexpected(table.error());
  Expected<std::vector<int>> cols = table->Columns({"app", "feature", "value"});
  if (!cols) return std::unexpected(cols.error());
  std::map<std::string, AppFeatures, std::less<>> apps;
  std::map<std::string, bool, std::less<>> numeric;  // each name's kind, from its first line
  for (const CsvRow& row : table->rows()) {
    const std::string& app = row.cells[(*cols)[0]];
    const std::string& name = row.cells[(*cols)[1]];
    if (app.empty()) return table->FailAt(row, "empty app");
    if (Expected<void> ok = CheckFeatureName(name); !ok) {
      return table->FailAt(row, (*cols)[1], ok.error().message);
    }
    Expected<FeatureValue> value = ParseFeatureValue(row.cells[(*cols)[2]]);
    if (!value) return table->FailAt(row, (*cols)[2], value.error().message);
    const bool is_number = std::holds_alternative<double>(*value);
    if (const auto [it, fresh] = numeric.emplace(name, is_number); it->second != is_number) {
      return table->FailAt(row, (*cols)[2],
                           fmt::format("feature '{}' is {} here but {} on an earlier line", name,
                                       is_number ? "numeric" : "categorical",
                                       is_number ? "categorical" : "numeric"));
    }
    if (!apps[app].emplace(name, std::move(*value)).second) {
      return table->FailAt(row, fmt::format("feature '{}' of '{}' given twice", name, app));
    }
  }
  FeatureTable out;  // every line was checked above: Set cannot refuse any of it
  for (auto& [app, features] : apps) TESSERA_CHECK(out.Set(app, std::move(features)).has_value());
  return out;
}

Expected<void> FeatureTable::SaveCsv(const std::string& path) const {
  std::ofstream out(path);
  if (!out) return Fail("{}: cannot write", path);
  out << "app,feature,value\n";
  for (const auto& [app, features] : apps_) {
    for (const auto& [name, value] : features)
      out << app << ',' << name << ',' << FormatFeatureValue(value) << '\n';
  }
  if (!out) return Fail("{}: write failed", path);
  return {};
}

bool EncodedFeatures::HasAny(Eigen::Index r) const {
  for (Eigen::Index c = 0; c < x.cols(); ++c) {
    if (!std::isnan(x(r, c))) return true;
  }
  return false;
}

EncodedFeatures Encode(const FeatureTable& table, const std::vector<std::string>& row_keys,
                       const std::vector<std::string>& column_keys) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // Per feature name: numeric values by row, or the category of each row.
  struct Column {
    bool numeric = true;
    std::vector<double> value;
    std::vector<std::string> category;
  };
  std::map<std::string, Column, std::less<>> columns;
  const size_t m = row_keys.size();
  for (size_t r = 0; r < m; ++r) {
    const AppFeatures* f = table.Find(row_keys[r]);
    if (f == nullptr) continue;
    for (const auto& [name, value] : *f) {
      Column& col = columns[name];
      if (col.value.empty()) {
        col.numeric = std::holds_alternative<double>(value);
        col.value.assign(m, kNaN);
        col.category.assign(m, "");
      }
      if (col.numeric)
        col.value[r] = std::get<double>(value);
      else
        col.category[r] = std::get<std::string>(value);
    }
  }
  EncodedFeatures out;
  std::vector<std::vector<double>> encoded;  // column-major
  for (auto& [name, col] : columns) {
    const int group = static_cast<int>(out.names.size());
    out.names.push_back(name);
    if (col.numeric) {
      bool positive = true;
      for (double v : col.value) positive = positive && (std::isnan(v) || v > 0);
      double sum = 0, sq = 0;
      int n = 0;
      for (double& v : col.value) {
        if (std::isnan(v)) continue;
        if (positive) v = std::log(v);
        sum += v;
        ++n;
      }
      const double mean = sum / n;
      for (double v : col.value) {
        if (!std::isnan(v)) sq += (v - mean) * (v - mean);
      }
      const double sd = n > 1 ? std::sqrt(sq / (n - 1)) : 0.0;
      for (double& v : col.value) {
        if (!std::isnan(v)) v = sd > 0 ? (v - mean) / sd : 0.0;
      }
      encoded.push_back(std::move(col.value));
      out.group.push_back(group);
    } else {
      std::map<std::string, int> levels;
      for (const std::string& c : col.category) {
        if (!c.empty()) levels.emplace(c, 0);
      }
      const double on = std::sqrt(0.5);
      for (const auto& level : levels) {
        std::vector<double> onehot(m, kNaN);
        for (size_t r = 0; r < m; ++r) {
          if (!col.category[r].empty()) onehot[r] = col.category[r] == level.first ? on : 0.0;
        }
        encoded.push_back(std::move(onehot));
        out.group.push_back(group);
      }
    }
  }
  out.x.resize(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(encoded.size()));
  for (size_t c = 0; c < encoded.size(); ++c) {
    for (size_t r = 0; r < m; ++r)
      out.x(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = encoded[c][r];
  }
  out.columns = ComputeShares(column_keys);
  return out;
}

Eigen::MatrixXd SquaredDistances(const EncodedFeatures& f, double missing_penalty,
                                 const std::vector<double>& weights) {
  const Eigen::Index m = f.x.rows();
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(m, m);
  // Per feature group: the squared difference of its columns, or the penalty when either row
  // lacks it (a row lacks a whole group at once: Encode writes NaN into all its columns, and
  // NaN propagates through the difference).
  size_t begin = 0;
  while (begin < f.group.size()) {
    size_t end = begin;
    while (end < f.group.size() && f.group[end] == f.group[begin]) ++end;
    const double weight =
        weights.empty() ? 1.0 : weights[static_cast<size_t>(f.group[begin])];
    if (weight == 0) {
      begin = end;
      continue;
    }
    const Eigen::MatrixXd cols = f.x.middleCols(static_cast<Eigen::Index>(begin),
                                                static_cast<Eigen::Index>(end - begin));
    Eigen::ArrayXd part(m);
    for (Eigen::Index a = 0; a < m; ++a) {
      part = (cols.rowwise() - cols.row(a)).array().square().rowwise().sum();
      d.col(a).array() += weight * part.isNaN().select(missing_penalty, part);
    }
    begin = end;
  }
  d.diagonal().setZero();
  return d;
}

}  // namespace tessera::predict
