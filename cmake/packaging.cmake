# `cpack -G DEB` in a build tree: one Debian package with everything that
# `cmake --install` installs (library, headers, CMake package, redlock.pc, the
# CLI, its man page and bash completion, the example configs), under /usr.
# Configure with -DCMAKE_INSTALL_PREFIX=/usr so that GNUInstallDirs picks
# Debian's multiarch libdir; the package is consistent with any prefix, since
# the CMake package and redlock.pc find their files relative to themselves.
set(REDLOCK_PACKAGE_CONTACT "redlock maintainers <redlock@example.org>"
    CACHE STRING "Maintainer of the Debian package (name <email>)")
set(REDLOCK_PACKAGE_HOMEPAGE "https://example.org/redlock"
    CACHE STRING "Homepage named in the Debian package")

set(CPACK_PACKAGE_NAME redlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${REDLOCK_PACKAGE_CONTACT})
set(CPACK_PACKAGE_HOMEPAGE_URL ${REDLOCK_PACKAGE_HOMEPAGE})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
# Lines of the control file's long description: CPack indents each one.
string(JOIN "\n" CPACK_PACKAGE_DESCRIPTION
  "A C++20 library for distributed locks over N independent Redis masters,"
  "using the Redlock algorithm, and the redlock command-line tool: a flock(1)"
  "for a fleet. Exclusive, shared and semaphore locks, waiting without"
  "polling, automatic renewal and fencing tokens.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # redlock_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# dpkg-shlibdeps reads what the CLI (and a shared libredlock) link: libc6,
# libstdc++6, libgcc-s1, libhiredis0.14, libuv1, libssl3.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shared libredlock gets a shlibs file and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# The installed CMake package runs find_dependency on these (and pkg-config on
# hiredis, libuv and libssl), and a static libredlock needs them to link. Recommends,
# not Depends: the CLI alone does not need them, and apt installs Recommends
# unless told not to.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "libhiredis-dev (>= 0.14), libuv1-dev (>= 1.40), libssl-dev (>= 1.1.1), nlohmann-json3-dev (>= 3.10), pkg-config")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion, redis-server")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Debian policy: man pages are gzipped (gzip -9n: no name or time stamp).
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/gzip_man_pages.cmake)

# The license (MIT; SPDX-License-Identifier: MIT), installed where Debian keeps a
# package's copyright file, in the machine-readable format (DEP-5), where Debian's
# name for the MIT license is "Expat".
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
file(READ ${PROJECT_SOURCE_DIR}/LICENSE _redlock_license)
string(REGEX REPLACE "\n$" "" _redlock_license "${_redlock_license}")
string(REPLACE "\n" ";" _redlock_license_lines "${_redlock_license}")
set(_redlock_copyright "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: redlock
Upstream-Contact: ${REDLOCK_PACKAGE_CONTACT}
Source: ${REDLOCK_PACKAGE_HOMEPAGE}

Files: *
Copyright: 2026 The redlock authors
License: Expat
Comment: SPDX-License-Identifier: MIT")
foreach(_line IN LISTS _redlock_license_lines)
  if(_line STREQUAL "")
    string(APPEND _redlock_copyright "\n .")
  else()
    string(APPEND _redlock_copyright "\n ${_line}")
  endif()
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/copyright "${_redlock_copyright}\n")
install(FILES ${CMAKE_BINARY_DIR}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build/")
include(CPack)
