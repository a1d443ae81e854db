# Apache Arrow C++ for the dataframe layer, from the pinned pyarrow wheel that
# scripts/python_env.sh installs (Debian packages no Arrow C++). Its headers are in
# pyarrow.get_include(); its libraries carry only versioned names (libarrow.so.2600), so they are
# imported by full path, and every target that links them gets that folder as its RPATH.
#
# Sets TESSERA_ARROW_ENABLED and the imported targets tessera_arrow::arrow, ::compute, ::acero,
# ::dataset, ::s3 (the S3 filesystem), ::parquet. TESSERA_DATAFRAME=OFF (or no environment) builds without dataframes.
option(TESSERA_DATAFRAME "Build the dataframe layer (needs Arrow C++ from the pyarrow wheel)" ON)
set(TESSERA_PYENV "$ENV{TESSERA_PYENV}" CACHE PATH "Python environment holding pyarrow (default ~/.cache/tessera/pyenv)")
set(TESSERA_ARROW_ENABLED OFF)

if(TESSERA_DATAFRAME)
  set(_pyenv "${TESSERA_PYENV}")
  if(NOT _pyenv)
    set(_pyenv "$ENV{HOME}/.cache/tessera/pyenv")
  endif()
  set(_python "${_pyenv}/bin/python")
  if(EXISTS "${_python}")
    execute_process(
      COMMAND "${_python}" -c "import pyarrow as pa; print(pa.get_include()); print(pa.get_library_dirs()[0]); print(pa.__version__)"
      OUTPUT_VARIABLE _out RESULT_VARIABLE _rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  else()
    set(_rc 1)
  endif()
  if(_rc EQUAL 0)
    string(REPLACE "\n" ";" _out "${_out}")
    list(GET _out 0 TESSERA_ARROW_INCLUDE_DIR)
    list(GET _out 1 TESSERA_ARROW_LIBRARY_DIR)
    list(GET _out 2 TESSERA_ARROW_VERSION)
    set(_all_found ON)
    foreach(_lib arrow arrow_compute arrow_acero arrow_dataset arrow_s3 parquet)
      file(GLOB _candidates "${TESSERA_ARROW_LIBRARY_DIR}/lib${_lib}.so.[0-9]*")
      list(FILTER _candidates EXCLUDE REGEX "\\.so\\.[0-9]+\\.[0-9]")  # the SONAME file only
      if(NOT _candidates)
        set(_all_found OFF)
        message(STATUS "Arrow: lib${_lib}.so.* not found in ${TESSERA_ARROW_LIBRARY_DIR}")
        continue()
      endif()
      list(GET _candidates 0 _path)
      string(REPLACE "arrow_" "" _short "${_lib}")
      add_library(tessera_arrow::${_short} SHARED IMPORTED GLOBAL)
      set_target_properties(tessera_arrow::${_short} PROPERTIES
        IMPORTED_LOCATION "${_path}"
        INTERFACE_INCLUDE_DIRECTORIES "${TESSERA_ARROW_INCLUDE_DIR}")
    endforeach()
    if(_all_found)
      set(TESSERA_ARROW_ENABLED ON)
      message(STATUS "Arrow C++ ${TESSERA_ARROW_VERSION} (pyarrow wheel): ${TESSERA_ARROW_LIBRARY_DIR}")
    endif()
  else()
    message(STATUS "Arrow: no pyarrow in ${_pyenv} (run scripts/python_env.sh); building without dataframes")
  endif()
endif()
