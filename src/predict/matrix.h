#pragma once
// SparseMatrix: the collaborative filter's data (DESIGN §4). Rows and columns are named by string
// keys and numbered densely in insertion order, so hot paths can use the integer index. Each cell
// holds the mean of its observations, their count and variance (Welford); a cell with count 0 is
// missing.
//
// Two matrices use it:
//   - the profile matrix: rows = applications (`bert-base-multilingual-cased/bs32/seq64`),
//     columns = configurations (`A100-40GB/1g.5gb/100`), value = isolated throughput (samples/s);
//   - one interference matrix per partition kind (`mps`, `mig`, `timeslice`): rows = victim
//     application, columns = aggressor application, value = fraction of the victim's QPS lost
//     next to the aggressor (seed 000 Ch. 6.4 and 8.3 treat it as another CF matrix).
//
// Storage is dense (rows × columns): a cell read is one array access. CSV form (long, sparse):
// `row,column,value,count,variance`, one observed cell per line. Loading is all or nothing: a
// malformed file yields one Error naming the file and line and no matrix.
//
// A value type; not thread-safe for concurrent mutation, concurrent const use is fine.

#include <Eigen/Dense>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/csv.h"
#include "base/error.h"

namespace tessera::predict {

inline constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

class SparseMatrix {
 public:
  SparseMatrix() = default;

  int rows() const { return static_cast<int>(row_keys_.size()); }
  int cols() const { return static_cast<int>(col_keys_.size()); }
  const std::vector<std::string>& row_keys() const { return row_keys_; }
  const std::vector<std::string>& col_keys() const { return col_keys_; }

  // Index of a key, adding an empty row/column when it is new.
  int AddRow(const std::string& key);
  int AddCol(const std::string& key);
  std::optional<int> FindRow(const std::string& key) const;
  std::optional<int> FindCol(const std::string& key) const;

  // Folds one observation into a cell (running mean and variance). `value` must be finite.
  void Observe(int row, int col, double value);
  // Replaces a cell by a summary of `count` > 0 observations.
  void Set(int row, int col, double mean, int count = 1, double variance = 0.0);
  void Clear(int row, int col);

  bool Has(int row, int col) const { return count_[Index(row, col)] > 0; }
  double Mean(int row, int col) const { return mean_[Index(row, col)]; }  // kMissing if absent
  int Count(int row, int col) const { return count_[Index(row, col)]; }
  double Variance(int row, int col) const;  // sample variance; 0 with fewer than 2 observations
  int ObservedCount() const;

  // Means as a dense matrix, kMissing (NaN) where nothing was observed.
  Eigen::MatrixXd ToDense() const;

  [[nodiscard]] Expected<void> SaveCsv(const std::string& path) const;
  [[nodiscard]] static Expected<SparseMatrix> LoadCsv(const std::string& path);

  // The same keys in the same order and, in every cell, the same count, mean and spread (bit for
  // bit): two matrices a deterministic method completes alike.
  friend bool operator==(const SparseMatrix& a, const SparseMatrix& b);

 private:
  size_t Index(int row, int col) const {
    return static_cast<size_t>(row) * static_cast<size_t>(capacity_cols_) +
           static_cast<size_t>(col);
  }
  void Grow(int new_rows, int new_cols);

  std::vector<std::string> row_keys_, col_keys_;
  std::unordered_map<std::string, int> row_index_, col_index_;
  int capacity_cols_ = 0;     // row stride of the arrays below
  std::vector<double> mean_;  // kMissing where count_ == 0
  std::vector<double> m2_;    // Welford's sum of squared deviations
  std::vector<int> count_;
};

using ProfileMatrix = SparseMatrix;

// A cell's summary columns as SaveCsv writes them after the keys, value[,count,variance]: the
// part of the CSV form SparseMatrix::LoadCsv and InterferenceMatrices::LoadCsv share.
struct CellColumns {
  int value = 0;
  std::optional<int> count, variance;  // absent: one observation, variance 0

  // An Error naming the header line if `value` is missing.
  [[nodiscard]] static Expected<CellColumns> Of(const CsvTable& table);
};

struct CellSummary {
  double mean = 0;
  int count = 1;
  double variance = 0;
};

// One row's summary; an Error naming file:line and the column for a malformed number, a count
// below 1 or a negative variance.
[[nodiscard]] Expected<CellSummary> ReadCellSummary(const CsvTable& table, const CsvRow& row,
                                                    const CellColumns& columns);

// Dense matrix as CSV: header `app,<col keys...>`, one line per row. For completed matrices.
[[nodiscard]] Expected<void> SaveDenseCsv(const std::string& path,
                                          const std::vector<std::string>& row_keys,
                                          const std::vector<std::string>& col_keys,
                                          const Eigen::MatrixXd& values);

}  // namespace tessera::predict
