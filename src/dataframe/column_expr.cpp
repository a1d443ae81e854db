#include "column_expr.hpp"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/expression.h>

#include "arrow_util.hpp"
#include "tessera/core/error.hpp"

namespace tessera::dataframe::detail {

namespace cp = arrow::compute;

ColumnExpr field(const std::string& column) {
  ColumnExpr e;
  e.kind = ColumnExpr::Kind::Field;
  e.name = column;
  return e;
}

ColumnExpr literal(const Literal& value) {
  ColumnExpr e;
  e.kind = ColumnExpr::Kind::Literal;
  e.literal = value;
  return e;
}

ColumnExpr call(const std::string& function, std::vector<ColumnExpr> args) {
  ColumnExpr e;
  e.kind = ColumnExpr::Kind::Call;
  e.name = function;
  e.args = std::move(args);
  return e;
}

std::shared_ptr<arrow::DataType> parse_type(const std::string& name) {
  static const std::pair<const char*, std::shared_ptr<arrow::DataType> (*)()> simple[] = {
      {"float64", [] { return arrow::float64(); }}, {"double", [] { return arrow::float64(); }},
      {"float32", [] { return arrow::float32(); }}, {"float", [] { return arrow::float32(); }},
      {"int64", [] { return arrow::int64(); }},     {"int32", [] { return arrow::int32(); }},
      {"int16", [] { return arrow::int16(); }},     {"int8", [] { return arrow::int8(); }},
      {"uint8", [] { return arrow::uint8(); }},     {"bool", [] { return arrow::boolean(); }},
      {"uint16", [] { return arrow::uint16(); }},   {"uint32", [] { return arrow::uint32(); }},
      {"uint64", [] { return arrow::uint64(); }},   {"date32", [] { return arrow::date32(); }},
      {"date32[day]", [] { return arrow::date32(); }}, {"date64", [] { return arrow::date64(); }},
      {"date64[ms]", [] { return arrow::date64(); }},
      {"string", [] { return arrow::utf8(); }},     {"str", [] { return arrow::utf8(); }},
      {"large_string", [] { return arrow::large_utf8(); }},
  };
  for (const auto& [n, make] : simple)
    if (name == n) return make();
  const std::pair<const char*, arrow::TimeUnit::type> units[] = {{"timestamp[s]", arrow::TimeUnit::SECOND},
                                                                 {"timestamp[ms]", arrow::TimeUnit::MILLI},
                                                                 {"timestamp[us]", arrow::TimeUnit::MICRO},
                                                                 {"timestamp[ns]", arrow::TimeUnit::NANO},
                                                                 {"datetime64[ns]", arrow::TimeUnit::NANO}};
  for (const auto& [n, unit] : units)
    if (name == n) return arrow::timestamp(unit);
  throw Error("unknown dtype '" + name +
              "' (known: float64, float32, int64, int32, int16, int8, uint8 to uint64, bool, string, large_string, date32, "
              "date64, timestamp[s|ms|us|ns])");
}

namespace {

arrow::Datum literal_datum(const Literal& l) {
  return std::visit(
      [](const auto& v) -> arrow::Datum {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) return arrow::Datum(std::make_shared<arrow::NullScalar>());
        else if constexpr (std::is_same_v<T, std::string>) return arrow::Datum(std::make_shared<arrow::StringScalar>(v));
        else return arrow::Datum(v);
      },
      l);
}

// The values of an is_in call (its arguments after the first), as one array of their common type.
arrow::Datum value_set(const ColumnExpr& e) {
  std::unique_ptr<arrow::ArrayBuilder> builder;
  bool strings = false, floats = false;
  for (std::size_t i = 1; i < e.args.size(); ++i) {
    strings |= std::holds_alternative<std::string>(e.args[i].literal);
    floats |= std::holds_alternative<double>(e.args[i].literal);
  }
  if (strings) {
    arrow::StringBuilder b;
    for (std::size_t i = 1; i < e.args.size(); ++i)
      if (auto s = std::get_if<std::string>(&e.args[i].literal)) check_arrow(b.Append(*s), "isin");
      else check_arrow(b.AppendNull(), "isin");
    return arrow::Datum(unwrap(b.Finish(), "isin"));
  }
  if (floats) {
    arrow::DoubleBuilder b;
    for (std::size_t i = 1; i < e.args.size(); ++i) {
      const auto& l = e.args[i].literal;
      if (auto d = std::get_if<double>(&l)) check_arrow(b.Append(*d), "isin");
      else if (auto n = std::get_if<std::int64_t>(&l)) check_arrow(b.Append(static_cast<double>(*n)), "isin");
      else check_arrow(b.AppendNull(), "isin");
    }
    return arrow::Datum(unwrap(b.Finish(), "isin"));
  }
  arrow::Int64Builder b;
  for (std::size_t i = 1; i < e.args.size(); ++i) {
    const auto& l = e.args[i].literal;
    if (auto n = std::get_if<std::int64_t>(&l)) check_arrow(b.Append(*n), "isin");
    else if (auto t = std::get_if<bool>(&l)) check_arrow(b.Append(*t ? 1 : 0), "isin");
    else check_arrow(b.AppendNull(), "isin");
  }
  return arrow::Datum(unwrap(b.Finish(), "isin"));
}

}  // namespace

cp::Expression to_arrow(const ColumnExpr& e) {
  switch (e.kind) {
    case ColumnExpr::Kind::Field: return cp::field_ref(e.name);
    case ColumnExpr::Kind::Literal: return cp::literal(literal_datum(e.literal));
    case ColumnExpr::Kind::Call: {
      std::vector<cp::Expression> args;
      for (const auto& a : e.args) args.push_back(to_arrow(a));
      if (e.name == "cast") return cp::call("cast", std::move(args), cp::CastOptions::Safe(parse_type(e.cast_to)));
      // pandas' isnull: NaN counts as missing.
      if (e.name == "is_null_nan") return cp::call("is_null", std::move(args), cp::NullOptions(true));
      // Functions with options: the option is the call's last argument, a literal.
      if (e.name == "is_in") {
        // args[1..]: the values; Arrow casts the set to the column's type.
        return cp::call("is_in", {args.front()}, cp::SetLookupOptions(value_set(e)));
      }
      if (e.name == "utf8_slice_codeunits") {  // args[1], args[2]: start and stop
        return cp::call(e.name, {args.front()},
                        cp::SliceOptions(std::get<std::int64_t>(e.args.at(1).literal),
                                         std::get<std::int64_t>(e.args.at(2).literal)));
      }
      if (e.name == "starts_with" || e.name == "ends_with" || e.name == "match_substring" || e.name == "match_like") {
        const auto& pattern = std::get<std::string>(e.args.at(1).literal);
        return cp::call(e.name, {args.front()}, cp::MatchSubstringOptions(pattern));
      }
      return cp::call(e.name, std::move(args));
    }
  }
  throw Error("column expression: unknown kind");
}

void fields_of(const ColumnExpr& e, std::vector<std::string>& out) {
  if (e.kind == ColumnExpr::Kind::Field) out.push_back(e.name);
  for (const auto& a : e.args) fields_of(a, out);  // option literals name no column
}

std::string to_string(const ColumnExpr& e) {
  switch (e.kind) {
    case ColumnExpr::Kind::Field: return e.name;
    case ColumnExpr::Kind::Literal: return literal_datum(e.literal).ToString();
    case ColumnExpr::Kind::Call: {
      std::string s = e.name + "(";
      for (std::size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + to_string(e.args[i]);
      if (e.name == "cast") s += " -> " + e.cast_to;
      return s + ")";
    }
  }
  return "?";
}

std::shared_ptr<arrow::DataType> type_of(const ColumnExpr& e, const std::shared_ptr<arrow::Schema>& schema) {
  ensure_arrow_compute();
  std::vector<std::string> names;
  fields_of(e, names);
  for (const auto& n : names)
    if (!schema->GetFieldByName(n)) {
      std::string have;
      for (const auto& f : schema->fields()) have += (have.empty() ? "" : ", ") + f->name();
      throw Error("column '" + n + "' does not exist (columns: " + have + ")");
    }
  auto bound = to_arrow(e).Bind(*schema);
  if (!bound.ok()) throw Error("cannot compute " + to_string(e) + ": " + bound.status().message());
  return bound->type()->GetSharedPtr();
}

}  // namespace tessera::dataframe::detail
