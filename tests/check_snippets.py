#!/usr/bin/env python3
"""Compiles, runs or checks every code block of README.md and docs/*.md, so a snippet that stops
working fails CI. Each block is preceded by a marker that says how it is checked:

  <!-- snippet NAME: KIND details -->

  ci                      .ci/run itself runs the block as written (README's two commands)
  run [(URL served from DIR)]
                          sh, run by bash in a scratch folder that sees ./build, config/ and
                          spiders/; URL is replaced by a loopback server of DIR
  static (why)            sh that needs what CI has not (a live site, a Redis host, minutes):
                          `bash -n`, and every `crawler SUBCOMMAND` in it must exist
  crawl-file              json, passed to `crawler check`
  python-settings         a settings.py excerpt: its names, as a crawl file's settings, pass
                          `crawler check` (ours take Scrapy's settings as they are)
  scrapy-redis-spider beside NAME
                          a Python spider module, imported by Debian's python3 with
                          scrapy-redis's own source (../shared/scrapy-redis/real/src): its
                          spider's rules, callback and follow in order, must be those of the
                          crawl-file snippet NAME (a mixed fleet runs a request by rule index)
  declarations            C++ compiled on its own (and given to programs that use it)
  statements              C++ statements, compiled in a callback's body (`response`, `out`)
  program TARGET uses A B; runs ARGS
                          C++ main: A, B and the block, linked to TARGET and, with `runs`, run
                          with ARGS ({repo}, {tmp} replaced); a {tmp} file it names must be
                          written and not empty
  cmake                   CMake lines that must configure and build a project

C++ is built against the installed package (--prefix), as a user's project is.

  tests/check_snippets.py --crawler build/crawler/crawler --prefix /tmp/prefix
"""
import argparse
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!-- snippet ([A-Za-z0-9_]+): ([a-z-]+)(.*?) -->$")


class Snippet:
    def __init__(self, path, line, name, kind, details, language, code):
        self.path, self.line, self.name, self.kind = path, line, name, kind
        self.details, self.language, self.code = details.strip(), language, code

    def where(self):
        return f"{self.path}:{self.line} ({self.name})"


def read_snippets(repo):
    snippets, problems = [], []
    for path in ["README.md"] + sorted(glob.glob(os.path.join(repo, "docs", "*.md"))):
        relative = os.path.relpath(os.path.join(repo, path), repo)
        lines = open(os.path.join(repo, path), encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            if not lines[i].startswith("```"):
                i += 1
                continue
            language = lines[i][3:].strip()
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            marker = MARKER.match(lines[i - 1]) if i > 0 else None
            if not marker:
                problems.append(f"{relative}:{i + 1}: a ```{language} block without a "
                                "<!-- snippet NAME: KIND --> marker on the line before")
            else:
                snippets.append(Snippet(relative, i + 1, marker[1], marker[2], marker[3],
                                        language, "\n".join(lines[i + 1:end]) + "\n"))
            i = end + 1
    return snippets, problems


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(command, **options):
    return subprocess.run(command, capture_output=True, text=True, timeout=300, **options)


def crawler_commands(code):
    """The subcommand of every crawler invocation in a shell block."""
    joined = code.replace("\\\n", " ")
    for line in joined.split("\n"):
        for part in re.split(r"[|;&]+", line.split("#")[0]):
            words = part.split()
            if words and os.path.basename(words[0]) == "crawler" and len(words) > 1:
                yield words[1]


def check_shell(snippet, args, scratch):
    checked = run(["bash", "-n"], input=snippet.code)
    if checked.returncode != 0:
        return f"bash -n: {checked.stderr.strip()}"
    listed = run([args.crawler]).stdout.split("Subcommands:")[-1]
    known = {line.split()[0] for line in listed.split("\n") if line.strip()}
    for command in crawler_commands(snippet.code):
        if command not in known:
            return f"`crawler {command}` is not a command (crawler lists {sorted(known)})"
    if snippet.kind != "run":
        return None
    folder = tempfile.mkdtemp(dir=scratch)
    for name in ("config", "spiders"):
        os.symlink(os.path.join(args.repo, name), os.path.join(folder, name))
    os.makedirs(os.path.join(folder, "build", "crawler"))
    os.symlink(os.path.abspath(args.crawler), os.path.join(folder, "build", "crawler", "crawler"))
    code, server = snippet.code, None
    served = re.match(r"\((\S+) served from (\S+)\)", snippet.details)
    try:
        if served:
            port = free_port()
            server = subprocess.Popen(
                [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                cwd=os.path.join(args.repo, served[2]), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            wait_for_port(port)
            code = code.replace(served[1], f"http://127.0.0.1:{port}/")
        result = run(["bash", "-euo", "pipefail", "-c", code], cwd=folder)
        if result.returncode != 0:
            return f"exit {result.returncode}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
    finally:
        if server:
            server.terminate()
            server.wait()
    return None


def wait_for_port(port):
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        subprocess.run(["sleep", "0.05"])
    raise RuntimeError(f"the loopback server on port {port} did not start")


def check_crawl_file(document, args, scratch, name):
    path = os.path.join(scratch, name + ".json")
    with open(path, "w", encoding="utf-8") as out:
        out.write(document)
    result = run([args.crawler, "check", path])
    if result.returncode != 0:
        return f"crawler check: {result.stdout}{result.stderr}".strip()
    return None


def check_python_settings(snippet, args, scratch):
    names = {}
    exec(compile(snippet.code, snippet.where(), "exec"), {}, names)
    document = {"settings": {k: v for k, v in names.items() if k.isupper()},
                "spider": {"name": "books", "start_urls": ["https://books.toscrape.com/"]}}
    return check_crawl_file(json.dumps(document), args, scratch, snippet.name)


# Imports a spider module and prints its spider's rules as [callback name or None, follow].
RULES_OF_PYTHON_SPIDER = """
import importlib.util, json, sys
import scrapy
spec = importlib.util.spec_from_file_location("snippet", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
spiders = [v for v in vars(module).values()
           if isinstance(v, type) and issubclass(v, scrapy.Spider) and v.__module__ == "snippet"]
assert len(spiders) == 1, f"expected one spider class, found {spiders}"
spider = spiders[0]()
print(json.dumps([[r.callback.__name__ if r.callback else None, bool(r.follow)]
                  for r in getattr(spider, "_rules", [])]))
"""


def check_scrapy_redis_spider(snippet, args, scratch, by_name):
    spec = re.match(r"beside (\S+)$", snippet.details)
    if not spec or spec[1] not in by_name or by_name[spec[1]].kind != "crawl-file":
        return "needs 'beside NAME', NAME a crawl-file snippet"
    module = os.path.join(scratch, snippet.name + ".py")
    with open(module, "w", encoding="utf-8") as out:
        out.write(snippet.code)
    source = os.path.join(args.repo, "..", "shared", "scrapy-redis", "real", "src")
    result = subprocess.run(["/usr/bin/python3", "-c", RULES_OF_PYTHON_SPIDER, module],
                            capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.path.abspath(source)})
    if result.returncode != 0:
        return f"python3 could not load it: {result.stderr[-2000:]}"
    python_rules = json.loads(result.stdout)
    crawl_rules = [[rule.get("callback"), rule.get("follow", "callback" not in rule)]
                   for rule in json.loads(by_name[spec[1]].code)["spider"].get("rules", [])]
    if python_rules != crawl_rules:
        return f"its rules {python_rules} are not {spec[1]}'s {crawl_rules}"
    return None


STATEMENTS_PRELUDE = """#include <crawler/parse/link_extractor.h>
#include <crawler/run_crawl.h>

void snippet_body(const crawler::response& response, crawler::output& out) {
"""


def build_cpp(snippets, args, scratch):
    """Every C++ and CMake snippet in one CMake project, against the installed package."""
    project = os.path.join(scratch, "cpp")
    os.makedirs(project)
    by_name = {s.name: s for s in snippets}
    cmake = ["cmake_minimum_required(VERSION 3.25)", "project(snippets CXX)",
             "set(CMAKE_CXX_STANDARD 20)", "find_package(crawler REQUIRED)"]
    programs, problems = [], []
    for snippet in snippets:
        source = os.path.join(project, snippet.name + ".cpp")
        if snippet.kind == "declarations":
            open(source, "w").write(snippet.code)
            cmake.append(f"add_library({snippet.name} OBJECT {snippet.name}.cpp)")
            cmake.append(f"target_link_libraries({snippet.name} PRIVATE crawler::crawler)")
        elif snippet.kind == "statements":
            open(source, "w").write(STATEMENTS_PRELUDE + snippet.code + "}\n")
            cmake.append(f"add_library({snippet.name} OBJECT {snippet.name}.cpp)")
            cmake.append(f"target_link_libraries({snippet.name} PRIVATE crawler::crawler)")
        elif snippet.kind == "program":
            spec = re.match(r"(\S+)(?: uses ([^;]+))?(?:; runs (.*))?$", snippet.details)
            if not spec:
                problems.append(f"{snippet.where()}: program needs TARGET [uses A] [; runs ARGS]")
                continue
            used = (spec[2] or "").split()
            missing = [name for name in used if name not in by_name]
            if missing:
                problems.append(f"{snippet.where()}: uses unknown snippets {missing}")
                continue
            open(source, "w").write("".join(by_name[name].code for name in used) + snippet.code)
            cmake.append(f"add_executable({snippet.name} {snippet.name}.cpp)")
            cmake.append(f"target_link_libraries({snippet.name} PRIVATE {spec[1]})")
            programs.append((snippet, spec[3]))
        elif snippet.kind == "cmake":
            open(os.path.join(project, "my_spider.cpp"), "w").write(
                "#include <crawler/run_crawl.h>\nint main() { return 0; }\n")
            cmake.append("add_executable(my_spider my_spider.cpp)")
            cmake.append(snippet.code.replace("find_package(crawler REQUIRED)", ""))
    open(os.path.join(project, "CMakeLists.txt"), "w").write("\n".join(cmake) + "\n")
    build = os.path.join(project, "build")
    configured = run(["cmake", "-S", project, "-B", build, "-G", "Ninja",
                      f"-DCMAKE_PREFIX_PATH={args.prefix}"])
    if configured.returncode != 0:
        return problems + [f"configuring the C++ snippets:\n{configured.stdout}{configured.stderr}"]
    built = run(["cmake", "--build", build, "--", "-k", "0"])
    if built.returncode != 0:
        return problems + [f"compiling the C++ snippets (the file names are snippet names):\n"
                           f"{built.stdout[-6000:]}{built.stderr[-2000:]}"]
    for snippet, arguments in programs:
        if not arguments:
            continue
        tmp = tempfile.mkdtemp(dir=scratch)
        argv = [a.replace("{repo}", os.path.abspath(args.repo)).replace("{tmp}", tmp)
                for a in arguments.split()]
        result = run([os.path.join(build, snippet.name)] + argv + ["--nolog"])
        if result.returncode != 0:
            problems.append(f"{snippet.where()}: exit {result.returncode}: {result.stderr[-2000:]}")
        for output in (a for a in argv if a.startswith(tmp)):
            if not os.path.exists(output) or os.path.getsize(output) == 0:
                problems.append(f"{snippet.where()}: {os.path.relpath(output, tmp)} not written")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--crawler", required=True, help="the built crawler program")
    parser.add_argument("--prefix", required=True, help="where the package is installed")
    parser.add_argument("--repo", default=os.path.join(os.path.dirname(__file__), ".."))
    args = parser.parse_args()
    args.repo = os.path.abspath(args.repo)
    args.crawler = os.path.abspath(args.crawler)
    snippets, problems = read_snippets(args.repo)
    scratch = os.environ.get("SNIPPETS_KEEP") or tempfile.mkdtemp(prefix="snippets-")
    try:
        for snippet in snippets:
            problem = None
            if snippet.kind == "ci":
                continue
            if snippet.kind in ("run", "static"):
                problem = check_shell(snippet, args, scratch)
            elif snippet.kind == "crawl-file":
                problem = check_crawl_file(snippet.code, args, scratch, snippet.name)
            elif snippet.kind == "python-settings":
                problem = check_python_settings(snippet, args, scratch)
            elif snippet.kind == "scrapy-redis-spider":
                problem = check_scrapy_redis_spider(snippet, args, scratch,
                                                    {s.name: s for s in snippets})
            elif snippet.kind not in ("declarations", "statements", "program", "cmake"):
                problem = f"unknown kind {snippet.kind!r}"
            if problem:
                problems.append(f"{snippet.where()}: {problem}")
        problems += build_cpp([s for s in snippets
                               if s.kind in ("declarations", "statements", "program", "cmake")],
                              args, scratch)
    finally:
        if not os.environ.get("SNIPPETS_KEEP"):
            shutil.rmtree(scratch, ignore_errors=True)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(snippets)} snippets, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
