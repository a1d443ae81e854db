#pragma once
// The message of what a call throws, for tests that check an error names what is wrong.
#include <exception>
#include <functional>
#include <string>

namespace tessera_test {

/** @brief what() of the exception `fn` throws, or "(no exception)". */
inline std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace tessera_test
