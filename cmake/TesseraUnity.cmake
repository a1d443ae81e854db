# tessera_unity(target): compiles target's sources in batches when TESSERA_UNITY_BUILD is on
# (the option's comment in CMakeLists.txt says why). A batch is one translation unit, so two files
# of a batch must not define the same file-local name (a `static` function, a name in an anonymous
# namespace); files that still do are named by tessera_unity_skip (below) and compiled alone.
function(tessera_unity target)
  if(NOT TESSERA_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH
                                             UNITY_BUILD_BATCH_SIZE ${TESSERA_UNITY_BATCH})
  # g++ warns when a class of an included file has a member of an anonymous-namespace type (a
  # header's class would then differ between translation units); a .cpp included in a batch is
  # still compiled exactly once, so the warning says nothing there.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

# tessera_unity_skip(files...): these sources are compiled alone even in a unity build; each still
# defines a file-local name another file of its target defines too (relative to the calling
# CMakeLists.txt's folder). Renaming the name, or sharing one definition, takes a file off.
function(tessera_unity_skip)
  set_source_files_properties(${ARGN} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
