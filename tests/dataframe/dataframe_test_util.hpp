#pragma once
// Helpers for the dataframe tests: scratch folders with CSV files, frames cut from a table, and
// reading computed tables.
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>

#include "tessera/dataframe/dataframe.hpp"

namespace tessera::dataframe::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("tessera-df-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return file(name);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/** A frame of `parts` partitions cut from `t` in contiguous slices (the last ones may be empty). */
inline DataFrame sliced_frame(const std::shared_ptr<arrow::Table>& t, int parts) {
  std::vector<std::shared_ptr<arrow::Table>> pieces;
  const std::int64_t each = (t->num_rows() + parts - 1) / parts;
  for (int p = 0; p < parts; ++p) pieces.push_back(t->Slice(std::min<std::int64_t>(p * each, t->num_rows()), each));
  return from_tables(pieces);
}

/** Value of `column` at `row` as a double (null: NaN). */
inline double number(const std::shared_ptr<arrow::Table>& t, const std::string& column, std::int64_t row) {
  auto col = t->GetColumnByName(column);
  if (!col) throw std::runtime_error("no column " + column + " in " + t->schema()->ToString());
  auto s = col->GetScalar(row).ValueOrDie();
  if (!s->is_valid) return std::nan("");
  auto d = s->CastTo(arrow::float64()).ValueOrDie();
  return std::static_pointer_cast<arrow::DoubleScalar>(d)->value;
}

inline std::string text(const std::shared_ptr<arrow::Table>& t, const std::string& column, std::int64_t row) {
  return t->GetColumnByName(column)->GetScalar(row).ValueOrDie()->ToString();
}

/** {key as text: value} of a two-column result (key column, value column). */
inline std::map<std::string, double> as_map(const std::shared_ptr<arrow::Table>& t, const std::string& key,
                                            const std::string& value) {
  std::map<std::string, double> out;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) out[text(t, key, r)] = number(t, value, r);
  return out;
}

/** Every row as text ("a=1 b=null "), sorted: tables compared whatever their row order. */
inline std::vector<std::string> sorted_rows(const std::shared_ptr<arrow::Table>& t) {
  std::vector<std::string> rows;
  for (std::int64_t r = 0; r < t->num_rows(); ++r) {
    std::string row;
    for (int c = 0; c < t->num_columns(); ++c) {
      auto s = t->column(c)->GetScalar(r).ValueOrDie();
      row += t->field(c)->name() + "=" + (s->is_valid ? s->ToString() : "null") + " ";
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace tessera::dataframe::testing
