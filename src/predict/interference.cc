#include "predict/interference.h"

#include <cmath>
#include <fstream>

#include "predict/csv.h"

namespace tessera::predict {

Expected<void> InterferenceMatrices::Observe(const std::string& kind, const std::string& victim,
                                             const std::string& aggressor, double lost_fraction) {
  if (kind.empty() || victim.empty() || aggressor.empty()) {
    return Fail("interference observation needs a kind, a victim and an aggressor");
  }
  if (!(lost_fraction >= 0.0 && lost_fraction <= 1.0)) {
    return Fail("interference of {} next to {} ({}): lost fraction {} is outside [0, 1]", victim,
                aggressor, kind, lost_fraction);
  }
  SparseMatrix& m = by_kind_[kind];
  m.Observe(m.AddRow(victim), m.AddCol(aggressor), lost_fraction);
  return {};
}

const SparseMatrix* InterferenceMatrices::Find(const std::string& kind) const {
  const auto it = by_kind_.find(kind);
  return it == by_kind_.end() ? nullptr : &it->second;
}

Expected<void> InterferenceMatrices::SaveCsv(const std::string& path) const {
  std::ofstream out(path);
  if (!out) return Fail("{}: cannot open for writing", path);
  out << "kind,victim,aggressor,value,count,variance\n";
  for (const auto& [kind, m] : by_kind_) {
    for (int r = 0; r < m.rows(); ++r) {
      for (int c = 0; c < m.cols(); ++c) {
        if (!m.Has(r, c)) continue;
        out << fmt::format("{},{},{},{},{},{}\n", kind, m.row_keys()[r], m.col_keys()[c],
                           m.Mean(r, c), m.Count(r, c), m.Variance(r, c));
      }
    }
  }
  out.flush();
  if (!out) return Fail("{}: write failed", path);
  return {};
}

Expected<InterferenceMatrices> InterferenceMatrices::LoadCsv(const std::string& path) {
  Expected<CsvTable> table = ReadCsv(path);
  if (!table) return std::unexpected(table.error());
  const int kind = table->Column("kind"), victim = table->Column("victim"),
            aggressor = table->Column("aggressor"), value = table->Column("value"),
            count = table->Column("count"), variance = table->Column("variance");
  if (kind < 0 || victim < 0 || aggressor < 0 || value < 0) {
    return FailAt(path, 1, "header must name kind,victim,aggressor,value[,count,variance]");
  }
  InterferenceMatrices result;
  for (const CsvRow& row : table->rows) {
    const std::string &k = row.cells[kind], &v = row.cells[victim], &a = row.cells[aggressor];
    if (k.empty() || v.empty() || a.empty()) {
      return FailAt(path, row.line, "empty kind, victim or aggressor");
    }
    Expected<double> loss = ParseDouble(*table, row, value);
    if (!loss) return std::unexpected(loss.error());
    if (*loss < 0 || *loss > 1) {
      return FailAt(path, row.line, fmt::format("value {} is not a fraction in [0, 1]", *loss));
    }
    long long n = 1;
    double var = 0;
    if (count >= 0) {
      Expected<long long> parsed = ParseInt(*table, row, count);
      if (!parsed) return std::unexpected(parsed.error());
      if (*parsed < 1 || *parsed > 1'000'000'000) {
        return FailAt(path, row.line, fmt::format("count {} must be at least 1", *parsed));
      }
      n = *parsed;
    }
    if (variance >= 0) {
      Expected<double> parsed = ParseDouble(*table, row, variance);
      if (!parsed) return std::unexpected(parsed.error());
      if (*parsed < 0) return FailAt(path, row.line, "variance must not be negative");
      var = *parsed;
    }
    SparseMatrix& m = result.by_kind_[k];
    const int r = m.AddRow(v), c = m.AddCol(a);
    if (m.Has(r, c)) {
      return FailAt(path, row.line, fmt::format("duplicate cell ({}, {}, {})", k, v, a));
    }
    m.Set(r, c, *loss, static_cast<int>(n), var);
  }
  return result;
}

}  // namespace tessera::predict
