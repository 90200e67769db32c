#include "base/csv.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace tessera {
namespace {

// A record and the line it starts on; nullopt cells mean an empty line.
struct Record {
  int line = 0;
  std::optional<std::vector<std::string>> cells;
};

// Splits `text` into records, one call of Next() per record, until done().
class Scanner {
 public:
  Scanner(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  bool done() const { return pos_ >= text_.size(); }

  Expected<Record> Next() {
    Record record{line_, std::nullopt};
    if (AtLineEnd()) {  // an empty line
      SkipLineEnd();
      return record;
    }
    std::vector<std::string> cells;
    while (true) {
      Expected<std::string> field = Field();
      if (!field) return std::unexpected(field.error());
      cells.push_back(std::move(*field));
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      SkipLineEnd();  // or the end of the text
      break;
    }
    record.cells = std::move(cells);
    return record;
  }

 private:
  // "\n", or "\r\n", or a '\r' that ends the text.
  bool AtLineEnd() const {
    if (pos_ >= text_.size()) return false;
    if (text_[pos_] == '\n') return true;
    return text_[pos_] == '\r' && (pos_ + 1 == text_.size() || text_[pos_ + 1] == '\n');
  }

  void SkipLineEnd() {
    if (pos_ >= text_.size()) return;
    if (text_[pos_] == '\r') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    ++line_;
  }

  bool AtFieldEnd() const { return pos_ >= text_.size() || text_[pos_] == ',' || AtLineEnd(); }

  Expected<std::string> Field() {
    std::string field;
    if (pos_ < text_.size() && text_[pos_] == '"') return Quoted();
    while (!AtFieldEnd()) {
      if (text_[pos_] == '"') {
        return FailAt(source_, line_, "a quote inside an unquoted field (quote the whole field)");
      }
      field += text_[pos_++];
    }
    return field;
  }

  Expected<std::string> Quoted() {
    const int opened = line_;
    std::string field;
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= text_.size()) return FailAt(source_, opened, "quoted field is never closed");
      const char c = text_[pos_++];
      if (c == '"') {
        if (pos_ < text_.size() && text_[pos_] == '"') {
          field += '"';
          ++pos_;
          continue;
        }
        break;
      }
      if (c == '\n') ++line_;
      field += c;
    }
    if (!AtFieldEnd()) return FailAt(source_, line_, "text after the closing quote of a field");
    return field;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

Expected<CsvTable> CsvTable::ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail("{}: cannot open for reading", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Fail("{}: read error", path);
  return Parse(text.str(), path);
}

Expected<CsvTable> CsvTable::Parse(std::string_view text, std::string source) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
  CsvTable table;
  table.source_ = std::move(source);
  Scanner scanner(text, table.source_);
  bool have_header = false;
  while (!scanner.done()) {
    Expected<Record> record = scanner.Next();
    if (!record) return std::unexpected(record.error());
    if (!record->cells) continue;
    if (!have_header) {
      table.header_ = std::move(*record->cells);
      table.header_line_ = record->line;
      have_header = true;
      continue;
    }
    if (record->cells->size() != table.header_.size()) {
      return tessera::FailAt(table.source_, record->line,
                             fmt::format("expected {} fields (as in the header), found {}",
                                         table.header_.size(), record->cells->size()));
    }
    table.rows_.push_back(CsvRow{record->line, std::move(*record->cells)});
  }
  if (!have_header) return tessera::FailAt(table.source_, 1, "empty file (no header line)");
  return table;
}

std::optional<int> CsvTable::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

Expected<int> CsvTable::Column(std::string_view name) const {
  if (std::optional<int> column = FindColumn(name)) return *column;
  return tessera::FailAt(source_, header_line_, fmt::format("missing column '{}'", name));
}

Expected<std::vector<int>> CsvTable::Columns(std::initializer_list<std::string_view> names) const {
  std::vector<int> columns;
  for (std::string_view name : names) {
    Expected<int> column = Column(name);
    if (!column) return std::unexpected(column.error());
    columns.push_back(*column);
  }
  return columns;
}

Expected<double> CsvTable::Double(const CsvRow& row, int column) const {
  const std::string& cell = row.cells.at(static_cast<size_t>(column));
  double value = 0;
  const char* end = cell.data() + cell.size();
  const auto [ptr, ec] = std::from_chars(cell.data(), end, value);
  if (cell.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return FailAt(row, column, fmt::format("'{}' is not a finite number", cell));
  }
  return value;
}

Expected<long long> CsvTable::Int(const CsvRow& row, int column) const {
  const std::string& cell = row.cells.at(static_cast<size_t>(column));
  long long value = 0;
  const char* end = cell.data() + cell.size();
  const auto [ptr, ec] = std::from_chars(cell.data(), end, value);
  if (cell.empty() || ec != std::errc() || ptr != end) {
    return FailAt(row, column, fmt::format("'{}' is not an integer", cell));
  }
  return value;
}

std::unexpected<Error> CsvTable::FailAt(const CsvRow& row, const std::string& message) const {
  return tessera::FailAt(source_, row.line, message);
}

std::unexpected<Error> CsvTable::FailAt(const CsvRow& row, int column,
                                        const std::string& message) const {
  return tessera::FailAt(
      source_, row.line,
      fmt::format("column '{}': {}", header_.at(static_cast<size_t>(column)), message));
}

}  // namespace tessera
