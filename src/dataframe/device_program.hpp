#pragma once
/**
 * @file Private: a partition program (column_expr.hpp) run on a device frame, written once over
 * a back end of the device algorithms: Thrust's host system (device_ops.cpp, the stand-in) or
 * the CUDA system (cuda/frame_device_ops.cpp). What it can run on a device: columns, number and
 * bool literals, + - * / and the comparisons (device_supported() says so when the expression
 * is built); everything else is computed on the host before to_device().
 */
#include <string>
#include <variant>

#include "column_expr.hpp"
#include "device_algorithms_types.hpp"
#include "device_frame.hpp"
#include "tessera/core/error.hpp"

namespace tessera::dataframe::detail {

/** @brief Whether `e` can run on device frames; otherwise `why` says what cannot. */
inline bool device_supported(const ColumnExpr& e, std::string* why);

namespace device_program {

// "add(x, 2)"-like text for messages (header-only: the CUDA back end does not link the
// dataframe library that defines to_string()).
inline std::string text(const ColumnExpr& e) {
  if (e.kind == ColumnExpr::Kind::Field) return e.name;
  if (e.kind == ColumnExpr::Kind::Literal) {
    if (const auto* s = std::get_if<std::string>(&e.literal)) return "\"" + *s + "\"";
    if (const auto* i = std::get_if<std::int64_t>(&e.literal)) return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&e.literal)) return std::to_string(*d);
    if (const auto* b = std::get_if<bool>(&e.literal)) return *b ? "true" : "false";
    return "null";
  }
  std::string out = e.name + "(";
  for (std::size_t i = 0; i < e.args.size(); ++i) out += (i ? ", " : "") + text(e.args[i]);
  return out + ")";
}

inline bool binary_op_of(const std::string& fn, BinaryOp* op) {
  static const std::pair<const char*, BinaryOp> ops[] = {
      {"add", BinaryOp::Add},     {"subtract", BinaryOp::Sub},  {"multiply", BinaryOp::Mul},
      {"equal", BinaryOp::Eq},    {"not_equal", BinaryOp::Ne},  {"less", BinaryOp::Lt},
      {"less_equal", BinaryOp::Le}, {"greater", BinaryOp::Gt}, {"greater_equal", BinaryOp::Ge}};
  for (const auto& [name, o] : ops)
    if (fn == name) {
      *op = o;
      return true;
    }
  return false;
}

// True division is built as divide(cast(a, float64), cast(b, float64)) (dataframe.cpp); the
// device's TrueDiv computes in float64 itself.
inline bool is_true_division(const ColumnExpr& e) {
  if (e.kind != ColumnExpr::Kind::Call || e.name != "divide" || e.args.size() != 2) return false;
  for (const auto& a : e.args)
    if (a.kind != ColumnExpr::Kind::Call || a.name != "cast" || a.cast_to != "float64" || a.args.size() != 1)
      return false;
  return true;
}

inline bool scalar_of(const Literal& l, ScalarOperand* out) {
  if (const auto* b = std::get_if<bool>(&l)) return *out = ScalarOperand::of_bool(*b), true;
  if (const auto* i = std::get_if<std::int64_t>(&l)) return *out = ScalarOperand::of_int(*i), true;
  if (const auto* d = std::get_if<double>(&l)) return *out = ScalarOperand::of_float(*d), true;
  return false;
}

using Operand = std::variant<DeviceColumn, ScalarOperand>;

template <class Backend>
Operand eval(const ColumnExpr& e, const DeviceFrame& f, Backend& be) {
  switch (e.kind) {
    case ColumnExpr::Kind::Field: {
      const DeviceColumn* c = f.find(e.name);
      if (!c) throw Error("device frame: no column '" + e.name + "'");
      return *c;
    }
    case ColumnExpr::Kind::Literal: {
      ScalarOperand s;
      if (!scalar_of(e.literal, &s)) throw Error("device frame: only number and bool literals run on a device");
      return s;
    }
    case ColumnExpr::Kind::Call: break;
  }
  BinaryOp op;
  const ColumnExpr *lhs = nullptr, *rhs = nullptr;
  if (is_true_division(e)) {
    op = BinaryOp::TrueDiv;
    lhs = &e.args[0].args[0];
    rhs = &e.args[1].args[0];
  } else if (binary_op_of(e.name, &op) && e.args.size() == 2) {
    lhs = &e.args[0];
    rhs = &e.args[1];
  } else {
    throw Error("device frame: " + device_program::text(e) + " does not run on a device");
  }
  Operand a = eval(*lhs, f, be), b = eval(*rhs, f, be);
  auto* ca = std::get_if<DeviceColumn>(&a);
  auto* cb = std::get_if<DeviceColumn>(&b);
  if (ca && cb) return be.binary(*ca, op, *cb);
  if (ca) return be.binary(*ca, op, std::get<ScalarOperand>(b));
  if (cb) return be.binary(std::get<ScalarOperand>(a), op, *cb);
  throw Error("device frame: " + device_program::text(e) + " has no column operand");
}

template <class Backend>
DeviceColumn column_of(const ColumnExpr& e, const DeviceFrame& f, Backend& be, const std::string& name) {
  Operand v = eval(e, f, be);
  if (auto* c = std::get_if<DeviceColumn>(&v)) {
    DeviceColumn out = *c;
    out.name = name;
    return out;
  }
  throw Error("device frame: a constant column ('" + name + "') does not run on a device");
}

}  // namespace device_program

/** @brief Runs `program` on `frame` with the back end's filter and binary operations. */
template <class Backend>
DeviceFrame run_device_program(const Program& program, DeviceFrame frame, Backend& be) {
  for (const Step& step : program) {
    if (step.kind == Step::Kind::Filter) {
      frame = be.filter(frame, device_program::column_of(step.exprs.at(0), frame, be, "mask"));
      continue;
    }
    DeviceFrame out;
    out.rows = frame.rows;
    for (std::size_t i = 0; i < step.names.size(); ++i)
      out.columns.push_back(device_program::column_of(step.exprs[i], frame, be, step.names[i]));
    frame = std::move(out);
  }
  return frame;
}

inline bool device_supported(const ColumnExpr& e, std::string* why) {
  switch (e.kind) {
    case ColumnExpr::Kind::Field: return true;
    case ColumnExpr::Kind::Literal: {
      ScalarOperand s;
      if (device_program::scalar_of(e.literal, &s)) return true;
      *why = "the literal " + device_program::text(e);
      return false;
    }
    case ColumnExpr::Kind::Call: break;
  }
  BinaryOp op;
  if (device_program::is_true_division(e))
    return device_supported(e.args[0].args[0], why) && device_supported(e.args[1].args[0], why);
  if (device_program::binary_op_of(e.name, &op) && e.args.size() == 2)
    return device_supported(e.args[0], why) && device_supported(e.args[1], why);
  *why = device_program::text(e);
  return false;
}

}  // namespace tessera::dataframe::detail
