#pragma once
// CsvTable: a whole comma-separated file read into memory as a header and rows, each row tagged
// with the line it starts on, so that every later complaint names "file:line" and the column.
// The one CSV reader of Tessera: profile and interference matrices, MIGProfiler tables and the
// OpenB traces all come through it.
//
// The format is RFC 4180's: a field may be quoted ("a,b" is one field, "" inside quotes is one
// quote, a quoted field may span lines); a quote inside an unquoted field, text after a closing
// quote, or a quote left open at the end of the text is an Error. Besides: a UTF-8 byte-order
// mark at the very start is dropped; lines may end in "\n" or "\r\n"; empty lines are skipped
// (before the header too); the first record is the header and every later record must have as
// many fields as it.
//
// Values; no shared state; thread-compatible.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace tessera {

struct CsvRow {
  int line = 0;  // 1-based line on which the record starts
  std::vector<std::string> cells;
};

class CsvTable {
 public:
  // Reads and parses the file at `path`; errors name the path.
  [[nodiscard]] static Expected<CsvTable> ReadFile(const std::string& path);
  // Parses `text`; errors name `source` where they would name a file.
  [[nodiscard]] static Expected<CsvTable> Parse(std::string_view text, std::string source);

  const std::string& source() const { return source_; }
  int header_line() const { return header_line_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<CsvRow>& rows() const { return rows_; }

  // The index of the first header column named `name`: nullopt for an optional column that is
  // absent; an Error naming the header line for a required one.
  std::optional<int> FindColumn(std::string_view name) const;
  [[nodiscard]] Expected<int> Column(std::string_view name) const;
  // Column() of each name, in order; the first missing one is the Error.
  [[nodiscard]] Expected<std::vector<int>> Columns(
      std::initializer_list<std::string_view> names) const;

  // Strict number parsing of one cell: the whole cell is the number (no spaces, no '+'),
  // finite for Double, within long long for Int. Errors name file:line and the column.
  [[nodiscard]] Expected<double> Double(const CsvRow& row, int column) const;
  [[nodiscard]] Expected<long long> Int(const CsvRow& row, int column) const;

  // "file:line: message", and "file:line: column 'name': message".
  [[nodiscard]] std::unexpected<Error> FailAt(const CsvRow& row, const std::string& message) const;
  [[nodiscard]] std::unexpected<Error> FailAt(const CsvRow& row, int column,
                                              const std::string& message) const;

 private:
  std::string source_;
  int header_line_ = 0;
  std::vector<std::string> header_;
  std::vector<CsvRow> rows_;
};

}  // namespace tessera
