# Fails when the README's first C++ block differs from examples/readme_example.cpp,
# which is compiled with every build: the README's code must not rot.
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
string(FIND "${readme}" "```cpp\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's C++ example differs from examples/readme_example.cpp")
endif()
