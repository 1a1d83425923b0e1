#!/usr/bin/env python3
"""The tree's shape, checked: what docs/architecture.md promises of lib/.

- Every file under lib/ is under 400 lines.
- No class spreads over more than its header and one .cpp: the out-of-line member
  definitions of a class (lines that start with `Class::member(`, after a return type)
  live in one .cpp at most.
- Each layer includes only the layers above it (sansio < transport < operations < client;
  config stands apart and includes sansio only).

Usage: check_layout.py LIB_DIR [PUBLIC_INCLUDE_DIR] (the public classes are checked too). Exit 1 with every violation listed.
"""
import pathlib
import re
import sys

MAX_LINES = 400
# What each layer may include of lib/ (its own folder always).
ALLOWED = {
    "sansio": set(),
    "transport": {"sansio"},
    "operations": {"sansio", "transport"},
    "client": {"sansio", "transport", "operations", "config"},
    "config": {"sansio"},
}


def main() -> int:
    lib = pathlib.Path(sys.argv[1])
    files = sorted(p for p in lib.rglob("*") if p.suffix in (".hpp", ".cpp"))
    problems = []
    if not files:
        problems.append(f"no sources under {lib}")

    classes = set()
    declared = re.compile(r"^\s*(?:class|struct)\s+(?:REDLOCK_API\s+)?([a-z_][a-z0-9_]*)\b[^;]*$")
    headers = files + sorted(pathlib.Path(sys.argv[2]).rglob("*.hpp")) if len(sys.argv) > 2 else files
    for path in headers:
        for line in path.read_text().splitlines():
            m = declared.match(line)
            if m:
                classes.add(m.group(1))

    definition = re.compile(
        r"^(?!\s)(?:template\s*<[^>]*>\s*)?(?:[\w:<>&*,\s]+?\s+)?([a-z_][a-z0-9_]*)::(~?[a-z_][a-z0-9_]*|operator\S*)\s*\(")
    spans = {}
    include = re.compile(r'^\s*#include\s+"([a-z_]+)/')
    for path in files:
        rel = path.relative_to(lib)
        layer = rel.parts[0] if len(rel.parts) > 1 else None
        lines = path.read_text().splitlines()
        if len(lines) > MAX_LINES:
            problems.append(f"{rel}: {len(lines)} lines (at most {MAX_LINES})")
        for number, line in enumerate(lines, 1):
            m = include.match(line)
            if m and layer in ALLOWED and m.group(1) != layer and m.group(1) in ALLOWED:
                if m.group(1) not in ALLOWED[layer]:
                    problems.append(f"{rel}:{number}: the {layer} layer includes {m.group(1)}/")
            if path.suffix != ".cpp":
                continue
            m = definition.match(line)
            if m and m.group(1) in classes:
                spans.setdefault(m.group(1), set()).add(str(rel))
    for name, where in sorted(spans.items()):
        if len(where) > 1:
            problems.append(f"class {name} is defined across {len(where)} .cpp files: {', '.join(sorted(where))}")

    for p in problems:
        print(f"layout: {p}")
    if not problems:
        print(f"layout: {len(files)} files under {lib}: each under {MAX_LINES} lines, "
              f"{len(spans)} classes each in one .cpp, every include follows the layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
