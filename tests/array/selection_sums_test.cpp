// Sums and means of boolean selections taken as masked sums (src/array/selection_sums.cpp):
// the same numbers as summing the selected elements, for masks of the array's shape and 1-d
// masks along an axis, several chunkings and both local executors; NaN where the mask is false
// stays out; the graphs select nothing into new blocks.
#include <cmath>
#include <limits>

#include "array/gather.hpp"
#include "array_test_util.hpp"
#include "tessera/array/indexing.hpp"

using namespace tessera_test;

namespace {

int selection_tasks(const Array& a) {
  int n = 0;
  const Graph g = a.to_graph(nullptr);
  for (const auto& [key, t] : g.tasks())
    n += t.op == detail::kMaskBandOp || t.op == detail::kMaskSelectOp;
  return n;
}

Ref scalar_ref(DType t, double v) { return ref_of(t, {}, {v}); }

}  // namespace

TEST(SelectionSums, SumAndMeanOfAMaskOfTheArraysShape) {
  const Ref x = sample(DType::Float64, {6, 7}, 1);
  double sum = 0, kept = 0;
  for (double v : x.v)
    if (v > 0.3) {
      sum += v;
      ++kept;
    }
  check_expr({x}, [](auto& a) { return a[0][a[0] > 0.3].sum(); }, scalar_ref(DType::Float64, sum), {1e-12, 1e-12});
  check_expr({x}, [](auto& a) { return a[0][a[0] > 0.3].mean(); }, scalar_ref(DType::Float64, sum / kept),
             {1e-12, 1e-12});
  check_expr({x}, [](auto& a) { return a[0][a[0] > 0.3].sum({.keepdims = true}); }, ref_of(DType::Float64, {1}, {sum}),
             {1e-12, 1e-12});
  // The mask is another array (chunked differently by check_expr).
  const Ref m = make_ref(DType::Bool, {6, 7}, [](auto& i) { return static_cast<double>((i[0] + 2 * i[1]) % 3 == 0); });
  double masked = 0;
  for (std::size_t i = 0; i < x.v.size(); ++i) masked += m.v[i] != 0 ? x.v[i] : 0.0;
  check_expr({x, m}, [](auto& a) { return a[0][a[1]].sum(); }, scalar_ref(DType::Float64, masked), {1e-12, 1e-12});
}

TEST(SelectionSums, NothingIsSelectedIntoBlocks) {
  const Ref x = sample(DType::Float64, {8, 8}, 2);
  const Array a = to_array(x, {2});
  EXPECT_EQ(selection_tasks(a[a > 0.0]), 4);  // the selection itself: a task per band of rows
  EXPECT_EQ(selection_tasks(a[a > 0.0].sum()), 0);
  EXPECT_EQ(selection_tasks(a[a > 0.0].mean()), 0);
  const Array v = to_array(sample(DType::Float64, {8}, 3), {3});
  EXPECT_EQ(selection_tasks(v[v > 0.0].sum()), 0);
}

TEST(SelectionSums, NanAndInfWhereTheMaskIsFalseStayOut) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Ref x = ref_of(DType::Float64, {2, 3}, {1.0, nan, 2.5, -inf, 4.0, nan});
  check_expr({x}, [](auto& a) { return a[0][isfinite(a[0])].sum(); }, scalar_ref(DType::Float64, 7.5));
  check_expr({x}, [](auto& a) { return a[0][isfinite(a[0])].mean(); }, scalar_ref(DType::Float64, 2.5));
  // Nothing kept: a sum of 0, a mean of NaN (as NumPy's mean of an empty array).
  check_expr({x}, [](auto& a) { return a[0][a[0] > 100.0].sum(); }, scalar_ref(DType::Float64, 0.0));
  check_expr({x}, [](auto& a) { return a[0][a[0] > 100.0].mean(); }, scalar_ref(DType::Float64, nan));
}

TEST(SelectionSums, IntegersSumAsInt64) {
  const Ref x = sample(DType::Int32, {5, 4}, 4);
  double sum = 0;
  for (double v : x.v)
    if (v < 3) sum += v;
  check_expr({x}, [](auto& a) { return a[0][a[0] < 3].sum(); }, scalar_ref(DType::Int64, sum));
}

TEST(SelectionSums, OneDimensionalMasksAlongAnAxis) {
  const Ref x = sample(DType::Float64, {5, 4}, 5);
  const std::vector<bool> rows = {true, false, true, true, false}, cols = {false, true, true, false};
  const Ref rm = ref_of(DType::Bool, {5}, {1, 0, 1, 1, 0}), cm = ref_of(DType::Bool, {4}, {0, 1, 1, 0});
  double all_rows = 0, all_cols = 0;
  std::vector<double> per_col(4, 0.0), per_row(5, 0.0);
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 4; ++j) {
      const double v = x.at({i, j});
      if (rows[i]) {
        all_rows += v;
        per_col[j] += v;
      }
      if (cols[j]) {
        all_cols += v;
        per_row[i] += v;
      }
    }
  check_expr({x, rm}, [](auto& a) { return compress(a[1], a[0], 0).sum(); }, scalar_ref(DType::Float64, all_rows));
  check_expr({x, rm}, [](auto& a) { return a[0][a[1]].sum(); }, scalar_ref(DType::Float64, all_rows));
  check_expr({x, rm}, [](auto& a) { return compress(a[1], a[0], 0).sum({.axes = {0}}); },
             ref_of(DType::Float64, {4}, per_col));
  check_expr({x, rm}, [](auto& a) { return compress(a[1], a[0], 0).mean(); },
             scalar_ref(DType::Float64, all_rows / 12.0));
  check_expr({x, cm}, [](auto& a) { return compress(a[1], a[0], 1).sum({.axes = {1}, .keepdims = true}); },
             ref_of(DType::Float64, {5, 1}, per_row));
  check_expr({x, cm}, [](auto& a) { return compress(a[1], a[0], 1).mean({.axes = {1}}); },
             make_ref(DType::Float64, {5}, [&](auto& i) { return per_row[i[0]] / 2.0; }));
  // A sum over the other axis keeps the selected one: the selection is computed.
  const Array sel = compress(to_array(cm, {2}), to_array(x, {2}), 1);
  EXPECT_GT(selection_tasks(sel.sum({.axes = {0}})), 0);
  EXPECT_EQ(selection_tasks(sel.sum()), 0);
}
