// The task-list expression of the linear algebra: building it and lowering it to tasks.
#include "linalg_tasks.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::detail {

DType linalg_dtype(DType t) { return t == DType::Float32 ? DType::Float32 : DType::Float64; }

std::vector<std::int64_t> pivots_to_perm(const std::vector<std::int32_t>& ipiv, std::int64_t rows) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) perm[i] = i;
  for (std::size_t i = 0; i < ipiv.size(); ++i) std::swap(perm[i], perm[static_cast<std::size_t>(ipiv[i] - 1)]);
  return perm;
}

TasksBuilder::TasksBuilder(DType dtype, Shape shape, Chunks chunks, const std::string& prefix)
    : e_(make_expr<TasksExpr>(ExprKind::Tasks, dtype, std::move(shape), std::move(chunks), prefix)) {}

int TasksBuilder::input(const Array& a) {
  const auto& p = expr_of(a);
  for (std::size_t i = 0; i < e_->inputs.size(); ++i)
    if (e_->inputs[i].get() == &p) return static_cast<int>(i);
  e_->inputs.push_back(a.expr());
  return static_cast<int>(e_->inputs.size()) - 1;
}

TaskArg TasksBuilder::chunk(int input, const std::vector<std::int64_t>& coords) const {
  return TaskArg{input, chunk_flat(e_->inputs.at(input)->chunks, coords), false};
}

std::int64_t TasksBuilder::reserve() {
  const auto t = static_cast<std::int64_t>(e_->tasks.size());
  e_->tasks.emplace_back();
  e_->keys.push_back(chunk_key(e_->name + "-t", {t}));
  return t;
}

void TasksBuilder::set(std::int64_t task, std::string op, std::optional<Value> params, std::vector<TaskArg> args) {
  auto& t = e_->tasks.at(static_cast<std::size_t>(task));
  t.op = std::move(op);
  t.params = std::move(params);
  t.args = std::move(args);
}

std::int64_t TasksBuilder::tree_sum(std::vector<std::int64_t> parts, int split_every) {
  if (parts.empty()) throw Error("tree_sum: nothing to add");
  split_every = std::max(split_every, 2);
  while (parts.size() > 1) {
    std::vector<std::int64_t> next;
    for (std::size_t i = 0; i < parts.size(); i += split_every) {
      const std::size_t end = std::min(parts.size(), i + split_every);
      if (end - i == 1) {
        next.push_back(parts[i]);
        continue;
      }
      std::vector<TaskArg> args;
      for (std::size_t j = i; j < end; ++j) args.push_back(own(parts[j]));
      next.push_back(add(kAddOp, std::nullopt, std::move(args)));
    }
    parts = std::move(next);
  }
  return parts[0];
}

Array TasksBuilder::finish(std::vector<std::int64_t> outputs) {
  if (static_cast<std::int64_t>(outputs.size()) != shape_size(chunk_counts(e_->chunks)))
    throw Error("TasksBuilder: " + std::to_string(outputs.size()) + " outputs for " +
                std::to_string(shape_size(chunk_counts(e_->chunks))) + " chunks");
  for (const auto& t : e_->tasks)
    if (t.op.empty()) throw Error("TasksBuilder: a reserved task was never set");
  e_->outputs = std::move(outputs);
  e_->target = joint_target_of(e_->inputs);
  return Array(e_);
}

void Lowering::lower_tasks(const Expr& expr, std::vector<Key>& keys) {
  const auto& e = static_cast<const TasksExpr&>(expr);
  std::vector<const std::vector<Key>*> in;
  for (const auto& i : e.inputs) in.push_back(&lower(i));
  for (std::size_t t = 0; t < e.tasks.size(); ++t) {
    const TaskSpec& s = e.tasks[t];
    Task task;
    task.key = e.keys[t];
    task.op = s.op;
    if (s.params) task.args.emplace_back(*s.params);
    for (const TaskArg& a : s.args) {
      const auto i = static_cast<std::size_t>(a.index);
      if (a.input == TaskArg::kSelf) {
        task.args.emplace_back(KeyRef{e.keys.at(i)});
      } else if (a.task) {
        if (e.inputs.at(a.input)->kind != ExprKind::Tasks) throw Error("lower_tasks: a task of an input without tasks");
        const auto& other = static_cast<const TasksExpr&>(*e.inputs.at(a.input));
        task.args.emplace_back(KeyRef{other.keys.at(i)});
      } else {
        task.args.emplace_back(KeyRef{in.at(a.input)->at(i)});
      }
    }
    add_task(std::move(task));
  }
  for (auto t : e.outputs) keys.push_back(e.keys.at(static_cast<std::size_t>(t)));
}

}  // namespace tessera::detail
