#pragma once
/** @file
 * Error types. Every error Tessera raises derives from tessera::Error. */
#include <exception>
#include <stdexcept>
#include <string>

namespace tessera {

/** @brief The message of a stored exception ("closed" for none, "unknown error" for a non-std one). */
std::string describe_exception(std::exception_ptr e);

/** @brief Base of every error Tessera throws. */
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** @brief Incompatible or invalid shapes, chunks or axes (raised when an expression is built). */
class ShapeError : public Error {
 public:
  using Error::Error;
};

/** @brief An operation that does not support the given dtype(s). */
class DTypeError : public Error {
 public:
  using Error::Error;
};

/** @brief An index or slice outside an array's bounds. */
class IndexError : public Error {
 public:
  using Error::Error;
};

/** @brief An operation name that no registry entry provides. */
class UnknownOperationError : public Error {
 public:
  using Error::Error;
};

/** @brief A task raised an exception; what() names the task key and carries its message. */
class TaskError : public Error {
 public:
  TaskError(std::string key, std::string message)
      : Error("task " + key + " failed: " + message), key_(std::move(key)), message_(std::move(message)) {}
  /** @brief With the full text already composed (e.g. by the scheduler: "task K failed because..."). */
  TaskError(std::string key, std::string message, const std::string& what)
      : Error(what), key_(std::move(key)), message_(std::move(message)) {}
  const std::string& key() const noexcept { return key_; }
  /** @brief The task's own message, without the key prefix. */
  const std::string& task_message() const noexcept { return message_; }

 private:
  std::string key_;
  std::string message_;
};

/** @brief Malformed serialized data (a truncated or corrupt message or blob). */
class SerializationError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessera
