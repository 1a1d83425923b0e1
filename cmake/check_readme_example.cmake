# Fails when code shown in the README differs from the files that are built and
# tested: the README's first C++ block must be examples/readme_example.cpp, and
# its Lua block must appear verbatim in examples/fenced_store.lua.
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
string(FIND "${readme}" "```cpp\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's C++ example differs from examples/readme_example.cpp")
endif()

file(READ ${LUA} lua)
string(REGEX MATCH "```lua\n([^`]*)```" block "${readme}")
if(NOT block)
  message(FATAL_ERROR "README.md has no Lua block")
endif()
string(FIND "${lua}" "${CMAKE_MATCH_1}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's Lua block is not in examples/fenced_store.lua")
endif()
