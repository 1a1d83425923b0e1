# Fails when code shown in the README differs from the files that are built and
# tested: the README's first C++ block must be examples/readme_example.cpp, and
# its Lua block must appear verbatim in examples/fenced_store.lua.
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
string(FIND "${readme}" "```cpp\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's C++ example differs from examples/readme_example.cpp")
endif()

# The quick start's next block runs the CLI where scripts/demo.sh builds it.
file(READ ${DEMO} demo)
string(REGEX MATCH "-B (build/[a-z]+)" built "${demo}")
set(cli "${CMAKE_MATCH_1}/cli/redlock")
string(FIND "${readme}" "**Next: your first lock from the shell.**" next)
string(FIND "${readme}" "${cli} --config configs/local.json run" run_line)
if(next EQUAL -1 OR run_line EQUAL -1)
  message(FATAL_ERROR "README.md's quick start has no next block running ${cli}, where scripts/demo.sh builds it")
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
