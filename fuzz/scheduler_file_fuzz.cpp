// The scheduler-file parser (src/distributed/scheduler_file.cpp): whatever a --scheduler-file
// holds, the address comes out of it or tessera::Error says there is none.
#include <cstddef>
#include <cstdint>
#include <string>

#include "distributed/scheduler_file.hpp"
#include "tessera/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::string address = tessera::distributed::scheduler_address_from_text(text, "fuzz.json");
    if (address.empty()) __builtin_trap();
  } catch (const tessera::Error&) {
  }
  return 0;
}
