#!/usr/bin/env python3
"""Generated mutants: every mutant of a fixed set of operators over the lines a change touched
(or whole files), built and run against the suites that link the mutated code, with a report
of what was killed, by which test, and the diff of each survivor. Nobody chooses the bugs.

  python3 mutation/generate.py list --since origin/main             # the mutants, one a line
  python3 mutation/generate.py coverage --since 2026-11-25 --sample 300 --seed 1  # which tests
                                                                    # run which line of those
  python3 mutation/generate.py run --since 2026-11-25 --sample 60 --seed 1 --budget 3600
  python3 mutation/generate.py run --path scheduler/fleet/pickle.cpp --budget 1800 &
  python3 mutation/generate.py report                               # markdown, from the state
  python3 mutation/generate.py run --recheck --state FILE           # survivors again, after tests
  python3 mutation/generate.py run --recheck --state FILE --tests 'REGEX'   # by those tests only
  python3 mutation/generate.py run --recheck-kills 'host_frontier' --state FILE  # kills by a
                                                                    # wall-time test, judged again

--since takes a revision or a date (the first commit on or after it is the base). --sample N
draws N mutants, seeded, in turns over the modules (config, request, redis, dedup, scheduler,
scheduler/fleet, crawler, crawler/parse, crawler/cli, spiders), so each module gets its share.
The tree grows between sessions, and with it the lines --since selects: --frozen FILE keeps a
sample (the first run writes it, later ones read it and find each line where it is now), so
the 300 of a sample are judged over several sessions.

Operators (C++ and the Lua in R"lua(...)lua" strings): relational and boundary (< <=, > >=,
== !=, Lua's ~=), logical (&& ||, and or), a negation removed, an integer constant +1 and -1, a
statement deleted (a call, an increment, an assignment), a return value replaced (true/false
flipped, anything else by {}), the first two arguments of a call swapped, and in Lua a KEYS[i]
swapped for another key of the same script. Comments and string literals are left alone.

Each mutant is applied to a scratch copy of the tree ($MUTATION_DIR, /tmp/crawler-mutation-gen),
built incrementally (a build that fails: "stillborn"), and tested. Which tests: `coverage` runs
every test once, alone, in a build instrumented with gcov (each test, and every `crawler` or
worker process it starts, writes its counts under its own GCOV_PREFIX), and keeps which tests
execute each line of a .cpp file. A mutant on such a line runs those tests only: a test that
never executes the line cannot see the change. A line the map says no test executes runs the
relinked test programs' suites (gcov counts a constant of a large initializer, such as a row of
the settings table, on the initializer's first line, so "none" can be wrong); if they pass, it
is a survivor nothing reaches ("uncovered"). Where the map cannot answer (a header, a line gcov does not count,
such as a constant folded at compile time, a file changed since the map was made, a test that
failed when it was made), the mutant runs the ctest labels of the test programs the build
relinked (a program that runs `crawler` counts when it is relinked), then every other test.
A failing or timed-out test kills the mutant, once it passes on the unmutated tree (rebuilt
after each kill, which the next mutant's build needs anyway): a test that fails there too, as a
wall-time test can on a loaded machine, kills nothing, and the mutant is judged again next run.
Results go to the state file as they come (one JSON line a mutant): a run stopped by its budget,
or killed, resumes where it stopped. mutation/equivalent.tsv lists survivors judged equivalent
(mutant id, then why); the report shows them apart.
"""
import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SCRATCH = os.environ.get("MUTATION_DIR", "/tmp/crawler-mutation-gen")
BUILD = os.path.join(SCRATCH, "build")
FAILED_UNMUTATED = []  # tests that failed on the unmutated tree: they judge no mutant
MODULES = ["crawler/parse", "crawler/cli", "scheduler/fleet", "config", "request", "redis",
           "dedup", "scheduler", "crawler", "spiders"]
# Test programs that run the `crawler` program: relinking it reaches them.
RUN_THE_PROGRAM = ["program_tests", "fleet_tests"]


def module_of(path):
    for module in MODULES:
        if path.startswith(module + "/"):
            return module
    return None


def git(*args):
    return subprocess.run(["git", "-C", REPO, *args], check=True, capture_output=True,
                          text=True).stdout


def base_revision(since):
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", since):
        first = git("rev-list", "--reverse", f"--since={since}T00:00:00", "HEAD").split()
        if not first:
            sys.exit(f"no commit since {since}")
        return first[0] + "^"
    return since


def changed_lines(since):
    """{path: set of line numbers} of the lines added or changed since `since`."""
    diff = git("diff", "-U0", base_revision(since), "--", "*.cpp", "*.h", "*.lua")
    lines, path = {}, None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and path and module_of(path):
            start, _, count = re.search(r"\+(\d+)(,(\d+))?", line).group(1, 2, 3)
            count = 1 if count is None else int(count)
            lines.setdefault(path, set()).update(range(int(start), int(start) + count))
    return lines


# --- finding the code on a line ------------------------------------------------------------

STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)\'')
RAW_OPEN = re.compile(r'R"(\w*)\(')


def mask(text, start=0):
    """`text` with string literals and a trailing // comment blanked out (same length)."""
    out = STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)
    comment = out.find("//", start)
    return out if comment < 0 else out[:comment] + " " * (len(out) - comment)


def code_lines(path, text):
    """(line number, language, masked line, script id) of each line of code: "cpp", or "lua"
    inside R"lua(...)lua" (script id: the block's first line). Other raw strings are skipped."""
    out, raw, script = [], None, 0
    for number, line in enumerate(text.split("\n"), 1):
        if raw is not None:
            end = line.find(")" + raw + '"')
            if raw == "lua":
                body = line if end < 0 else line[:end]
                comment = body.find("--")
                body = body if comment < 0 else body[:comment]
                out.append((number, "lua", body + " " * (len(line) - len(body)), script))
            if end >= 0:
                raw = None
            continue
        stripped = line.strip()
        if stripped.startswith(("#", "//", "*", "/*")):
            continue
        opened = RAW_OPEN.search(line)
        if opened and ")" + opened.group(1) + '"' not in line[opened.end():]:
            raw, script = opened.group(1), number
            before = mask(line[:opened.start()])
            out.append((number, "cpp", before + " " * (len(line) - len(before)), 0))
            continue
        if path.endswith(".lua"):
            comment = line.find("--")
            out.append((number, "lua", line if comment < 0 else line[:comment].ljust(len(line)), 1))
        else:
            out.append((number, "cpp", mask(line), 0))
    return out


# --- the operators ------------------------------------------------------------------------

SWAPS_CPP = [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "),
             (" == ", " != "), (" != ", " == "), (" && ", " || "), (" || ", " && ")]
SWAPS_LUA = [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "),
             (" == ", " ~= "), (" ~= ", " == "), (" and ", " or "), (" or ", " and ")]
CONSTANT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
NEGATION_CPP = re.compile(r"!(?=[\w(])")
NEGATION_LUA = re.compile(r"\bnot ")
STATEMENT = re.compile(r"^(\s*)((?:\+\+|--)?[\w:]+(?:(?:\.|->)\w+|\[[^\]]*\])*"
                       r"(?:\(.*\)|(?:\+\+|--)| [-+*/|&]?= .+));\s*$")
NOT_A_STATEMENT = re.compile(r"^\s*(return|break|continue|throw|case|default|goto|using|"
                             r"typedef|auto|const|static|std::|unsigned|int|bool|double|char)\b")
RETURN = re.compile(r"\breturn (.+);")
CALL_ARGS = re.compile(r"(\w\()([\w.:>\-]+|\"[^\"]*\"), ([\w.:>\-]+|\"[^\"]*\")([,)])")
KEY = re.compile(r"KEYS\[(\d+)\]")


def balanced(text):
    return text.count("(") == text.count(")")


def mutants_of_line(language, masked, original, script_keys):
    """(operator, column, mutated line) for one line."""
    found = []
    for before, after in SWAPS_LUA if language == "lua" else SWAPS_CPP:
        for m in re.finditer(re.escape(before), masked):
            col = m.start()
            found.append((f"{before.strip()} -> {after.strip()}", col,
                          original[:col] + after + original[col + len(before):]))
    negation = NEGATION_LUA if language == "lua" else NEGATION_CPP
    for m in negation.finditer(masked):
        if language == "cpp" and masked[m.start():m.start() + 2] == "!=":
            continue
        found.append(("negation removed", m.start(),
                      original[:m.start()] + original[m.end():]))
    for m in CONSTANT.finditer(masked):
        n = int(m.group(1))
        for value in (n + 1, n - 1):
            if value >= 0:
                found.append((f"{n} -> {value}", m.start(),
                              original[:m.start()] + str(value) + original[m.end():]))
    if language == "cpp":
        statement = STATEMENT.match(masked)
        if statement and balanced(masked) and not NOT_A_STATEMENT.match(masked):
            found.append(("statement deleted", len(statement.group(1)),
                          statement.group(1) + ";  // mutant: statement deleted"))
        returned = RETURN.search(masked)
        if returned and balanced(returned.group(1)):
            value = returned.group(1).strip()
            replacement = {"true": "false", "false": "true"}.get(value, "{}")
            # What {} already is: replacing it makes an equivalent mutant.
            if value not in ("{}", "nullptr", "0", '""', "std::nullopt", "std::string()"):
                col = returned.start(1)
                found.append((f"return {replacement}", col,
                              original[:col] + replacement + original[returned.end(1):]))
        for m in CALL_ARGS.finditer(masked):
            first, second = m.span(2), m.span(3)
            a, b = original[first[0]:first[1]], original[second[0]:second[1]]
            if a != b:
                found.append(("arguments swapped", first[0],
                              original[:first[0]] + b + original[first[1]:second[0]] + a +
                              original[second[1]:]))
    else:
        for m in KEY.finditer(masked):
            others = sorted(k for k in script_keys if k != int(m.group(1)))
            if others:
                other = next((k for k in others if k > int(m.group(1))), others[0])
                found.append((f"KEYS[{m.group(1)}] -> KEYS[{other}]", m.start(),
                              original[:m.start()] + f"KEYS[{other}]" + original[m.end():]))
    return found


def generate(selection):
    """Every mutant of the selected lines: {path: set of lines or None for all}."""
    mutants = []
    for path, wanted in sorted(selection.items()):
        text = open(os.path.join(REPO, path), encoding="utf-8").read()
        lines = text.split("\n")
        code = code_lines(path, text)
        keys = {}
        for number, language, masked, script in code:
            if language == "lua":
                keys.setdefault(script, set()).update(int(k) for k in KEY.findall(masked))
        for number, language, masked, script in code:
            if wanted is not None and number not in wanted:
                continue
            original = lines[number - 1]
            for operator, column, mutated in mutants_of_line(language, masked, original,
                                                             keys.get(script, set())):
                if mutated == original:
                    continue
                ident = hashlib.sha1(f"{path}\0{original.strip()}\0{operator}\0{column}".encode())
                mutants.append({"id": ident.hexdigest()[:12], "path": path, "line": number,
                                "before": lines[number - 2] if number > 1 else "",
                                "module": module_of(path) or "other", "operator": operator,
                                "original": original, "mutated": mutated})
    return mutants


def sample(mutants, count, seed):
    """`count` mutants, taking turns over the modules, random within each."""
    if count is None or count >= len(mutants):
        return mutants
    rng = random.Random(seed)
    by_module = {}
    for mutant in mutants:
        by_module.setdefault(mutant["module"], []).append(mutant)
    for group in by_module.values():
        rng.shuffle(group)
    taken, modules = [], sorted(by_module)
    while len(taken) < count:
        for module in modules:
            if by_module[module] and len(taken) < count:
                taken.append(by_module[module].pop())
    return taken


# --- running them -------------------------------------------------------------------------

def sync_scratch():
    """The work tree as it is (committed or not) in SCRATCH/src; changed files get a new mtime."""
    files = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], check=True, capture_output=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source, target = os.path.join(REPO, name), os.path.join(SCRATCH, "src", name)
        if not os.path.isfile(source):
            continue
        if os.path.exists(target) and open(source, "rb").read() == open(target, "rb").read():
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)


def use_build(directory):
    global BUILD
    BUILD = directory


def build():
    result = subprocess.run(["cmake", "--build", BUILD],
                            capture_output=True, text=True)
    return result.returncode == 0, result.stdout + result.stderr


def prepare():
    sync_scratch()
    # The tests find ../shared (scrapy-redis's own code, RedisBloom) beside the tree.
    shared, beside = os.path.join(REPO, "..", "shared"), os.path.join(SCRATCH, "shared")
    if os.path.isdir(shared) and not os.path.exists(beside):
        os.symlink(os.path.abspath(shared), beside)
    configure = ["cmake", "-S", os.path.join(SCRATCH, "src"), "-B", os.path.join(SCRATCH, "build"),
                 "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DCRAWLER_BUILD_BENCH=OFF",
                 "-DCMAKE_UNITY_BUILD=OFF"]  # a mutant recompiles its own file, not a batch
    subprocess.run(configure, check=True, capture_output=True)
    print(f"building the unmutated tree in {SCRATCH}/build ...", flush=True)
    ok, log = build()
    if not ok:
        sys.exit(log[-3000:] + "\nthe unmutated tree does not build")
    # A test that fails without a mutant would kill every mutant: the suite must pass first.
    # The marker holds the digest of the tree that passed: a mutant put back leaves the tree as it
    # was (its file's mtime is new, so ninja rebuilds it), and the next run need not spend half an
    # hour finding that out.
    baseline = os.path.join(SCRATCH, "baseline.passed")
    digest = tree_digest()
    if not os.path.exists(baseline) or open(baseline).read() != digest:
        print("running the whole suite on the unmutated tree ...", flush=True)
        passed, failed = run_tests([], 3600)
        if not passed:
            sys.exit("the unmutated tree fails " + ", ".join(failed or ["its suite"]) +
                     ": no mutant can be judged against it")
        with open(baseline, "w") as marker:
            marker.write(digest)


def tree_digest():
    """SHA-256 of the scratch tree's names and contents, but the generator and its results (no
    test runs them)."""
    digest = hashlib.sha256()
    source = os.path.join(SCRATCH, "src")
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            path = os.path.join(root, name)
            relative = os.path.relpath(path, source)
            if relative.startswith("mutation" + os.sep):
                continue
            digest.update(relative.encode() + b"\0")
            with open(path, "rb") as content:
                digest.update(hashlib.sha256(content.read()).digest())
    return digest.hexdigest()


def labels_to_run(build_log):
    linked = set(re.findall(r"Linking CXX executable (?:\S*/)?(\w+)", build_log))
    suites = {name for name in linked if name.endswith("_tests")}
    if "crawler" in linked:
        suites.update(RUN_THE_PROGRAM)
    return sorted(suites)


FAILURE = re.compile(r"^\s*\d+ - (.+?) \((Failed|Timeout|SEGFAULT|Subprocess aborted|"
                     r"Child aborted|Exception)[^)]*\)\s*$", re.M)


def ctest(filters, timeout, stop_on_failure=True):
    """ctest over the tests `filters` select: None when it ran past `timeout`, else
    (passed, [(full test name, how it failed)])."""
    command = ["ctest", "--test-dir", BUILD, "-j", "8", "--timeout", "240", *filters]
    if stop_on_failure:
        command.append("--stop-on-failure")
    if FAILED_UNMUTATED:
        command += ["-E", "^(" + "|".join(re.escape(name) for name in FAILED_UNMUTATED) + ")$"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if "No tests were found" in result.stdout + result.stderr:
        sys.exit(f"ctest found no test for {' '.join(filters)}: the mutants cannot be judged")
    return result.returncode == 0, FAILURE.findall(result.stdout)


def run_tests(labels, timeout, exclude=False, names=None, pattern=None):
    """(passed, names of the tests that killed). As README's test command, 8 at a time: the
    suites mostly wait on their servers. A test that fails runs once more, and kills only if it
    fails again: a wall-time test that lost a race under the load of the run itself is not a
    kill. A test that runs past its time limit kills at once: the unmutated tree passed it, and
    waiting for it twice would double the run."""
    filters = []
    if labels:
        filters += ["-LE" if exclude else "-L", "^(" + "|".join(labels) + ")$"]
    if names:
        filters += ["-R", "^(" + "|".join(re.escape(name) for name in names) + ")$"]
    if pattern:
        filters += ["-R", pattern]
    first = ctest(filters, timeout)
    if first is None:
        return False, ["(the suites ran past their time limit)"]
    passed, failures = first
    if passed:
        return True, []
    short = lambda name: name.split("  # ")[0]  # a parameterized test's "  # GetParam() = ..."
    hung = [short(name) for name, how in failures if how == "Timeout"]
    if hung or not failures:
        return False, hung or ["(ctest failed before any test did)"]
    again = ctest(["-R", "^(" + "|".join(re.escape(name) for name, _ in failures) + ")$"],
                  timeout, stop_on_failure=False)
    if again is None or not again[0]:
        return False, [short(name) for name, _ in again[1]] if again else [
            "(the suites ran past their time limit)"]
    # The first run stopped at that failure: the tests it never started run now.
    rest = ctest(filters, timeout)
    if rest is None:
        return False, ["(the suites ran past their time limit)"]
    return rest[0], [short(name) for name, _ in rest[1]]


# --- which tests execute which line ----------------------------------------------------------

COVERAGE_BUILD = os.path.join(SCRATCH, "coverage-build")
COVERAGE_MAP = os.path.join(SCRATCH, "coverage.json")


def file_digest(path):
    return hashlib.sha1(open(path, "rb").read()).hexdigest()


def gcov_lines(gcda_files):
    """{source path relative to the tree: {line: count}} for the .cpp files of these objects
    (their gcno files beside them), from gcov's JSON."""
    out = {}
    for start in range(0, len(gcda_files), 40):
        # -r -s: the tree's own files only, not the library headers they include (a hundred
        # times the JSON).
        result = subprocess.run(["gcov", "--json-format", "--stdout", "-r", "-s",
                                 os.path.join(SCRATCH, "src"), *gcda_files[start:start + 40]],
                                capture_output=True, text=True, cwd=COVERAGE_BUILD)
        for document in result.stdout.splitlines():
            if not document.startswith("{"):
                continue
            for entry in json.loads(document).get("files", []):
                source = os.path.relpath(os.path.join(COVERAGE_BUILD, entry["file"]),
                                         os.path.join(SCRATCH, "src"))
                if not source.endswith(".cpp") or source.startswith(".."):
                    continue
                lines = out.setdefault(source, {})
                for line in entry["lines"]:
                    lines[line["line_number"]] = lines.get(line["line_number"], 0) + line["count"]
    return out


def run_one_test(test, prefix, timeout):
    """Runs a ctest test as ctest would, its gcov counts going under `prefix`."""
    properties = {p["name"]: p["value"] for p in test.get("properties", [])}
    env = dict(os.environ, GCOV_PREFIX=prefix, GCOV_PREFIX_STRIP="0")
    for assignment in properties.get("ENVIRONMENT", []):
        name, _, value = assignment.partition("=")
        env[name] = value
    try:
        result = subprocess.run(test["command"], cwd=properties.get("WORKING_DIRECTORY"),
                                env=env, capture_output=True, timeout=timeout)
        return result.returncode == 0
    except subprocess.TimeoutExpired:
        return False


def coverage(paths):
    """Builds the instrumented tree, runs each test alone and writes COVERAGE_MAP for the .cpp
    files in `paths` (all of them when empty):
    {"files": {path: sha1}, "lines": {path: {line: [test index...]}}, "tests": [names],
    "failed": [names]}."""
    sync_scratch()
    configure = ["cmake", "-S", os.path.join(SCRATCH, "src"), "-B", COVERAGE_BUILD, "-G", "Ninja",
                 "-DCMAKE_BUILD_TYPE=None", "-DCRAWLER_BUILD_BENCH=OFF", "-DCMAKE_UNITY_BUILD=OFF",
                 "-DCMAKE_CXX_FLAGS=--coverage -O0", "-DCMAKE_C_FLAGS=--coverage -O0",
                 "-DCMAKE_EXE_LINKER_FLAGS=--coverage", "-DCMAKE_SHARED_LINKER_FLAGS=--coverage"]
    subprocess.run(configure, check=True, capture_output=True)
    print(f"building the instrumented tree in {COVERAGE_BUILD} ...", flush=True)
    result = subprocess.run(["cmake", "--build", COVERAGE_BUILD], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(result.stdout[-3000:] + result.stderr[-2000:] + "\nthe instrumented tree does not build")
    listing = subprocess.run(["ctest", "--test-dir", COVERAGE_BUILD, "--show-only=json-v1"],
                             check=True, capture_output=True, text=True).stdout
    tests = json.loads(listing)["tests"]
    counts_dir = os.path.join(SCRATCH, "coverage-counts")
    shutil.rmtree(counts_dir, ignore_errors=True)
    wanted = {os.path.basename(path) + ".gcno" for path in paths if path.endswith(".cpp")}
    gcno = [os.path.join(root, name) for root, _, names in os.walk(COVERAGE_BUILD)
            for name in names if name.endswith(".cpp.gcno") and (not paths or name in wanted)]
    print(f"running {len(tests)} tests alone, instrumented ...", flush=True)

    def measure(index):
        prefix = os.path.join(counts_dir, str(index))
        passed = run_one_test(tests[index], prefix, 300)
        gcda = []
        for note in gcno:  # gcov wants the notes beside the counts
            counts = prefix + note[:-len(".gcno")] + ".gcda"
            if os.path.exists(counts):
                os.symlink(note, counts[:-len(".gcda")] + ".gcno")
                gcda.append(counts)
        lines = gcov_lines(gcda)
        shutil.rmtree(prefix, ignore_errors=True)
        return index, passed, lines

    covered, failed = {}, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for done, (index, passed, lines) in enumerate(pool.map(measure, range(len(tests))), 1):
            if not passed:
                failed.append(tests[index]["name"])
            for path, counts in lines.items():
                by_line = covered.setdefault(path, {})
                for line, count in counts.items():
                    runners = by_line.setdefault(line, [])
                    if count:
                        runners.append(index)
            if done % 50 == 0:
                print(f"  {done} of {len(tests)}", flush=True)
    files = {path: file_digest(os.path.join(SCRATCH, "src", path)) for path in covered
             if not paths or path in paths}
    json.dump({"files": files, "lines": covered, "tests": [t["name"] for t in tests],
               "failed": failed}, open(COVERAGE_MAP, "w"))
    print(f"coverage of {len(covered)} files by {len(tests)} tests in {COVERAGE_MAP}"
          f"{'; failed instrumented: ' + ', '.join(failed) if failed else ''}", flush=True)


class CoverageMap:
    """Answers "which tests execute this line", or None when it cannot tell."""

    def __init__(self):
        self.data = json.load(open(COVERAGE_MAP)) if os.path.exists(COVERAGE_MAP) else None

    def tests_of(self, path, line):
        if not self.data or path not in self.data["files"]:
            return None
        if file_digest(os.path.join(SCRATCH, "src", path)) != self.data["files"][path]:
            return None
        runners = self.data["lines"][path].get(str(line))
        if runners is None:
            return None
        # A test that failed unmutated cannot judge a mutant (the report lists them).
        failed = set(self.data["failed"])
        return sorted({self.data["tests"][index] for index in runners} - failed)


def load_state(path):
    done = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            if line.strip():
                record = json.loads(line)
                done[record["id"]] = record
    return done


def moved_elsewhere(mutant):
    """The mutant in the one other file of the tree that now holds its line, once (code moved
    to a file of its own), or None."""
    if len(mutant["original"].strip()) < 12:  # "}" or "break;": anywhere, and says nothing
        return None
    candidates = subprocess.run(["git", "-C", REPO, "grep", "-l", "-F", "-e", mutant["original"],
                                 "--", "*" + os.path.splitext(mutant["path"])[1]],
                                capture_output=True, text=True).stdout.split()
    found = []
    for path in candidates:
        lines = open(os.path.join(REPO, path), encoding="utf-8").read().split("\n")
        found += [(path, number) for number, line in enumerate(lines, 1)
                  if line == mutant["original"]]
    if len(found) != 1:
        return None
    return dict(mutant, path=found[0][0], line=found[0][1])


def relocated(mutant):
    """The mutant with its line number where its original line is now (code above it may have
    moved it), or None when that line is no longer in the file. A line that is there more than
    once is taken where the line above it is the one recorded with the mutant, and among those
    (or for a record without it) where it is nearest to where it was."""
    path = os.path.join(REPO, mutant["path"])
    if not os.path.exists(path) or mutant["original"] not in open(path, encoding="utf-8").read():
        return moved_elsewhere(mutant)
    lines = open(path, encoding="utf-8").read().split("\n")
    if 0 < mutant["line"] <= len(lines) and lines[mutant["line"] - 1] == mutant["original"]:
        return mutant
    found = [i for i, line in enumerate(lines, 1) if line == mutant["original"]]
    # The line above tells copies apart where the mutant recorded it.
    beside = [i for i in found if i > 1 and lines[i - 2] == mutant.get("before")]
    found = beside or found
    if not found:
        return None
    return dict(mutant, line=min(found, key=lambda number: abs(number - mutant["line"])))


def judge(build_log, covering, named=None):
    """(verdict, killers, how it was judged) of a built mutant; `covering`: the tests that
    execute its line, or None when the coverage map cannot tell. `named`: a regex of the tests
    to run instead (a recheck with the tests written to kill the survivors: a kill is a kill
    whichever test makes it)."""
    if named:
        passed, killers = run_tests([], 1800, pattern=named)
        return ("survived" if passed else "killed"), killers, f"tests matching {named}"
    if covering is not None and not covering:
        # gcov counts a constant in a large initializer (a settings table's row) on the
        # initializer's first line, so "no test executes it" can be wrong: the relinked suites
        # judge it, and only if they pass is it a survivor nothing reaches.
        labels = labels_to_run(build_log)
        passed, killers = run_tests(labels, 1800)
        return ("survived" if passed else "killed"), killers, "uncovered; the relinked suites"
    if covering:
        passed, killers = run_tests([], 1800, names=covering)
        return ("survived" if passed else "killed"), killers, f"{len(covering)} covering tests"
    labels = labels_to_run(build_log)
    passed, killers = run_tests(labels, 1800)
    if passed and labels:  # unsure whether its suites are all: the rest too
        passed, killers = run_tests(labels, 3600, exclude=True)
    return ("survived" if passed else "killed"), killers, "whole suite"


def fails_unmutated_too(killers):
    """Whether a test that killed a mutant fails on the unmutated tree as well (rebuilt first):
    True or False, or None when there is nothing to rerun (no test named: the suites ran past
    their time limit)."""
    named = [name for name in killers if not name.startswith("(")]
    if not named:
        return None
    ok, log = build()
    if not ok:
        sys.exit(log[-3000:] + "\nthe unmutated tree no longer builds")
    # A parameterized test's ctest name goes on with "  # GetParam() = ...".
    answer = ctest(["-R", "^(" + "|".join(re.escape(name) for name in named) + ")(  #.*)?$"],
                   1800, stop_on_failure=False)
    return answer is None or not answer[0]


def run(mutants, state_path, budget, again=False, named=None):
    done = load_state(state_path)
    todo = [m for m in mutants
            if again or m["id"] not in done or done[m["id"]]["verdict"] == "unsure"]
    print(f"{len(mutants)} mutants, {len(mutants) - len(todo)} decided before, {len(todo)} to run",
          flush=True)
    if not todo:
        return
    coverage_map = CoverageMap()
    if coverage_map.data:
        # The instrumented tree is the baseline (its run made the map), and at -O0 a mutant's
        # file compiles several times faster than in the Release tree.
        use_build(COVERAGE_BUILD)
        FAILED_UNMUTATED[:] = coverage_map.data["failed"]
        sync_scratch()
    else:
        prepare()
    started = time.monotonic()
    for mutant in todo:
        if budget and time.monotonic() - started > budget:
            print(f"budget of {budget} s spent: run again to go on", flush=True)
            break
        target = os.path.join(SCRATCH, "src", mutant["path"])
        original = open(target, encoding="utf-8").read()
        lines = original.split("\n")
        judged_by = ""
        covering = coverage_map.tests_of(mutant["path"], mutant["line"])  # of the unmutated file
        if lines[mutant["line"] - 1] != mutant["original"]:
            verdict, killers = "stale", []
        else:
            lines[mutant["line"] - 1] = mutant["mutated"]
            open(target, "w", encoding="utf-8").write("\n".join(lines))
            try:
                ok, log = build()
                if not ok:
                    verdict, killers = "stillborn", []
                else:
                    verdict, killers, judged_by = judge(log, covering, named)
            finally:
                open(target, "w", encoding="utf-8").write(original)
        if verdict == "killed" and fails_unmutated_too(killers):
            # The build the next mutant needs anyway comes first: the killers run on the tree
            # without the mutant, and a test that fails there too (a machine loaded enough to
            # fail a wall-time test) proves nothing. The next run judges it again.
            verdict, judged_by = "unsure", f"{judged_by}; the killers fail without the mutant too"
        record = dict(mutant, verdict=verdict, killers=killers[:3], judged_by=judged_by,
                      at=datetime.datetime.now().isoformat(timespec="seconds"))
        with open(state_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        print(f"{verdict:10} {mutant['path']}:{mutant['line']} {mutant['operator']}"
              f"{'  by ' + killers[0] if killers else ''}", flush=True)
    build()  # the scratch build matches the work tree again


# --- the report ---------------------------------------------------------------------------

def equivalents():
    path = os.path.join(HERE, "equivalent.tsv")
    out = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                ident, why = line.rstrip("\n").split("\t", 1)
                out[ident] = why
    return out


def report(state_path, frozen=None):
    done = load_state(state_path)
    if frozen and os.path.exists(frozen):
        # The state can hold mutants of earlier draws (made before the sample was frozen, from
        # the tree of then): generated all the same, but not the sample's; say which is which.
        sample = {json.loads(line)["id"] for line in open(frozen, encoding="utf-8") if line.strip()}
        judged = sum(1 for mutant_id in done if mutant_id in sample)
        print(f"{judged} of the frozen sample's {len(sample)} judged; {len(done) - judged} more "
              "from earlier draws\n")
    equivalent = equivalents()
    rows, survivors = {}, []
    for record in done.values():
        verdict = record["verdict"]
        if verdict == "survived" and record["id"] in equivalent:
            verdict = "equivalent"
        rows.setdefault(record["module"], {}).setdefault(verdict, 0)
        rows[record["module"]][verdict] += 1
        if verdict == "survived":
            survivors.append(record)
    kinds = ["killed", "survived", "equivalent", "stillborn", "stale", "unsure"]
    print("| module | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for module in sorted(rows):
        print(f"| {module} | " + " | ".join(str(rows[module].get(k, 0)) for k in kinds) + " |")
    killed = sum(r.get("killed", 0) for r in rows.values())
    counted = killed + sum(r.get("survived", 0) for r in rows.values())
    if counted:
        print(f"\nkilled {killed} of {counted} ({100 * killed // counted}%), equivalent ones "
              "left out")
    for record in sorted(survivors, key=lambda r: (r["path"], r["line"])):
        unrun = (" no test executes this line;"
                 if record.get("judged_by", "").startswith("uncovered") else "")
        print(f"\nsurvived {record['id']}: {record['path']}:{record['line']} "
              f"({record['operator']};{unrun} {record.get('judged_by') or 'whole suite'})")
        print(f"  - {record['original'].strip()}\n  + {record['mutated'].strip()}")
    killers = {}
    for record in done.values():
        for test in record.get("killers", [])[:1]:
            killers[test] = killers.get(test, 0) + 1
    if killers:
        print("\nwhat killed them (first failing test, mutants):")
        for test, count in sorted(killers.items(), key=lambda kv: -kv[1]):
            print(f"  {count:4}  {test}")


def selected(args):
    """The mutants a command works on: the frozen sample (its lines found where they are now;
    those gone are left out, said), or the sample of --since/--path, frozen when asked."""
    if args.frozen and os.path.exists(args.frozen):
        mutants = []
        for line in open(args.frozen, encoding="utf-8"):
            if not line.strip():
                continue
            mutant = json.loads(line)
            moved = relocated(mutant)
            if moved:
                mutants.append(moved)
            else:
                print(f"gone       {mutant['path']}:{mutant['line']}: its line is no longer "
                      "there", flush=True)
        return mutants
    selection = changed_lines(args.since) if args.since else {}
    for path in args.path:
        selection[os.path.relpath(os.path.abspath(path), REPO)] = None
    if not selection:
        sys.exit("nothing selected: give --since REV, --path FILE... or an existing --frozen")
    mutants = sample(generate(selection), args.sample, args.seed)
    if args.frozen:
        with open(args.frozen, "w", encoding="utf-8") as out:
            for mutant in mutants:
                out.write(json.dumps(mutant) + "\n")
    return mutants


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["list", "coverage", "run", "report"])
    parser.add_argument("--since", help="a revision or a date (YYYY-MM-DD)")
    parser.add_argument("--path", nargs="*", default=[], help="files, every line")
    parser.add_argument("--sample", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=int, default=0, help="seconds; 0: no limit")
    parser.add_argument("--state", default=os.path.join(SCRATCH, "state.jsonl"))
    parser.add_argument("--tests", help="with --recheck: a ctest regex of the tests to judge "
                                         "by (those written to kill the survivors)")
    parser.add_argument("--frozen", help="a file of the sample's mutants: written by the first "
                                         "run, read by every later one (their lines found where "
                                         "they are now), so a sample stays the same sample while "
                                         "the tree grows")
    parser.add_argument("--recheck-kills", metavar="REGEX",
                        help="judge again, from the start, the state's kills whose first killer "
                             "matches REGEX (a wall-time test a loaded machine can fail), each "
                             "kill now checked against the unmutated tree")
    parser.add_argument("--recheck", action="store_true",
                        help="run the state's survivors again, against the tree as it is now "
                             "(after tests were added to kill them); their new verdicts replace "
                             "the old")
    args = parser.parse_args()
    os.makedirs(SCRATCH, exist_ok=True)
    if args.command == "report":
        return report(args.state, args.frozen)
    if args.command == "coverage":
        paths = {m["path"] for m in selected(args)}
        return coverage(paths)
    if args.command == "run" and args.recheck_kills:
        kills = [record for record in load_state(args.state).values()
                 if record["verdict"] == "killed" and record["killers"] and
                 re.search(args.recheck_kills, record["killers"][0])]
        mutants = [moved for moved in (relocated({k: record[k] for k in (
            "id", "path", "line", "module", "operator", "original", "mutated", "before")
            if k in record}) for record in kills) if moved]
        run(mutants, args.state, args.budget, again=True)
        return report(args.state)
    if args.command == "run" and args.recheck:
        # Those judged equivalent (equivalent.tsv) stay as they are: no test can tell them.
        equivalent = equivalents()
        survivors = [record for record in load_state(args.state).values()
                     if record["verdict"] == "survived" and record["id"] not in equivalent]
        mutants = []
        for record in survivors:
            moved = relocated({k: record[k] for k in ("id", "path", "line", "module", "operator",
                                                       "original", "mutated", "before")
                               if k in record})
            if moved:
                mutants.append(moved)
                continue
            # The code is gone: nothing is left to judge, and it is no survivor of the tree now.
            print(f"stale      {record['path']}:{record['line']}: its line is gone", flush=True)
            with open(args.state, "a", encoding="utf-8") as out:
                out.write(json.dumps(dict(record, verdict="stale", killers=[],
                                          at=datetime.datetime.now().isoformat(
                                              timespec="seconds"))) + "\n")
        run(mutants, args.state, args.budget, again=True, named=args.tests)
        return report(args.state)
    mutants = selected(args)
    if args.command == "list":
        for m in mutants:
            print(f"{m['id']}  {m['path']}:{m['line']}  {m['operator']}\n"
                  f"    - {m['original'].strip()}\n    + {m['mutated'].strip()}")
        print(f"{len(mutants)} mutants")
        return
    run(mutants, args.state, args.budget)
    report(args.state)


if __name__ == "__main__":
    sys.exit(main())
