#!/usr/bin/env python3
"""Fails when a source file includes a header of a module above its own, or another module's
detail/ header: the layering README's Layout section promises (config <- redis <- dedup <-
scheduler <- crawler/parse <- crawler <- spiders, crawler <- crawler/cli) kept by every #include.
A public header includes no detail/ header, its own module's either: detail/ is not installed,
so a user's project that included the public header would not compile.

    python3 tests/check_layering.py [SOURCE_DIR]     # prints each offending line, exits 1
"""
import pathlib
import re
import sys

# A module may include its own headers and those of modules with a lower rank.
RANKS = {"config": 0, "redis": 1, "dedup": 2, "scheduler": 3, "crawler/parse": 4, "crawler": 5,
         "spiders": 6, "crawler/cli": 6}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path):
    """The module a repository path ("crawler/parse/html.h") belongs to, or None."""
    parts = pathlib.PurePosixPath(path).parts
    if len(parts) >= 2 and parts[0] == "crawler" and f"crawler/{parts[1]}" in RANKS:
        return f"crawler/{parts[1]}"
    return parts[0] if parts and parts[0] in RANKS else None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = []
    sources = sorted(path for top in {m.split("/")[0] for m in RANKS}
                     for path in (root / top).rglob("*") if path.suffix in (".h", ".cpp"))
    for source in sources:
        relative = source.relative_to(root).as_posix()
        here = module_of(relative)
        if here is None:
            continue  # tests, benchmarks, fuzzers and examples may use any module
        for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            there = module_of(header)
            if there is None:
                continue
            where = f"{relative}:{number}: includes {header}"
            if there != here and RANKS[there] >= RANKS[here]:
                problems.append(f"{where}, but {there} is not below {here}")
            elif there != here and "/detail/" in header:
                problems.append(f"{where}, a detail header of another module ({there})")
            elif "/detail/" in header and relative.endswith(".h") and "/detail/" not in relative:
                problems.append(f"{where}, a detail header, from a public one (not installed)")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} includes break the layering", file=sys.stderr)
        return 1
    print(f"layering holds in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
