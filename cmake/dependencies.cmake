# Resolves each third-party package to an imported target with a stable name
# (redlock_hiredis, redlock_libuv), whichever way it was found. The installed
# redlockConfig.cmake runs this same file, so consumers resolve them the same way.

# hiredis >= 1.0 exports hiredis::hiredis; Debian 12 ships 0.14.1 with a .pc file only
# (its variables-only HiredisConfig.cmake is bypassed on purpose).
if(NOT TARGET redlock_hiredis)
  add_library(redlock_hiredis INTERFACE IMPORTED GLOBAL)
  find_package(hiredis 1.0 CONFIG QUIET)
  if(TARGET hiredis::hiredis)
    target_link_libraries(redlock_hiredis INTERFACE hiredis::hiredis)
  else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(redlock_hiredis_pc REQUIRED IMPORTED_TARGET GLOBAL hiredis>=0.14)
    target_link_libraries(redlock_hiredis INTERFACE PkgConfig::redlock_hiredis_pc)
  endif()
endif()

# libuv >= 1.43 may install libuvConfig.cmake (libuv::uv); Debian 12 ships .pc files only.
if(NOT TARGET redlock_libuv)
  add_library(redlock_libuv INTERFACE IMPORTED GLOBAL)
  find_package(libuv 1.43 CONFIG QUIET)
  if(TARGET libuv::uv)
    target_link_libraries(redlock_libuv INTERFACE libuv::uv)
  else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(redlock_libuv_pc REQUIRED IMPORTED_TARGET GLOBAL libuv>=1.40)
    target_link_libraries(redlock_libuv INTERFACE PkgConfig::redlock_libuv_pc)
  endif()
endif()

# TLS to the nodes (lib/detail/tls_session.cpp). OpenSSL, not hand-written
# crypto: Debian's hiredis 0.14 has no TLS, and OpenSSL is what redis-server
# itself links. Private to the library; a static libredlock needs it to link.
find_package(OpenSSL 1.1.1 REQUIRED)

find_package(nlohmann_json 3.10 REQUIRED)
find_package(Threads REQUIRED)
