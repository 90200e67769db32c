#pragma once
// InterferenceMatrices: one SparseMatrix per partition kind ("mps", "mig", "timeslice", ...),
// rows = victim application, columns = aggressor application, value = fraction of the victim's
// isolated QPS lost while the aggressor runs beside it (0 = no slowdown, 1 = starved). Seed 000
// Ch. 6.4 measures these slowdowns and Ch. 8.3 feeds them to the score; the thesis completes them
// with the same collaborative filter as the profile matrix.
//
// CSV (long form): `kind,victim,aggressor,value,count,variance`; loading is all or nothing.
// A value type; not thread-safe for concurrent mutation.

#include <map>
#include <string>

#include "base/error.h"
#include "predict/matrix.h"

namespace tessera::predict {

class InterferenceMatrices {
 public:
  // Fails unless 0 <= lost_fraction <= 1 and kind, victim and aggressor are non-empty.
  [[nodiscard]] Expected<void> Observe(const std::string& kind, const std::string& victim,
                                       const std::string& aggressor, double lost_fraction);

  const std::map<std::string, SparseMatrix>& by_kind() const { return by_kind_; }
  const SparseMatrix* Find(const std::string& kind) const;

  [[nodiscard]] Expected<void> SaveCsv(const std::string& path) const;
  [[nodiscard]] static Expected<InterferenceMatrices> LoadCsv(const std::string& path);

  bool operator==(const InterferenceMatrices&) const = default;

 private:
  std::map<std::string, SparseMatrix> by_kind_;
};

}  // namespace tessera::predict
