#pragma once
// Side information: what an application declares about itself (docs/prediction.md), as real
// inference pods do: model family, parameter count, batch size, sequence length. A feature is named
// (lower-case letters, digits, '_', '-', '.'), and is numeric (a finite number) or categorical (any
// other text); a name is one or the other for every application of a table. Features are optional:
// an application may state any subset, or none, and still gets a prediction.
//
// Sources: the MIGProfiler loader (model, task, params, batch, seq from the tables), the
// simulator's apps.yaml (`features:`), pod annotations (`tessera.io/feature.<name>`), and a
// long-form CSV `app,feature,value` (`predict evaluate --features`). Every source is all or
// nothing: a malformed value yields one Error naming the file:line or the object, and no table.
//
// Encode turns a table into the numeric matrix the completion methods read, one row per matrix
// row: a numeric feature whose values are all positive is taken in log (sizes and batch counts
// act multiplicatively), then standardised; a categorical one becomes one-hot columns scaled so
// that two different values are at squared distance 1. NaN marks a feature the row lacks.
//
// Values; thread-compatible.

#include <Eigen/Dense>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/error.h"
#include "predict/config_key.h"

namespace tessera::predict {

using FeatureValue = std::variant<double, std::string>;
using AppFeatures = std::map<std::string, FeatureValue, std::less<>>;

// A number when the whole text is a finite number, otherwise the text as a category; an Error
// for empty text.
[[nodiscard]] Expected<FeatureValue> ParseFeatureValue(std::string_view text);
// An Error unless `name` is a valid feature name.
[[nodiscard]] Expected<void> CheckFeatureName(std::string_view name);
std::string FormatFeatureValue(const FeatureValue& value);

class FeatureTable {
 public:
  // Sets (replaces) an application's features. An Error, and no change, for a bad name or a
  // feature whose kind (numeric / categorical) disagrees with the table's other applications.
  [[nodiscard]] Expected<void> Set(const std::string& app, AppFeatures features);
  const AppFeatures* Find(std::string_view app) const;
  bool empty() const { return apps_.empty(); }
  size_t size() const { return apps_.size(); }
  const std::map<std::string, AppFeatures, std::less<>>& apps() const { return apps_; }

  [[nodiscard]] static Expected<FeatureTable> LoadCsv(const std::string& path);
  [[nodiscard]] Expected<void> SaveCsv(const std::string& path) const;

  bool operator==(const FeatureTable&) const = default;

 private:
  std::map<std::string, AppFeatures, std::less<>> apps_;
  std::map<std::string, bool, std::less<>> numeric_;  // the kind of each feature name
};

struct EncodedFeatures {
  Eigen::MatrixXd x;       // rows × columns; NaN where the row lacks the feature
  std::vector<int> group;  // the feature (index into names) each column encodes
  std::vector<std::string> names;
  // Per matrix column, its compute share (config_key.h): the roofline prior (roofline.h) reads
  // it. Empty when the caller named no columns.
  std::vector<ComputeShare> columns;
  bool empty() const { return x.cols() == 0; }
  // True when row `r` states at least one feature.
  bool HasAny(Eigen::Index r) const;
};

// `column_keys`: the matrix's configuration keys, for `columns` (may be empty).
EncodedFeatures Encode(const FeatureTable& table, const std::vector<std::string>& row_keys,
                       const std::vector<std::string>& column_keys = {});

// Squared distances between every pair of rows: per feature, the squared difference of its
// columns; a feature that either row lacks counts `missing_penalty`; each feature's part times
// its `weights` entry (by index into f.names; empty: all 1). Symmetric, zero diagonal.
Eigen::MatrixXd SquaredDistances(const EncodedFeatures& f, double missing_penalty = 1.0,
                                 const std::vector<double>& weights = {});

}  // namespace tessera::predict
