#pragma once
// CsvTable: a whole comma-separated file read into memory, each row tagged with its line number
// so that every later complaint can name "file:line". The data files Tessera reads (profile and
// interference matrices, MIGProfiler tables) never quote or escape commas, so neither does this
// reader: a double quote anywhere is an error rather than a silent misparse.
//
// Values; no shared state; thread-compatible.

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace tessera::predict {

struct CsvRow {
  int line = 0;  // 1-based line number in the file
  std::vector<std::string> cells;
};

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<CsvRow> rows;

  // Index of the named header column, or -1.
  int Column(std::string_view name) const;
};

// Reads `path`: the first non-empty line is the header; every data row must have exactly as many
// cells as the header. Blank lines are skipped; '\r' line endings are accepted.
[[nodiscard]] Expected<CsvTable> ReadCsv(const std::string& path);

// Strict number parsing for one cell (the whole cell must be the number, finite).
[[nodiscard]] Expected<double> ParseDouble(const CsvTable& table, const CsvRow& row, int column);
[[nodiscard]] Expected<long long> ParseInt(const CsvTable& table, const CsvRow& row, int column);

}  // namespace tessera::predict
