// Conformance cases of the random distributions and of array I/O (raw files, .npy stacks,
// HDF5). Random numbers are not NumPy's (its bit generators are sequential, ours counter-based),
// so cases_rngio.py compares their distribution with NumPy's samples; files are compared byte
// for byte with what NumPy reads and writes.
#include <atomic>
#include <stdexcept>
#include <string>

#include "conformance.hpp"
#include "tessera/array/io.hpp"
#include "tessera/array/random.hpp"

namespace {

using namespace tessera;

/** The regular chunk sizes of an array (its first chunk per axis). */
ChunkSpec spec_of(const Array& like) {
  ChunkSpec c;
  for (const auto& axis : like.chunks()) c.push_back(axis.empty() ? -1 : axis[0]);
  return c;
}

Array placed_like(const Array& x, const Array& like) {
  return like.target() == Target::Device ? x.to_device() : x;
}

DType dtype_named(const std::string& name) {
  if (name == "float64") return DType::Float64;
  if (name == "float32") return DType::Float32;
  if (name == "int64") return DType::Int64;
  if (name == "int32") return DType::Int32;
  if (name == "bool") return DType::Bool;
  throw std::invalid_argument("unknown dtype " + name);
}

}  // namespace

// in[0] gives the shape, the chunking and the target; p: dist, seed, and its parameters.
TESSERA_CONFORMANCE_CASE(random_dist) {
  const Array& like = in[0];
  const Shape& s = like.shape();
  const ChunkSpec c = spec_of(like);
  random::Generator g(static_cast<std::uint64_t>(p.i("seed", 7)));
  const std::string& d = p.s("dist");
  Array x;
  if (d == "random") x = g.random(s, c);
  else if (d == "standard_normal") x = g.standard_normal(s, c);
  else if (d == "integers") x = g.integers(p.i("low"), p.i("high"), s, c, DType::Int64, p.b("endpoint"));
  else if (d == "standard_exponential") x = g.standard_exponential(s, c);
  else if (d == "exponential") x = g.exponential(p.d("scale"), s, c);
  else if (d == "standard_gamma") x = g.standard_gamma(p.d("shape"), s, c);
  else if (d == "gamma") x = g.gamma(p.d("shape"), p.d("scale"), s, c);
  else if (d == "beta") x = g.beta(p.d("a"), p.d("b"), s, c);
  else if (d == "chisquare") x = g.chisquare(p.d("df"), s, c);
  else if (d == "standard_t") x = g.standard_t(p.d("df"), s, c);
  else if (d == "lognormal") x = g.lognormal(p.d("mean"), p.d("sigma"), s, c);
  else if (d == "poisson") x = g.poisson(p.d("lam"), s, c);
  else if (d == "binomial") x = g.binomial(p.i("n"), p.d("p"), s, c);
  else if (d == "geometric") x = g.geometric(p.d("p"), s, c);
  else if (d == "choice") x = g.choice(p.i("a"), s, c, p.b("replace", true));
  else if (d == "permutation") x = g.permutation(s.at(0), c.sizes().at(0));
  else if (d == "normal") x = g.normal(p.d("loc"), p.d("scale"), s, c);
  else if (d == "uniform") x = g.uniform(p.d("low"), p.d("high"), s, c);
  else if (d == "laplace") x = g.laplace(p.d("loc"), p.d("scale"), s, c);
  else if (d == "logistic") x = g.logistic(p.d("loc"), p.d("scale"), s, c);
  else if (d == "gumbel") x = g.gumbel(p.d("loc"), p.d("scale"), s, c);
  else if (d == "rayleigh") x = g.rayleigh(p.d("scale"), s, c);
  else if (d == "weibull") x = g.weibull(p.d("a"), s, c);
  else if (d == "pareto") x = g.pareto(p.d("a"), s, c);
  else if (d == "power") x = g.power(p.d("a"), s, c);
  else if (d == "standard_cauchy") x = g.standard_cauchy(s, c);
  else if (d == "wald") x = g.wald(p.d("mean"), p.d("scale"), s, c);
  else if (d == "triangular") x = g.triangular(p.d("left"), p.d("mode"), p.d("right"), s, c);
  else if (d == "f") x = g.f(p.d("dfnum"), p.d("dfden"), s, c);
  else if (d == "noncentral_f") x = g.noncentral_f(p.d("dfnum"), p.d("dfden"), p.d("nonc"), s, c);
  else if (d == "noncentral_chisquare") x = g.noncentral_chisquare(p.d("df"), p.d("nonc"), s, c);
  else if (d == "vonmises") x = g.vonmises(p.d("mu"), p.d("kappa"), s, c);
  else if (d == "negative_binomial") x = g.negative_binomial(p.d("n"), p.d("p"), s, c);
  else if (d == "zipf") x = g.zipf(p.d("a"), s, c);
  else if (d == "logseries") x = g.logseries(p.d("p"), s, c);
  else if (d == "hypergeometric") x = g.hypergeometric(p.i("ngood"), p.i("nbad"), p.i("nsample"), s, c);
  else throw std::invalid_argument("random_dist: unknown distribution " + d);
  return {placed_like(x, like)};
}

// Rows of counts (multinomial, multivariate_hypergeometric): in[0] gives the size, the chunking
// and the target; the result has one more axis, of the counts. p: dist, seed, n and pvals
// ("0.2,0.3,0.5") or nsample, colors and method.
TESSERA_CONFORMANCE_CASE(random_rows) {
  const Array& like = in[0];
  random::Generator g(static_cast<std::uint64_t>(p.i("seed", 7)));
  const std::string& d = p.s("dist");
  Array x;
  if (d == "multinomial") {
    std::vector<double> pvals;
    std::string list = p.s("pvals");
    for (std::size_t at = 0; at < list.size();) {
      std::size_t used = 0;
      pvals.push_back(std::stod(list.substr(at), &used));
      at += used + 1;  // the comma
    }
    x = g.multinomial(p.i("n"), pvals, like.shape(), spec_of(like));
  } else if (d == "multivariate_hypergeometric") {
    x = g.multivariate_hypergeometric(p.ints("colors"), p.i("nsample"), like.shape(), spec_of(like),
                                      p.s("method", "marginals"));
  } else {
    throw std::invalid_argument("random_rows: unknown distribution " + d);
  }
  return {placed_like(x, like)};
}

// A raw file NumPy wrote (tofile), read in chunks of p.ints("chunks").
TESSERA_CONFORMANCE_CASE(raw_read) {
  const auto shape = p.ints("shape");
  return {from_raw(p.s("path"), dtype_named(p.s("dtype")), Shape(shape.begin(), shape.end()), p.ints("chunks"),
                   p.i("offset", 0))};
}

// in[0] written with to_raw (NumPy then reads the file) and read back in the same chunks.
TESSERA_CONFORMANCE_CASE(raw_roundtrip) {
  to_raw(in[0], p.s("path"));
  return {placed_like(from_raw(p.s("path"), in[0].dtype(), in[0].shape(), spec_of(in[0])), in[0])};
}

// A .npy stack NumPy wrote, read whole.
TESSERA_CONFORMANCE_CASE(npy_stack_read) { return {from_npy_stack(p.s("dir"))}; }

// in[0] written as a .npy stack along p.i("axis") (NumPy then reads the files) and read back.
TESSERA_CONFORMANCE_CASE(npy_stack_roundtrip) {
  to_npy_stack(p.s("dir"), in[0], static_cast<int>(p.i("axis", 0)));
  return {placed_like(from_npy_stack(p.s("dir")), in[0])};
}

// in[0] written as a new HDF5 dataset and read back in the same chunks.
TESSERA_CONFORMANCE_CASE(hdf5_roundtrip) {
  if (!hdf5_supported()) return {in[0]};  // nothing to check in a build without HDF5
  static std::atomic<int> n{0};
  const std::string name = "x" + std::to_string(n++);
  to_hdf5(in[0], p.s("path"), name);
  return {placed_like(from_hdf5(p.s("path"), name, spec_of(in[0])), in[0])};
}
