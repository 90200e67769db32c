#include "predict/csv.h"

#include <charconv>
#include <cmath>
#include <fstream>

namespace tessera::predict {
namespace {

std::vector<std::string> Split(std::string_view line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      cells.emplace_back(line.substr(start));
      return cells;
    }
    cells.emplace_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

}  // namespace

int CsvTable::Column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

Expected<CsvTable> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail("{}: cannot open for reading", path);
  CsvTable table;
  table.path = path;
  std::string line;
  int number = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.find('"') != std::string::npos) {
      return FailAt(path, number, "quoted CSV fields are not supported");
    }
    std::vector<std::string> cells = Split(line);
    if (!have_header) {
      table.header = std::move(cells);
      have_header = true;
      continue;
    }
    if (cells.size() != table.header.size()) {
      return FailAt(path, number,
                    fmt::format("expected {} fields (as in the header), found {}",
                                table.header.size(), cells.size()));
    }
    table.rows.push_back(CsvRow{number, std::move(cells)});
  }
  if (in.bad()) return Fail("{}: read error", path);
  if (!have_header) return FailAt(path, 1, "empty file (no header line)");
  return table;
}

Expected<double> ParseDouble(const CsvTable& table, const CsvRow& row, int column) {
  const std::string& cell = row.cells.at(static_cast<size_t>(column));
  double value = 0;
  const char* end = cell.data() + cell.size();
  const auto [ptr, ec] = std::from_chars(cell.data(), end, value);
  if (cell.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return FailAt(table.path, row.line,
                  fmt::format("column '{}': '{}' is not a finite number",
                              table.header[static_cast<size_t>(column)], cell));
  }
  return value;
}

Expected<long long> ParseInt(const CsvTable& table, const CsvRow& row, int column) {
  const std::string& cell = row.cells.at(static_cast<size_t>(column));
  long long value = 0;
  const char* end = cell.data() + cell.size();
  const auto [ptr, ec] = std::from_chars(cell.data(), end, value);
  if (cell.empty() || ec != std::errc() || ptr != end) {
    return FailAt(table.path, row.line,
                  fmt::format("column '{}': '{}' is not an integer",
                              table.header[static_cast<size_t>(column)], cell));
  }
  return value;
}

}  // namespace tessera::predict
