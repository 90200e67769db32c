#include "base/csv.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tessera {
namespace {

using Cells = std::vector<std::string>;

CsvTable MustParse(std::string_view text) {
  Expected<CsvTable> t = CsvTable::Parse(text, "t.csv");
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return t ? std::move(*t) : CsvTable{};
}

std::string ParseError(std::string_view text) {
  Expected<CsvTable> t = CsvTable::Parse(text, "t.csv");
  EXPECT_FALSE(t.has_value());
  return t ? "" : t.error().message;
}

TEST(CsvTableTest, PlainRowsKeepTheirOrderAndLines) {
  const CsvTable t = MustParse("a,b,c\n1,2,3\n\n4,,6\n");
  EXPECT_EQ(t.header(), (Cells{"a", "b", "c"}));
  EXPECT_EQ(t.header_line(), 1);
  ASSERT_EQ(t.rows().size(), 2u);
  EXPECT_EQ(t.rows()[0].cells, (Cells{"1", "2", "3"}));
  EXPECT_EQ(t.rows()[0].line, 2);
  EXPECT_EQ(t.rows()[1].cells, (Cells{"4", "", "6"}));
  EXPECT_EQ(t.rows()[1].line, 4);  // the blank line 3 is skipped but counted
}

TEST(CsvTableTest, QuotedFieldsHoldCommasQuotesAndLineBreaks) {
  const CsvTable t = MustParse(
      "name,note\n"
      "\"a,b\",\"say \"\"hi\"\"\"\n"
      "\"\",\"two\nlines\"\n"
      "x,\"\"\"\"\n");
  ASSERT_EQ(t.rows().size(), 3u);
  EXPECT_EQ(t.rows()[0].cells, (Cells{"a,b", "say \"hi\""}));
  EXPECT_EQ(t.rows()[1].cells, (Cells{"", "two\nlines"}));
  EXPECT_EQ(t.rows()[1].line, 3);
  EXPECT_EQ(t.rows()[2].cells, (Cells{"x", "\""}));
  EXPECT_EQ(t.rows()[2].line, 5);  // the record before spans lines 3 and 4
}

TEST(CsvTableTest, ByteOrderMarkAndCrLfAreDropped) {
  const CsvTable t = MustParse("\xEF\xBB\xBFid,v\r\n1,\"x\"\r\n\r\n2,y\r\n");
  EXPECT_EQ(t.header(), (Cells{"id", "v"}));  // not "\xEF\xBB\xBFid"
  ASSERT_EQ(t.rows().size(), 2u);
  EXPECT_EQ(t.rows()[0].cells, (Cells{"1", "x"}));
  EXPECT_EQ(t.rows()[1].cells, (Cells{"2", "y"}));
  EXPECT_EQ(t.rows()[1].line, 4);
  EXPECT_EQ(t.FindColumn("id"), 0);
}

TEST(CsvTableTest, LastLineWithoutNewlineAndBlankLinesBeforeTheHeader) {
  const CsvTable t = MustParse("\n\nk,v\n1,2");
  EXPECT_EQ(t.header_line(), 3);
  ASSERT_EQ(t.rows().size(), 1u);
  EXPECT_EQ(t.rows()[0].cells, (Cells{"1", "2"}));
  EXPECT_EQ(t.rows()[0].line, 4);
}

TEST(CsvTableTest, UnterminatedQuoteNamesTheLineItOpensOn) {
  EXPECT_EQ(ParseError("a,b\n1,2\n3,\"open\nstill open\n"),
            "t.csv:3: quoted field is never closed");
}

TEST(CsvTableTest, MalformedQuotesAreErrors) {
  EXPECT_EQ(ParseError("a,b\n1,x\"y\n"),
            "t.csv:2: a quote inside an unquoted field (quote the whole field)");
  EXPECT_EQ(ParseError("a,b\n1,\"x\"y\n"), "t.csv:2: text after the closing quote of a field");
}

TEST(CsvTableTest, RaggedRowNamesItsLine) {
  EXPECT_EQ(ParseError("a,b,c\n1,2,3\n\n4,5\n"),
            "t.csv:4: expected 3 fields (as in the header), found 2");
  // A comma inside quotes does not count as a separator.
  EXPECT_EQ(ParseError("a,b\n\"1,2\"\n"), "t.csv:2: expected 2 fields (as in the header), found 1");
}

TEST(CsvTableTest, EmptyTextHasNoHeader) {
  EXPECT_EQ(ParseError("\n\r\n"), "t.csv:1: empty file (no header line)");
}

TEST(CsvTableTest, MissingColumnIsAnErrorNamingTheHeaderLine) {
  const CsvTable t = MustParse("\nx,y,x\n1,2,3\n");
  EXPECT_EQ(t.FindColumn("x"), 0);  // the first of two
  EXPECT_EQ(t.FindColumn("z"), std::nullopt);
  ASSERT_TRUE(t.Column("y"));
  EXPECT_EQ(*t.Column("y"), 1);
  const Expected<int> z = t.Column("z");
  ASSERT_FALSE(z);
  EXPECT_EQ(z.error().message, "t.csv:2: missing column 'z'");
}

TEST(CsvTableTest, TypedFieldsAreStrictAndNameFileLineAndColumn) {
  const CsvTable t = MustParse("n,x\n42,-2.5e1\n 7,inf\n+1,1e999\n9223372036854775808,0x10\n");
  const std::vector<CsvRow>& r = t.rows();
  EXPECT_EQ(*t.Int(r[0], 0), 42);
  EXPECT_EQ(*t.Double(r[0], 1), -25.0);
  EXPECT_EQ(t.Int(r[1], 0).error().message, "t.csv:3: column 'n': ' 7' is not an integer");
  EXPECT_EQ(t.Double(r[1], 1).error().message, "t.csv:3: column 'x': 'inf' is not a finite number");
  EXPECT_FALSE(t.Int(r[2], 0));     // no '+'
  EXPECT_FALSE(t.Double(r[2], 1));  // overflows
  EXPECT_FALSE(t.Int(r[3], 0));     // 2^63 does not fit
  EXPECT_FALSE(t.Double(r[3], 1));  // no hex
  EXPECT_FALSE(t.Double(r[2], 0));  // no '+' for doubles either
}

TEST(CsvTableTest, ReadFileNamesThePathInErrors) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "tessera_csv_test_read_file.csv";
  {
    std::ofstream out(path);
    out << "a,b\n1,2\n3\n";
  }
  const Expected<CsvTable> t = CsvTable::ReadFile(path.string());
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, path.string() + ":3: expected 2 fields (as in the header), found 1");
  std::filesystem::remove(path);
  const Expected<CsvTable> missing = CsvTable::ReadFile(path.string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, path.string() + ": cannot open for reading");
}

}  // namespace
}  // namespace tessera
