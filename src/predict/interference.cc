#include "predict/interference.h"

#include <cmath>
#include <fstream>

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
  Expected<CsvTable> table = CsvTable::ReadFile(path);
  if (!table) return std::unexpected(table.error());
  Expected<std::vector<int>> keys = table->Columns({"kind", "victim", "aggressor"});
  if (!keys) return std::unexpected(keys.error());
  Expected<CellColumns> cells = CellColumns::Of(*table);
  if (!cells) return std::unexpected(cells.error());
  InterferenceMatrices result;
  for (const CsvRow& row : table->rows()) {
    const std::string &k = row.cells[(*keys)[0]], &v = row.cells[(*keys)[1]],
                      &a = row.cells[(*keys)[2]];
    if (k.empty() || v.empty() || a.empty()) {
      return table->FailAt(row, "empty kind, victim or aggressor");
    }
    Expected<CellSummary> cell = ReadCellSummary(*table, row, *cells);
    if (!cell) return std::unexpected(cell.error());
    if (cell->mean < 0 || cell->mean > 1) {
      return table->FailAt(row, cells->value,
                           fmt::format("{} is not a fraction in [0, 1]", cell->mean));
    }
    SparseMatrix& m = result.by_kind_[k];
    const int r = m.AddRow(v), c = m.AddCol(a);
    if (m.Has(r, c)) {
      return table->FailAt(row, fmt::format("duplicate cell ({}, {}, {})", k, v, a));
    }
    m.Set(r, c, cell->mean, cell->count, cell->variance);
  }
  return result;
}

}  // namespace tessera::predict
