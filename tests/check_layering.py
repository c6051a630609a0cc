#!/usr/bin/env python3
"""Fails when an #include breaks the layering docs/layout.md promises, between modules
and between files.

Modules: each may include its own headers and those of the modules it stands on (DEPENDS, and
what they stand on in turn). `crawler/parse` stands on `request` alone, so a program that only
parses pages links no Redis client and no scheduler.

Files: inside a module, a header and its source (foo.h and foo.cpp) are one component, and the
components' includes form no cycle. A cycle is an upward include: an interface's source that
includes one of its implementations (scheduler.cpp -> memory_scheduler.h), a part that includes
the whole it belongs to (progress_line.cpp -> engine.h). A factory that knows every
implementation lives in a file of its own, with no header (scheduler_factory.cpp).

detail/: a module's detail/ headers are for its own sources. No other module includes them, and
no public header does (detail/ is not installed: a user's project that included the public header
would not compile).

    python3 tests/check_layering.py [SOURCE_DIR]     # prints each offending include, exits 1
"""
import pathlib
import re
import sys

# What each module may include besides itself; the closure is taken below.
DEPENDS = {
    "config": set(),
    "request": {"config"},
    "redis": {"config"},
    "dedup": {"request", "redis"},
    "scheduler": {"dedup"},
    "crawler/parse": {"request"},
    "crawler": {"scheduler", "crawler/parse"},
    "spiders": {"crawler"},
    "crawler/cli": {"crawler"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def below(module, seen=None):
    """Every module `module` may include, itself excluded."""
    seen = set() if seen is None else seen
    for lower in DEPENDS[module]:
        if lower not in seen:
            seen.add(lower)
            below(lower, seen)
    return seen


def module_of(path):
    """The module a repository path ("crawler/parse/html.h") belongs to, or None."""
    parts = pathlib.PurePosixPath(path).parts
    if len(parts) >= 2 and parts[0] == "crawler" and f"crawler/{parts[1]}" in DEPENDS:
        return f"crawler/{parts[1]}"
    return parts[0] if parts and parts[0] in DEPENDS else None


def component_of(path):
    """foo.h and foo.cpp are one component: "crawler/engine"."""
    return str(pathlib.PurePosixPath(path).with_suffix(""))


def find_cycles(graph):
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                cycles.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = []
    graph = {}  # component -> {component: "file:line" of an include that makes the edge}
    sources = sorted(path for top in {m.split("/")[0] for m in DEPENDS}
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
            if there != here and there not in below(here):
                problems.append(f"{where}, but {here} does not stand on {there}")
            elif there != here and "/detail/" in header:
                problems.append(f"{where}, a detail header of another module ({there})")
            elif "/detail/" in header and relative.endswith(".h") and "/detail/" not in relative:
                problems.append(f"{where}, a detail header, from a public one (not installed)")
            if there == here and component_of(header) != component_of(relative):
                graph.setdefault(component_of(relative), {}).setdefault(
                    component_of(header), f"{relative}:{number}")
    for cycle in find_cycles(graph):
        edges = [f"{graph[a][b]} includes {b}.h" for a in cycle for b in cycle
                 if b in graph.get(a, {})]
        problems.append(f"these files include each other (one of them includes a header above "
                        f"it): {'; '.join(edges)}")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} includes break the layering", file=sys.stderr)
        return 1
    print(f"layering holds in {root}, between modules and between files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
