# Run by CPack (CPACK_PRE_BUILD_SCRIPTS) on its staging tree, before packing:
# gzips every man page there, as Debian policy asks. `cmake --install` itself
# leaves them as they are.
file(GLOB_RECURSE _pages "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/man/man[1-9]/*.[1-9]")
foreach(_page IN LISTS _pages)
  execute_process(COMMAND gzip -9nf "${_page}" RESULT_VARIABLE _status)
  if(NOT _status EQUAL 0)
    message(FATAL_ERROR "gzip_man_pages: gzip ${_page} failed: ${_status}")
  endif()
endforeach()
