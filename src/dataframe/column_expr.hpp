#pragma once
/**
 * @file Private: column expressions (a Series' values) and partition programs (what one
 * tessera.frame.map task does to a partition). A small cereal-encoded tree the client builds
 * and type-checks against the frame's schema (Arrow binds it) and every worker evaluates with
 * Arrow's compute kernels.
 */
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "tessera/dataframe/dataframe.hpp"

namespace arrow {
class Schema;
class DataType;
namespace compute {
class Expression;
}
}  // namespace arrow

namespace tessera::dataframe::detail {

/** @brief A column expression: a column, a constant, or an Arrow compute function of others. */
struct ColumnExpr {
  enum class Kind : std::uint8_t { Field, Literal, Call };
  Kind kind = Kind::Field;
  /** Field: the column; Call: the Arrow function ("add", "greater", "cast", "is_null", ...). */
  std::string name;
  Literal literal;
  /** "cast": the Arrow type name to convert to. */
  std::string cast_to;
  std::vector<ColumnExpr> args;

  template <class A>
  void serialize(A& ar) {
    ar(kind, name, literal, cast_to, args);
  }
};

ColumnExpr field(const std::string& column);
ColumnExpr literal(const Literal& value);
ColumnExpr call(const std::string& function, std::vector<ColumnExpr> args);

/** @brief One step of a partition program. */
struct Step {
  enum class Kind : std::uint8_t { Project, Filter };
  Kind kind = Kind::Project;
  /** Project: the output columns (all of them, in order) and their expressions. Filter: the
   * mask expression in exprs[0]. */
  std::vector<std::string> names;
  std::vector<ColumnExpr> exprs;
  template <class A>
  void serialize(A& ar) {
    ar(kind, names, exprs);
  }
};

using Program = std::vector<Step>;

/** @brief The Arrow expression of `e` (unbound). */
arrow::compute::Expression to_arrow(const ColumnExpr& e);
/**
 * @brief The type `e` has over `schema`; throws Error naming a missing column (and the columns
 * there are) or the types a function cannot take.
 */
std::shared_ptr<arrow::DataType> type_of(const ColumnExpr& e, const std::shared_ptr<arrow::Schema>& schema);
/** @brief The columns `e` reads. */
void fields_of(const ColumnExpr& e, std::vector<std::string>& out);
/** @brief "x + 1"-like text for messages. */
std::string to_string(const ColumnExpr& e);

/** @brief Arrow's type for a type name users write: "float64"/"double", "int32", "string", "bool", "timestamp[s]". */
std::shared_ptr<arrow::DataType> parse_type(const std::string& name);

}  // namespace tessera::dataframe::detail
