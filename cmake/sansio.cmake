# redlock_sansio: lib/sansio as a target of its own, so that the decisions' purity is a build
# failure rather than a convention.
#
# - Its include path is lib/ and include/ only, and nothing of libuv, hiredis or OpenSSL is
#   linked or named in its flags.
# - Debian installs uv.h, hiredis/ and openssl/ under /usr/include, where any file could still
#   reach them; sansio_poison/ comes first on this target's path and answers each of those
#   includes with an #error.
# - Every header is compiled on its own (a generated one-line file per header), so a header
#   that no .cpp of the folder includes is checked too.
# - check_sansio_purity.cmake runs before the target builds: it fails on an include of any other
#   layer or of a non-standard header, and on a clock read, a random number or a system call.
set(_sansio_header_checks)
foreach(header IN LISTS redlock_sansio_headers)
  get_filename_component(_name ${header} NAME_WE)
  set(_check ${CMAKE_CURRENT_BINARY_DIR}/sansio_headers/${_name}.cpp)
  file(CONFIGURE OUTPUT ${_check} CONTENT "#include \"sansio/${_name}.hpp\"  // compiles on its own\n")
  list(APPEND _sansio_header_checks ${_check})
endforeach()

add_library(redlock_sansio OBJECT ${redlock_sansio_sources} ${_sansio_header_checks})
target_compile_features(redlock_sansio PUBLIC cxx_std_20)
target_include_directories(redlock_sansio BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/cmake/sansio_poison)
target_include_directories(redlock_sansio PRIVATE ${PROJECT_SOURCE_DIR}/include
                                                  ${PROJECT_SOURCE_DIR}/lib)
target_link_libraries(redlock_sansio PRIVATE $<BUILD_INTERFACE:redlock_warnings>)
set_target_properties(redlock_sansio PROPERTIES CXX_VISIBILITY_PRESET hidden
                                                VISIBILITY_INLINES_HIDDEN ON
                                                POSITION_INDEPENDENT_CODE ${BUILD_SHARED_LIBS})

add_custom_target(redlock_sansio_purity
  COMMAND ${CMAKE_COMMAND} -DDIR=${PROJECT_SOURCE_DIR}/lib/sansio
          -P ${PROJECT_SOURCE_DIR}/cmake/check_sansio_purity.cmake
  COMMENT "lib/sansio: no other layer, no I/O library, no clock, no randomness"
  VERBATIM)
add_dependencies(redlock_sansio redlock_sansio_purity)
