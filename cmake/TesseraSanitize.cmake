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
    # Four of UBSan's checks are left out when ASan runs beside it: they cost about a third of
    # the sanitizer build's compile time (a batch of the comm and distributed files: 63 s with
    # them, 39 s without, 36 s under ASan alone; docs/development.md) and find little ASan does
    # not: `null` and `object-size` (a null or out-of-bounds access is an ASan report already),
    # `alignment` (misaligned loads are legal on the x86 and Arm machines we run on), and `vptr`
    # (its only reports here were false ones inside fmt's buffers). The rest of `undefined`
    # (signed overflow, shifts, bounds, enums, bools, unreachable code, ...) stays.
    if(TESSERA_SANITIZE MATCHES "address")
      list(APPEND _tessera_san -fno-sanitize=null,alignment,object-size,vptr)
    endif()
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
