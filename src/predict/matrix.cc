#include "predict/matrix.h"

#include <cmath>
#include <cstring>
#include <fstream>

namespace tessera::predict {

int SparseMatrix::AddRow(const std::string& key) {
  if (const auto it = row_index_.find(key); it != row_index_.end()) return it->second;
  const int index = rows();
  Grow(index + 1, cols());
  row_keys_.push_back(key);
  row_index_.emplace(key, index);
  return index;
}

int SparseMatrix::AddCol(const std::string& key) {
  if (const auto it = col_index_.find(key); it != col_index_.end()) return it->second;
  const int index = cols();
  Grow(rows(), index + 1);
  col_keys_.push_back(key);
  col_index_.emplace(key, index);
  return index;
}

std::optional<int> SparseMatrix::FindRow(const std::string& key) const {
  const auto it = row_index_.find(key);
  if (it == row_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> SparseMatrix::FindCol(const std::string& key) const {
  const auto it = col_index_.find(key);
  if (it == col_index_.end()) return std::nullopt;
  return it->second;
}

void SparseMatrix::Grow(int new_rows, int new_cols) {
  // Column capacity doubles so that adding configurations one by one stays amortised O(1) per
  // cell; rows append at the end of the arrays.
  if (new_cols > capacity_cols_) {
    const int new_capacity = std::max({new_cols, 2 * capacity_cols_, 4});
    std::vector<double> mean(static_cast<size_t>(rows()) * new_capacity, kMissing);
    std::vector<double> m2(mean.size(), 0.0);
    std::vector<int> count(mean.size(), 0);
    for (int r = 0; r < rows(); ++r) {
      for (int c = 0; c < cols(); ++c) {
        const size_t from = Index(r, c);
        const size_t to = static_cast<size_t>(r) * new_capacity + c;
        mean[to] = mean_[from];
        m2[to] = m2_[from];
        count[to] = count_[from];
      }
    }
    mean_ = std::move(mean);
    m2_ = std::move(m2);
    count_ = std::move(count);
    capacity_cols_ = new_capacity;
  }
  const size_t size = static_cast<size_t>(new_rows) * capacity_cols_;
  if (size > mean_.size()) {
    mean_.resize(size, kMissing);
    m2_.resize(size, 0.0);
    count_.resize(size, 0);
  }
}

void SparseMatrix::Observe(int row, int col, double value) {
  TESSERA_CHECK(row >= 0 && row < rows() && col >= 0 && col < cols());
  TESSERA_CHECK(std::isfinite(value));
  const size_t i = Index(row, col);
  if (count_[i] == 0) {
    count_[i] = 1;
    mean_[i] = value;
    m2_[i] = 0.0;
    return;
  }
  ++count_[i];
  const double delta = value - mean_[i];
  mean_[i] += delta / count_[i];
  m2_[i] += delta * (value - mean_[i]);
}

void SparseMatrix::Set(int row, int col, double mean, int count, double variance) {
  TESSERA_CHECK(row >= 0 && row < rows() && col >= 0 && col < cols());
  TESSERA_CHECK(count > 0 && std::isfinite(mean) && variance >= 0);
  const size_t i = Index(row, col);
  mean_[i] = mean;
  count_[i] = count;
  m2_[i] = variance * (count - 1);
}

void SparseMatrix::Clear(int row, int col) {
  TESSERA_CHECK(row >= 0 && row < rows() && col >= 0 && col < cols());
  const size_t i = Index(row, col);
  mean_[i] = kMissing;
  count_[i] = 0;
  m2_[i] = 0.0;
}

double SparseMatrix::Variance(int row, int col) const {
  const size_t i = Index(row, col);
  return count_[i] < 2 ? 0.0 : m2_[i] / (count_[i] - 1);
}

bool operator==(const SparseMatrix& a, const SparseMatrix& b) {
  if (a.row_keys_ != b.row_keys_ || a.col_keys_ != b.col_keys_) return false;
  const auto same = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  for (int r = 0; r < a.rows(); ++r) {
    for (int c = 0; c < a.cols(); ++c) {
      const size_t i = a.Index(r, c), j = b.Index(r, c);
      if (a.count_[i] != b.count_[j] || !same(a.mean_[i], b.mean_[j]) || !same(a.m2_[i], b.m2_[j]))
        return false;
    }
  }
  return true;
}

int SparseMatrix::ObservedCount() const {
  int n = 0;
  for (int r = 0; r < rows(); ++r) {
    for (int c = 0; c < cols(); ++c) n += Has(r, c) ? 1 : 0;
  }
  return n;
}

Eigen::MatrixXd SparseMatrix::ToDense() const {
  Eigen::MatrixXd dense(rows(), cols());
  for (int r = 0; r < rows(); ++r) {
    for (int c = 0; c < cols(); ++c) dense(r, c) = mean_[Index(r, c)];
  }
  return dense;
}

Expected<void> SparseMatrix::SaveCsv(const std::string& path) const {
  std::ofstream out(path);
  if (!out) return Fail("{}: cannot open for writing", path);
  out << "row,column,value,count,variance\n";
  for (int r = 0; r < rows(); ++r) {
    for (int c = 0; c < cols(); ++c) {
      if (!Has(r, c)) continue;
      out << fmt::format("{},{},{},{},{}\n", row_keys_[r], col_keys_[c], Mean(r, c), Count(r, c),
                         Variance(r, c));
    }
  }
  out.flush();
  if (!out) return Fail("{}: write failed", path);
  return {};
}

Expected<SparseMatrix> SparseMatrix::LoadCsv(const std::string& path) {
  Expected<CsvTable> table = CsvTable::ReadFile(path);
  if (!table) return std::unexpected(table.error());
  Expected<std::vector<int>> keys = table->Columns({"row", "column"});
  if (!keys) return std::unexpected(keys.error());
  Expected<CellColumns> cells = CellColumns::Of(*table);
  if (!cells) return std::unexpected(cells.error());
  SparseMatrix m;
  for (const CsvRow& row : table->rows()) {
    const std::string& row_key = row.cells[(*keys)[0]];
    const std::string& col_key = row.cells[(*keys)[1]];
    if (row_key.empty() || col_key.empty()) return table->FailAt(row, "empty row or column key");
    Expected<CellSummary> cell = ReadCellSummary(*table, row, *cells);
    if (!cell) return std::unexpected(cell.error());
    const int r = m.AddRow(row_key), c = m.AddCol(col_key);
    if (m.Has(r, c)) {
      return table->FailAt(row, fmt::format("duplicate cell ({}, {})", row_key, col_key));
    }
    m.Set(r, c, cell->mean, cell->count, cell->variance);
  }
  return m;
}

Expected<CellColumns> CellColumns::Of(const CsvTable& table) {
  Expected<int> value = table.Column("value");
  if (!value) return std::unexpected(value.error());
  return CellColumns{*value, table.FindColumn("count"), table.FindColumn("variance")};
}

Expected<CellSummary> ReadCellSummary(const CsvTable& table, const CsvRow& row,
                                      const CellColumns& columns) {
  Expected<double> value = table.Double(row, columns.value);
  if (!value) return std::unexpected(value.error());
  CellSummary cell{*value, 1, 0.0};
  if (columns.count) {
    Expected<long long> count = table.Int(row, *columns.count);
    if (!count) return std::unexpected(count.error());
    if (*count < 1 || *count > 1'000'000'000) {
      return table.FailAt(row, fmt::format("count {} must be from 1 to 10^9", *count));
    }
    cell.count = static_cast<int>(*count);
  }
  if (columns.variance) {
    Expected<double> variance = table.Double(row, *columns.variance);
    if (!variance) return std::unexpected(variance.error());
    if (*variance < 0) return table.FailAt(row, "variance must not be negative");
    cell.variance = *variance;
  }
  return cell;
}

Expected<void> SaveDenseCsv(const std::string& path, const std::vector<std::string>& row_keys,
                            const std::vector<std::string>& col_keys,
                            const Eigen::MatrixXd& values) {
  TESSERA_CHECK(values.rows() == static_cast<Eigen::Index>(row_keys.size()) &&
                values.cols() == static_cast<Eigen::Index>(col_keys.size()));
  std::ofstream out(path);
  if (!out) return Fail("{}: cannot open for writing", path);
  out << "app";
  for (const std::string& key : col_keys) out << ',' << key;
  out << '\n';
  for (size_t r = 0; r < row_keys.size(); ++r) {
    out << row_keys[r];
    for (Eigen::Index c = 0; c < values.cols(); ++c) {
      const double v = values(static_cast<Eigen::Index>(r), c);
      out << ',';
      if (std::isfinite(v)) out << fmt::format("{:.6g}", v);
    }
    out << '\n';
  }
  out.flush();
  if (!out) return Fail("{}: write failed", path);
  return {};
}

}  // namespace tessera::predict
