# Warnings for every target of the project (the library, the CUDA back end, apps, examples,
# benchmarks and tests), set once here before the subdirectories are added, so a new target
# cannot forget them. TESSERA_WERROR (on in CI: scripts/build.sh sets it when CI=true) makes
# any warning fail the build.
option(TESSERA_WERROR "Treat compiler warnings as errors (CI turns this on)" OFF)

# Designated initializers (LocalClusterOptions{.n_workers = 2}) are how options are passed here;
# they leave the other fields at their defaults on purpose.
set(TESSERA_CXX_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # g++ 12's flow-based warnings misfire inside libstdc++ at -O3 (std::variant's inactive
  # members "may be used uninitialized", std::string's operator+ "may overlap", a variant
  # "writing 1 byte into a region of size 0"): known false positives of that release.
  list(APPEND TESSERA_CXX_WARNINGS -Wno-maybe-uninitialized -Wno-restrict -Wno-stringop-overflow)
endif()
if(TESSERA_WERROR)
  list(APPEND TESSERA_CXX_WARNINGS -Werror)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${TESSERA_CXX_WARNINGS}>")

# nvcc: its own diagnostics, and the host compiler's for the host side of .cu files.
list(JOIN TESSERA_CXX_WARNINGS "," _tessera_host_warnings)
set(TESSERA_CUDA_WARNINGS "-Xcompiler=${_tessera_host_warnings}")
if(TESSERA_WERROR)
  list(APPEND TESSERA_CUDA_WARNINGS --Werror=all-warnings)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:${TESSERA_CUDA_WARNINGS}>")
