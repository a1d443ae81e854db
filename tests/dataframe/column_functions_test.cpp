// Series functions queries need (TPC-H's IN, LIKE, EXTRACT(YEAR), CASE): isin, the string tests,
// dt_year, where, and a date column compared with a string; each against hand-computed values.
#include <gtest/gtest.h>

#include <arrow/api.h>

#include "../support/message_of.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/dataframe/dataframe.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::message_of;
using testing::sorted_rows;

DataFrame functions_frame() {
  arrow::StringBuilder s;
  for (const char* v : {"PROMO BRASS", "STANDARD green TIN", "PROMO", "large"}) s.Append(v).ok();
  s.AppendNull().ok();
  arrow::Int64Builder n;
  for (int v : {1, 2, 3, 4, 5}) n.Append(v).ok();
  arrow::Date32Builder d;  // days since 1970-01-01: 1994-01-01 is 8766
  for (int v : {8765, 8766, 9130, 9131, 0}) d.Append(v).ok();
  auto t = arrow::Table::Make(arrow::schema({arrow::field("s", arrow::utf8()), arrow::field("n", arrow::int64()),
                                             arrow::field("d", arrow::date32())}),
                              {s.Finish().ValueOrDie(), n.Finish().ValueOrDie(), d.Finish().ValueOrDie()});
  return from_tables({t->Slice(0, 2), t->Slice(2)});
}

// The values of a one-column result, in row order, as text.
std::vector<std::string> values_of(const DataFrame& df) {
  auto t = df.compute();
  std::vector<std::string> out;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) {
    auto v = t->column(0)->GetScalar(r).ValueOrDie();
    out.push_back(v->is_valid ? v->ToString() : "null");
  }
  return out;
}

TEST(ColumnFunctions, IsinStringTestsYearWhereAndDateComparisonsGiveTheirValues) {
  auto df = functions_frame();
  using V = std::vector<std::string>;
  EXPECT_EQ(values_of(df["n"].isin({std::int64_t{2}, std::int64_t{5}, std::int64_t{9}}).to_frame()),
            V({"false", "true", "false", "false", "true"}));
  EXPECT_EQ(values_of(df["s"].isin({"PROMO", "large"}).to_frame()), V({"false", "false", "true", "true", "false"}));
  EXPECT_EQ(values_of(df["n"].isin({}).to_frame()), V({"false", "false", "false", "false", "false"}));
  EXPECT_EQ(values_of(df["s"].str_startswith("PROMO").to_frame()), V({"true", "false", "true", "false", "null"}));
  EXPECT_EQ(values_of(df["s"].str_endswith("TIN").to_frame()), V({"false", "true", "false", "false", "null"}));
  EXPECT_EQ(values_of(df["s"].str_contains("green").to_frame()), V({"false", "true", "false", "false", "null"}));
  EXPECT_EQ(values_of(df["s"].str_like("%BRASS").to_frame()), V({"true", "false", "false", "false", "null"}));
  EXPECT_EQ(values_of(df["s"].str_like("PROM_").to_frame()), V({"false", "false", "true", "false", "null"}));
  EXPECT_EQ(values_of(df["d"].dt_year().to_frame()), V({"1993", "1994", "1994", "1995", "1970"}));
  EXPECT_EQ(values_of(df["s"].str_slice(0, 2).to_frame()), V({"PR", "ST", "PR", "la", "null"}));
  EXPECT_NE(message_of([&] { df["s"].str_slice(2, 1); }).find("str_slice"), std::string::npos);
  EXPECT_EQ(values_of(df["n"].where(df["n"] > std::int64_t{2}, std::int64_t{0}).to_frame()), V({"0", "0", "3", "4", "5"}));
  EXPECT_EQ(values_of(df["n"].where(df["s"].str_startswith("PROMO"), df["n"] * std::int64_t{10}).to_frame()),
            V({"1", "20", "3", "40", "50"}));  // a null mask takes `other`, as pandas' where
  // A date column against a string reads the string as a date.
  EXPECT_EQ(values_of(df[(df["d"] >= "1994-01-01") & (df["d"] < "1995-01-01")][std::vector<std::string>{"n"}]),
            V({"2", "3"}));
  EXPECT_NE(message_of([&] { df["d"] < "not a date"; }).find("not a date"), std::string::npos);
  EXPECT_NE(message_of([&] { df["n"].str_startswith("x"); }).find("starts_with"), std::string::npos);
  auto other = functions_frame();
  EXPECT_NE(message_of([&] { df["n"].where(other["n"] > std::int64_t{1}, std::int64_t{0}); }).find("different frames"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::dataframe
