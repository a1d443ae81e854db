# TESSERA_SANITIZE: a comma-separated list for -fsanitize= ("address,undefined" or "thread"),
# applied to every target (CMakePresets.json: the asan and tsan presets). The CUDA back end is
# left out of sanitized builds: the CUDA runtime and ASan's shadow memory do not mix.
set(TESSERA_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined or thread")
if(TESSERA_SANITIZE)
  if(TESSERA_SANITIZE MATCHES "thread" AND TESSERA_SANITIZE MATCHES "address")
    message(FATAL_ERROR "TESSERA_SANITIZE: thread and address sanitizers cannot be combined")
  endif()
  set(_tessera_san -fsanitize=${TESSERA_SANITIZE} -fno-omit-frame-pointer)
  if(TESSERA_SANITIZE MATCHES "undefined")
    # Undefined behaviour fails the run instead of printing and going on.
    list(APPEND _tessera_san -fno-sanitize-recover=undefined)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_tessera_san}>")
  add_link_options(${_tessera_san})
  message(STATUS "Tessera sanitizers: ${TESSERA_SANITIZE}")
endif()

# Under ThreadSanitizer the array layer (src/array/, its kernels) is compiled without optimisation
# or debug information: the tsan stage checks the runtime's threads (comm, distributed, exec and
# the layers they use), while a chunk function runs one task on one thread. It is still
# instrumented: the inline functions every file emits (shared_ptr's reference counting, say) are
# merged by the linker into one copy, which may come from any file, so an uninstrumented file
# would hide synchronisation everywhere (and did: false races on every shared_ptr).
set(TESSERA_SANITIZE_ARRAY_OPTIONS "")
if(TESSERA_SANITIZE MATCHES "thread")
  set(TESSERA_SANITIZE_ARRAY_OPTIONS -O0 -g0)
endif()
