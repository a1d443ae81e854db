# The array device algorithms (device_algorithms.cuh) on Thrust's host system
# (device_algorithms_host.cpp): a static library the tests link, so machines without a GPU test
# the algorithms the CUDA back end runs (cuda/array_algorithms.cu). It needs Thrust's headers
# (the CUDA toolkit's CCCL) but no CUDA runtime, and is built only when the headers are found
# (TESSERA_THRUST_INCLUDE_DIR, from src/dataframe/device_algorithms.cmake).
if(TESSERA_THRUST_INCLUDE_DIR)
  add_library(tessera_array_algorithms STATIC ${CMAKE_CURRENT_LIST_DIR}/device_algorithms_host.cpp)
  target_link_libraries(tessera_array_algorithms PUBLIC tessera::tessera)
  target_include_directories(tessera_array_algorithms PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_include_directories(tessera_array_algorithms SYSTEM PRIVATE ${TESSERA_THRUST_INCLUDE_DIR})
  target_compile_definitions(tessera_array_algorithms PRIVATE THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_CPP)
  if(TESSERA_SANITIZE MATCHES "undefined")
    # As for the dataframe algorithms: Thrust's host system binds references through null
    # system pointers (tag dispatch that never reads them).
    target_compile_options(tessera_array_algorithms PRIVATE -fno-sanitize=null)
  endif()
  message(STATUS "Tessera array algorithms on Thrust's host system: ON")
else()
  message(STATUS "Tessera array algorithms on Thrust's host system: OFF (no Thrust headers found)")
endif()
