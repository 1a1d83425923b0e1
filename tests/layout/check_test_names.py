#!/usr/bin/env python3
"""Every doctest case name can be run by ctest.

doctest_discover_tests makes one ctest test per case, and ctest splits a test's name at
';' (a CMake list), so a case whose name holds one runs as two filters that match nothing:
it passes without running. Nine cases went unrun that way. Usage: check_test_names.py TESTS_DIR.
"""
import pathlib
import re
import sys

name = re.compile(r'\b(?:TEST_CASE|SCENARIO)\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)[,)]')
bad = []
count = 0
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.cpp")):
    for m in name.finditer(path.read_text()):
        count += 1
        text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        if ";" in text:
            bad.append(f"{path}: {text}")
for b in bad:
    print(f"test names: ';' in a case name (ctest would not run it): {b}")
if count == 0:
    print("test names: no test case found")
    sys.exit(1)
print(f"test names: {count} cases, {len(bad)} with a ';'")
sys.exit(1 if bad else 0)
