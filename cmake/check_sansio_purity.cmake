# Fails if a file of lib/sansio (DIR) reaches beyond the standard library and the public headers,
# reads a clock, draws a random number or makes a system call. Run by the redlock_sansio target
# before it compiles, and by the unit tests' sansio_purity case.
file(GLOB _files ${DIR}/*.hpp ${DIR}/*.cpp)
if(NOT _files)
  message(FATAL_ERROR "check_sansio_purity: no files under ${DIR}")
endif()
# Standard headers only (no .h, no path), and quoted includes of this folder or include/redlock.
set(_forbidden
  "#include[ \t]*<[^>]*[./][^>]*>"   # <uv.h>, <hiredis/...>, <openssl/...>, <sys/...>
  "#include[ \t]*\"(transport|operations|client|config|detail)/"
  # Standard headers whose job is I/O, time, randomness or threads.
  "#include[ \t]*<(cstdio|iostream|fstream|filesystem|thread|future|random|ctime|csignal)>"
  "_clock::now" "clock_gettime" "random_device" "getrandom" "[^a-z_]s?rand\\(" "arc4random"
  "uv_[a-z_]+\\(" "redis[A-Z][A-Za-z]+\\(" "SSL_[A-Za-z_]+\\(")
set(_failed "")
foreach(file IN LISTS _files)
  file(STRINGS ${file} _lines)
  set(_n 0)
  foreach(line IN LISTS _lines)
    math(EXPR _n "${_n} + 1")
    string(REGEX REPLACE "//.*$" "" _code "${line}")  # comments may name what they avoid
    foreach(pattern IN LISTS _forbidden)
      if(_code MATCHES "${pattern}")
        string(APPEND _failed "\n  ${file}:${_n}: ${line}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(_failed)
  message(FATAL_ERROR "lib/sansio must stay pure (docs/architecture.md); these lines are not:${_failed}")
endif()
