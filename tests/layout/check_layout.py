#!/usr/bin/env python3
"""The tree's shape, checked: what docs/architecture.md promises of lib/.

- Every file under lib/ is under 400 lines.
- No class spreads over more than its header and one .cpp: the out-of-line member
  definitions of a class (lines that start with `Class::member(`, after a return type)
  live in one .cpp at most.
- No declaration without a definition: a function a lib header declares (and does not make
  pure virtual, defaulted or deleted) is defined, inline or in some .cpp.
- Each layer includes only the layers above it (sansio < transport < operations < client;
  config stands apart and includes sansio only).

Usage: check_layout.py LIB_DIR [PUBLIC_INCLUDE_DIR] (the public classes are checked too). Exit 1 with every violation listed.
"""
import pathlib
import re
import sys

MAX_LINES = 400
# A class or struct declared (not just named) on a line: its name.
CLASS_DECLARATION = re.compile(r"^\s*(?:class|struct)\s+(?:REDLOCK_API\s+)?([a-z_][a-z0-9_]*)\b[^;]*$")
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
    headers = files + sorted(pathlib.Path(sys.argv[2]).rglob("*.hpp")) if len(sys.argv) > 2 else files
    for path in headers:
        for line in path.read_text().splitlines():
            m = CLASS_DECLARATION.match(line)
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

    problems += undefined_declarations(lib, files)

    for p in problems:
        print(f"layout: {p}")
    if not problems:
        print(f"layout: {len(files)} files under {lib}: each under {MAX_LINES} lines, "
              f"{len(spans)} classes each in one .cpp, every include follows the layers")
    return 1 if problems else 0


# A member or free function declared on one line of a header, ending in ';' (a return type
# before its name, or a constructor's or destructor's own name).
DECLARATION = re.compile(
    r"^\s+(?:\[\[nodiscard\]\]\s+)?(?:(?:virtual|static|explicit|inline|constexpr|friend)\s+)*"
    r"(?P<type>[\w:<>,\s*&]+?\s+[*&]?)?(?P<name>~?[a-z_][a-z0-9_]*)\s*\((?P<args>[^;{}]*)\)\s*"
    r"(?:const)?\s*(?:noexcept(?:\([^)]*\))?)?\s*(?:override|final)?\s*(?:->\s*[^;{=]+)?;\s*(?://.*)?$")


def undefined_declarations(lib, files):
    sources = "\n".join(p.read_text() for p in files if p.suffix == ".cpp")
    found = []
    for header in (p for p in files if p.suffix == ".hpp"):
        text = header.read_text()
        classes = {m.group(1) for line in text.splitlines() if (m := CLASS_DECLARATION.match(line))}
        for number, line in enumerate(text.splitlines(), 1):
            m = DECLARATION.match(line)
            if not m or re.search(r"=\s*(0|default|delete)\s*;", line):
                continue
            name, kind = m.group("name"), (m.group("type") or "").strip()
            if kind.split()[:1] in (["return"], ["delete"], ["throw"]) or (not kind and name.lstrip("~") not in classes):
                continue  # a statement inside an inline body, not a declaration
            body = re.escape(name) + r"\s*\([^;]*\)[^;]*\{"
            defined = re.search(r"(?:\b[a-z_][a-z0-9_]*::)?" + body, sources) or re.search(body, text)
            if not defined:
                found.append(f"{header.relative_to(lib)}:{number}: declared, never defined: {line.strip()}")
    return found


if __name__ == "__main__":
    sys.exit(main())
