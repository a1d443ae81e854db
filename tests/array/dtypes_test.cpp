// The dtypes beyond bool/int32/int64/float32/float64: int8, int16, uint8..uint64, float16 and
// complex64/complex128. Expected values are NumPy 2.4's (written down from numpy).
#include <complex>
#include <limits>
#include <sstream>

#include <cereal/archives/binary.hpp>

#include "array_test_util.hpp"
#include "ops/task_serialize.hpp"
#include "tessera/array/complex.hpp"

using namespace tessera_test;

namespace {

constexpr DType kAll[] = {DType::Bool,    DType::Int8,    DType::Int16,    DType::Int32,    DType::Int64,
                          DType::UInt8,   DType::UInt16,  DType::UInt32,   DType::UInt64,   DType::Float16,
                          DType::Float32, DType::Float64, DType::Complex64, DType::Complex128};

template <typename T>
Array array_of(std::vector<T> v, std::int64_t chunk = 2) {
  const auto n = static_cast<std::int64_t>(v.size());
  return from_block(Block::from_values(v, {n}), {chunk});
}

template <typename T>
std::vector<T> values_of(const Array& a) {
  const Block b = a.compute();
  const auto s = b.values<T>();
  return {s.begin(), s.end()};
}

std::vector<std::uint16_t> half_bits(const Array& a) {
  std::vector<std::uint16_t> out;
  for (const float16& h : values_of<float16>(a)) out.push_back(h.bits);
  return out;
}

TEST(DTypes, NamesItemsizesAndParsing) {
  const std::size_t sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 8, 16};
  int i = 0;
  for (DType t : kAll) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
    EXPECT_EQ(itemsize(t), sizes[i++]) << dtype_name(t);
    EXPECT_TRUE(valid_dtype_code(static_cast<std::uint8_t>(t)));
  }
  EXPECT_FALSE(valid_dtype_code(kNumDTypes));
  EXPECT_EQ(dtype_name(DType::UInt16), "uint16");
  EXPECT_EQ(dtype_from_name("complex128"), DType::Complex128);
  EXPECT_THROW(dtype_from_name("int128"), DTypeError);
  EXPECT_TRUE(is_unsigned(DType::UInt64) && is_integer(DType::UInt64) && !is_integer(DType::Bool));
  EXPECT_TRUE(is_floating(DType::Float16) && !is_floating(DType::Complex64) && is_complex(DType::Complex64));
}

// np.result_type for every pair, as numpy 2.4 printed it.
TEST(DTypes, PromotionIsNumpysResultType) {
  const char* table[14][14] = {
      {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64", "complex64", "complex128"},
      {"int8", "int8", "int16", "int32", "int64", "int16", "int32", "int64", "float64", "float16", "float32", "float64", "complex64", "complex128"},
      {"int16", "int16", "int16", "int32", "int64", "int16", "int32", "int64", "float64", "float32", "float32", "float64", "complex64", "complex128"},
      {"int32", "int32", "int32", "int32", "int64", "int32", "int32", "int64", "float64", "float64", "float64", "float64", "complex128", "complex128"},
      {"int64", "int64", "int64", "int64", "int64", "int64", "int64", "int64", "float64", "float64", "float64", "float64", "complex128", "complex128"},
      {"uint8", "int16", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64", "complex64", "complex128"},
      {"uint16", "int32", "int32", "int32", "int64", "uint16", "uint16", "uint32", "uint64", "float32", "float32", "float64", "complex64", "complex128"},
      {"uint32", "int64", "int64", "int64", "int64", "uint32", "uint32", "uint32", "uint64", "float64", "float64", "float64", "complex128", "complex128"},
      {"uint64", "float64", "float64", "float64", "float64", "uint64", "uint64", "uint64", "uint64", "float64", "float64", "float64", "complex128", "complex128"},
      {"float16", "float16", "float32", "float64", "float64", "float16", "float32", "float64", "float64", "float16", "float32", "float64", "complex64", "complex128"},
      {"float32", "float32", "float32", "float64", "float64", "float32", "float32", "float64", "float64", "float32", "float32", "float64", "complex64", "complex128"},
      {"float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "complex128", "complex128"},
      {"complex64", "complex64", "complex64", "complex128", "complex128", "complex64", "complex64", "complex128", "complex128", "complex64", "complex64", "complex128", "complex64", "complex128"},
      {"complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128"}};
  for (int i = 0; i < 14; ++i)
    for (int j = 0; j < 14; ++j)
      EXPECT_EQ(dtype_name(promote_types(kAll[i], kAll[j])), table[i][j]) << dtype_name(kAll[i]) << " + " << dtype_name(kAll[j]);
}

TEST(DTypes, NarrowIntegersWrapAndPromote) {
  const Array a = array_of<std::int8_t>({127, -128, 5, -7, 100});
  const Array b = array_of<std::uint8_t>({1, 255, 200, 3, 100}, 3);
  const Array s = a + std::int64_t{1};
  EXPECT_EQ(s.dtype(), DType::Int8);
  EXPECT_EQ(values_of<std::int8_t>(s), (std::vector<std::int8_t>{-128, -127, 6, -6, 101}));
  EXPECT_EQ(values_of<std::uint8_t>(b + b), (std::vector<std::uint8_t>{2, 254, 144, 6, 200}));
  EXPECT_EQ(values_of<std::uint8_t>(-b), (std::vector<std::uint8_t>{255, 1, 56, 253, 156}));
  const Array mixed = a + b;  // int8 + uint8 is int16 in NumPy: no wrap
  EXPECT_EQ(mixed.dtype(), DType::Int16);
  EXPECT_EQ(values_of<std::int16_t>(mixed), (std::vector<std::int16_t>{128, 127, 205, -4, 200}));
  EXPECT_EQ(values_of<std::int8_t>(floor_divide(a, array_of<std::int8_t>({2, -1, 0, 2, 3}))),
            (std::vector<std::int8_t>{63, -128, 0, -4, 33}));
  EXPECT_EQ((a / b).dtype(), DType::Float64);
  EXPECT_EQ(sqrt(a).dtype(), DType::Float16);
  EXPECT_EQ(sqrt(array_of<std::uint16_t>({4})).dtype(), DType::Float32);
  // Weak Python integers keep the array's dtype and must fit it (NumPy's OverflowError).
  EXPECT_THROW(b + std::int64_t{256}, DTypeError);
  EXPECT_THROW(b - std::int64_t{-1}, DTypeError);
  EXPECT_NO_THROW(b + std::int64_t{255});
  EXPECT_EQ((b < std::int64_t{-1}).dtype(), DType::Bool);
  EXPECT_EQ(values_of<bool>(b > std::int64_t{150}), (std::vector<bool>{false, true, true, false, false}));
}

TEST(DTypes, Uint64AboveTwoToThe63) {
  const std::uint64_t big = (1ULL << 63) + 4096, top = std::numeric_limits<std::uint64_t>::max();
  const Array u = array_of<std::uint64_t>({big, 3, top, 0});
  const Array v = array_of<std::uint64_t>({2, big, 7, 1}, 3);
  EXPECT_EQ(values_of<std::uint64_t>(floor_divide(u, v)), (std::vector<std::uint64_t>{big / 2, 0, top / 7, 0}));
  EXPECT_EQ(values_of<std::uint64_t>(mod(u, v)), (std::vector<std::uint64_t>{0, 3, top % 7, 0}));
  EXPECT_EQ(values_of<std::uint64_t>(maximum(u, v)), (std::vector<std::uint64_t>{big, big, top, 1}));
  EXPECT_EQ(values_of<std::uint64_t>(minimum(u, v)), (std::vector<std::uint64_t>{2, 3, 7, 0}));
  EXPECT_EQ(values_of<bool>(u > v), (std::vector<bool>{true, false, true, false}));
  // uint64 against int64 compares exactly (NumPy 2); their arithmetic is float64.
  const Array s = array_of<std::int64_t>({-1, 5, -7, 0});
  EXPECT_EQ(values_of<bool>(u < s), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values_of<bool>(s < u), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ((u + s).dtype(), DType::Float64);
  EXPECT_EQ(values_of<double>(u.astype(DType::Float64)),
            (std::vector<double>{static_cast<double>(big), 3.0, 18446744073709551616.0, 0.0}));
  EXPECT_EQ(values_of<std::uint64_t>(abs(u)), (std::vector<std::uint64_t>{big, 3, top, 0}));
  EXPECT_EQ(values_of<std::uint64_t>(u + std::int64_t{1}), (std::vector<std::uint64_t>{big + 1, 4, 0, 1}));
  EXPECT_EQ(values_of<std::uint64_t>(u.sum()), (std::vector<std::uint64_t>{big + 3 + top}));
  EXPECT_EQ(u.sum().dtype(), DType::UInt64);
  // float -> uint64 as NumPy on x86-64: -1.0 wraps, values above 2**63 are exact.
  const Array f = array_of<double>({-1.0, 9223372036854779904.0, 3.9});
  EXPECT_EQ(values_of<std::uint64_t>(f.astype(DType::UInt64)),
            (std::vector<std::uint64_t>{top, 9223372036854779904ULL, 3}));
}

TEST(DTypes, Uint64MinMaxAboveTwoToThe63) {
  const std::uint64_t big = (1ULL << 63) + 5, top = std::numeric_limits<std::uint64_t>::max();
  const Array u = array_of<std::uint64_t>({7, big, 1ULL << 62, top, 3}, 2);
  EXPECT_EQ(values_of<std::uint64_t>(u.max()), (std::vector<std::uint64_t>{top}));
  EXPECT_EQ(values_of<std::uint64_t>(u.min()), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(u.max().dtype(), DType::UInt64);
  EXPECT_EQ(values_of<std::int64_t>(u.argmax()), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(values_of<std::int64_t>(u.argmin()), (std::vector<std::int64_t>{4}));
  const Array m = from_block(Block::from_values<std::uint64_t>({big, 1, 2, top}, {2, 2}), {1, 1});
  EXPECT_EQ(values_of<std::uint64_t>(m.max(ReduceOptions{.axes = {0}})), (std::vector<std::uint64_t>{big, top}));
  EXPECT_EQ(values_of<std::uint64_t>(m.min(ReduceOptions{.axes = {1}})), (std::vector<std::uint64_t>{1, 2}));
}

TEST(DTypes, FloatToNarrowIntegersAsNumpy) {
  const Array f = array_of<double>({3.7, -1.0, std::nan(""), 1e20});
  EXPECT_EQ(values_of<std::uint8_t>(f.astype(DType::UInt8)), (std::vector<std::uint8_t>{3, 255, 0, 0}));
  EXPECT_EQ(values_of<std::int16_t>(array_of<double>({-3.7, 40000.0}).astype(DType::Int16)),
            (std::vector<std::int16_t>{-3, -25536}));
}

TEST(DTypes, Float16IsStoredRoundedAndComputedWider) {
  EXPECT_EQ(float16(0.1).bits, 0x2e66);
  EXPECT_EQ(static_cast<double>(float16(0.1)), 0.0999755859375);
  const Array a = array_of<float16>({float16(0.1)}, 1), b = array_of<float16>({float16(0.2)}, 1);
  EXPECT_EQ((a + b).dtype(), DType::Float16);
  EXPECT_EQ(half_bits(a + b), (std::vector<std::uint16_t>{13516}));
  // [1, 2, 3, 4, 5] / 3 in float16, its sum and mean (numpy: bits, 5.0, 1.0).
  const Array x = array_of<std::int64_t>({1, 2, 3, 4, 5}).astype(DType::Float16) / 3.0;
  EXPECT_EQ(x.dtype(), DType::Float16);
  EXPECT_EQ(half_bits(x), (std::vector<std::uint16_t>{13653, 14677, 15360, 15701, 16043}));
  EXPECT_EQ(x.sum().dtype(), DType::Float16);
  EXPECT_EQ(half_bits(x.sum()), (std::vector<std::uint16_t>{17664}));
  EXPECT_EQ(half_bits(x.mean()), (std::vector<std::uint16_t>{15360}));
  EXPECT_EQ(half_bits(sqrt(array_of<std::int8_t>({2, 3}))), (std::vector<std::uint16_t>{15784, 16110}));
  // Overflow to inf, and underflow to zero, on store.
  EXPECT_EQ(half_bits(array_of<double>({65504.0, 70000.0, -1e6, 1e-8}).astype(DType::Float16)),
            (std::vector<std::uint16_t>{31743, 31744, 64512, 0}));
  EXPECT_EQ(full({3}, 0.1, {2}, DType::Float16).compute().values<float16>()[2].bits, 0x2e66);
}

TEST(DTypes, ReductionResultDtypesAreNumpys) {
  const Array i8 = array_of<std::int8_t>({100, 100, 100});
  EXPECT_EQ(i8.sum().dtype(), DType::Int64);
  EXPECT_EQ(values_of<std::int64_t>(i8.sum()), (std::vector<std::int64_t>{300}));
  EXPECT_EQ(array_of<std::uint8_t>({200, 200}).sum().dtype(), DType::UInt64);
  EXPECT_EQ(values_of<std::uint64_t>(array_of<std::uint8_t>({200, 200}).sum()), (std::vector<std::uint64_t>{400}));
  EXPECT_EQ(values_of<std::uint64_t>(array_of<std::uint16_t>({7, 9}).prod()), (std::vector<std::uint64_t>{63}));
  EXPECT_EQ(i8.mean().dtype(), DType::Float64);
  EXPECT_EQ(i8.max().dtype(), DType::Int8);
  EXPECT_EQ(values_of<std::int8_t>(array_of<std::int8_t>({-5, 7, 3}).max()), (std::vector<std::int8_t>{7}));
  EXPECT_EQ(values_of<std::int64_t>(array_of<std::uint16_t>({4, 65535, 1}).argmax()), (std::vector<std::int64_t>{1}));
}

TEST(DTypes, BlockAstypeAndSerializationOfEveryDtype) {
  const Block src = Block::from_values<double>({1.5, -2.0, 3.25}, {3});
  for (DType t : kAll) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Block b = src.astype(t);
    EXPECT_EQ(b.dtype(), t);
    std::stringstream ss;
    {
      cereal::BinaryOutputArchive out(ss);
      out(b);
    }
    Block back;
    {
      cereal::BinaryInputArchive in(ss);
      in(back);
    }
    ASSERT_EQ(back.dtype(), t);
    ASSERT_EQ(back.nbytes(), b.nbytes());
    EXPECT_EQ(std::memcmp(back.raw(), b.raw(), b.nbytes()), 0);
    const Block d = back.astype(DType::Float64);
    if (t == DType::Bool) EXPECT_EQ(d.to_doubles(), (std::vector<double>{1, 1, 1}));
    else if (is_unsigned(t)) EXPECT_EQ(d.values<double>()[0], 1.0);
    else if (is_integer(t)) EXPECT_EQ(d.to_doubles(), (std::vector<double>{1, -2, 3}));
    else EXPECT_EQ(d.to_doubles(), (std::vector<double>{1.5, -2.0, 3.25}));
  }
}

// ---- complex ----------------------------------------------------------------------------------

using Z = std::complex<double>;

Array complex_array(const std::vector<Z>& v, std::int64_t chunk = 2) { return array_of<Z>(v, chunk); }

void expect_close(const std::vector<Z>& got, const std::vector<Z>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i]))) << "element " << i << ": " << got[i] << " vs " << want[i];
}

TEST(DTypes, ComplexArithmeticAndParts) {
  const std::vector<Z> zv{{1, 2}, {-3, 0.5}, {0, -1}, {2.5, 2.5}, {-1, -1}};
  const std::vector<Z> wv{{0.5, -1}, {2, 2}, {1, 0}, {-1, 3}, {4, 0.25}};
  const Array z = complex_array(zv), w = complex_array(wv, 3);
  std::vector<Z> sum, prod, quot, ex;
  for (std::size_t i = 0; i < zv.size(); ++i) {
    sum.push_back(zv[i] + wv[i]);
    prod.push_back(zv[i] * wv[i]);
    quot.push_back(zv[i] / wv[i]);
    ex.push_back(std::exp(zv[i]));
  }
  expect_close(values_of<Z>(z + w), sum);
  expect_close(values_of<Z>(z * w), prod);
  expect_close(values_of<Z>(z / w), quot);
  expect_close(values_of<Z>(exp(z)), ex);
  expect_close(values_of<Z>(z * 2.0), {{2, 4}, {-6, 1}, {0, -2}, {5, 5}, {-2, -2}});
  expect_close(values_of<Z>(-z), {{-1, -2}, {3, -0.5}, {0, 1}, {-2.5, -2.5}, {1, 1}});
  EXPECT_EQ(abs(z).dtype(), DType::Float64);
  EXPECT_DOUBLE_EQ(values_of<double>(abs(z))[0], std::sqrt(5.0));
  EXPECT_EQ(values_of<double>(real(z)), (std::vector<double>{1, -3, 0, 2.5, -1}));
  EXPECT_EQ(values_of<double>(imag(z)), (std::vector<double>{2, 0.5, -1, 2.5, -1}));
  expect_close(values_of<Z>(conj(z)), {{1, -2}, {-3, -0.5}, {0, 1}, {2.5, -2.5}, {-1, 1}});
  EXPECT_DOUBLE_EQ(values_of<double>(angle(z))[2], -M_PI / 2);
  EXPECT_EQ(values_of<bool>(z == z), (std::vector<bool>(5, true)));
  EXPECT_EQ(values_of<bool>(z != w), (std::vector<bool>(5, true)));
  // Sums and means split into the real and imaginary parts.
  const Array s = z.sum();
  EXPECT_EQ(s.dtype(), DType::Complex128);
  expect_close(values_of<Z>(s), {{-0.5, 3}});
  expect_close(values_of<Z>(z.mean()), {{-0.1, 0.6}});
  Z p = 1;
  for (const Z& v : zv) p *= v;
  expect_close(values_of<Z>(z.prod()), {p});
  // Views (slices, broadcasting) of complex arrays copy elements.
  expect_close(values_of<Z>(z[{slice(1, 4)}]), {{-3, 0.5}, {0, -1}, {2.5, 2.5}});
  expect_close(values_of<Z>(z[{step(-2)}]), {{-1, -1}, {0, -1}, {1, 2}});
  EXPECT_EQ(z.rechunk({5}).compute().values<Z>()[4], Z(-1, -1));
}

TEST(DTypes, ComplexConversionsAndDtypes) {
  const Array x = array_of<float>({1.5f, -2.0f});
  const Array c = x.astype(DType::Complex64);
  EXPECT_EQ(c.dtype(), DType::Complex64);
  EXPECT_EQ(values_of<std::complex<float>>(c), (std::vector<std::complex<float>>{{1.5f, 0}, {-2.0f, 0}}));
  EXPECT_EQ((c + 1.0).dtype(), DType::Complex64);
  EXPECT_EQ((c + array_of<double>({1, 2})).dtype(), DType::Complex128);
  EXPECT_EQ((c + array_of<std::int16_t>({1, 2})).dtype(), DType::Complex64);
  EXPECT_EQ(abs(c).dtype(), DType::Float32);
  EXPECT_EQ(values_of<double>(complex_array({{3, 4}, {-1, 9}}).astype(DType::Float64)), (std::vector<double>{3, -1}));
  EXPECT_EQ(values_of<std::int32_t>(complex_array({{3.9, 4}, {-1.2, 9}}).astype(DType::Int32)), (std::vector<std::int32_t>{3, -1}));
  const Array m = make_complex(array_of<double>({1, 2}), array_of<double>({3, 4}));
  expect_close(values_of<Z>(m), {{1, 3}, {2, 4}});
  expect_close(values_of<Z>(zeros({2}, {1}, DType::Complex128) + m), {{1, 3}, {2, 4}});
  expect_close(values_of<Z>(ones({2}, {-1}, DType::Complex64).astype(DType::Complex128)), {{1, 0}, {1, 0}});
}

TEST(DTypes, ComplexMatmulIsZgemm) {
  // [[1+i, 2], [0, -i]] @ [[1, i], [2-i, 3]]
  const Array a = from_block(Block::from_values<Z>({{1, 1}, {2, 0}, {0, 0}, {0, -1}}, {2, 2}), {1, 2});
  const Array b = from_block(Block::from_values<Z>({{1, 0}, {0, 1}, {2, -1}, {3, 0}}, {2, 2}), {1, 1});
  const auto got = values_of<Z>(matmul(a, b).reshape({4}));
  expect_close(got, {Z(1, 1) * Z(1, 0) + Z(2, 0) * Z(2, -1), Z(1, 1) * Z(0, 1) + Z(2, 0) * Z(3, 0),
                     Z(0, -1) * Z(2, -1), Z(0, -1) * Z(3, 0)});
}

TEST(DTypes, ComplexRejectsWhatItDoesNotSupport) {
  const Array z = complex_array({{1, 2}, {3, 4}});
  EXPECT_THROW(z < z, DTypeError);
  EXPECT_THROW(maximum(z, z), DTypeError);
  EXPECT_THROW(floor_divide(z, z), DTypeError);
  EXPECT_THROW(z.min(), DTypeError);
  EXPECT_THROW(z.max(), DTypeError);
  EXPECT_THROW(z.var(), DTypeError);
  EXPECT_THROW(floor(z), DTypeError);
  EXPECT_THROW(make_complex(z, z), DTypeError);
  // A fused program never computes on complex values; Block::to_doubles says why.
  EXPECT_THROW(z.compute().to_doubles(), DTypeError);
}

}  // namespace
