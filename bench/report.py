#!/usr/bin/env python3
"""Turns what bench/run.sh measured (WORK) into OUT/report.md, results.json and two charts.

    report.py WORK OUT --pages N
    report.py --summary OUT SHAPE...    (OUT/report.md: the shapes' OUT/SHAPE/results.json side by side)

Each contender's pages come from nginx's access log of its run (WORK/logs/NAME.log, lines of
"<epoch.millis> <status> <request URI>"), counted against the site's page set (WORK/expected.txt):
a page is fetched when a request for it, its query arguments in any order, got a 200. A contender
that misses a page is void: its speed is shown but not compared. Wall time, CPU and peak RSS come
from /usr/bin/time (WORK/NAME.time: "wall user sys maxrss_kb").
"""
import argparse
import json
import os
import platform
import re
import subprocess
from collections import Counter

CRAWLS = ["crawler-gumbo", "crawler-libxml2", "crawler-links", "scrapy", "crawlee", "spider-rs", "wget"]
WHAT = {
    "crawler-gumbo": "`crawler run`, rules + 2-field item, Gumbo",
    "crawler-libxml2": "`crawler run`, rules + 2-field item, libxml2",
    "crawler-links": "`crawler crawl site`, links only",
    "scrapy": "Scrapy 2.8 CrawlSpider, rules + 2-field item",
    "crawlee": "Crawlee 3.18.1 CheerioCrawler, 2-field item",
    "spider-rs": "spider-rs 0.0.157, links only",
    "wget": "wget --recursive, links only",
}


def canonical(uri):
    path, _, query = uri.partition("?")
    return path + ("?" + "&".join(sorted(query.split("&"))) if query else "")


def read_log(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            parts = line.split(" ", 2)
            if len(parts) == 3:
                rows.append((float(parts[0]), int(parts[1]), parts[2].rstrip("\n")))
    return rows


def read_time(path):
    if not os.path.exists(path):
        return None
    fields = open(path).read().split()
    if len(fields) != 4:
        return None
    wall, user, sys_, rss = map(float, fields)
    return {"wall": wall, "cpu": user + sys_, "rss_mib": rss / 1024}


def runs_of(work, name):
    """NAME's runs: NAME, then NAME~2, NAME~3... when run.sh --repeat ran it more than once."""
    runs, n = [], 1
    while True:
        run = name if n == 1 else f"{name}~{n}"
        if not (os.path.exists(os.path.join(work, f"{run}.time")) or
                os.path.exists(os.path.join(work, "logs", f"{run}.log"))):
            return runs
        runs.append(run)
        n += 1


def median_run(work, name):
    """The run of NAME with the median wall time (a failed run counts as the slowest)."""
    runs = runs_of(work, name)
    if not runs:
        return None
    walls = []
    for run in runs:
        timing = read_time(os.path.join(work, f"{run}.time"))
        walls.append((timing["wall"] if timing else float("inf"), run))
    return sorted(walls)[len(walls) // 2][1]


def micro_ms(text, benchmark):
    """CPU ms of a Google Benchmark row: its _median when repeated, else the row itself."""
    for row in (f"{benchmark}_median", benchmark):
        match = re.search(rf"^{re.escape(row)}\s+\S+ ns\s+(\S+) ns", text, re.M)
        if match:
            return float(match.group(1)) / 1e6
    return None


def periodic_lines(path):
    """The JSON objects of the crawler's PeriodicLog lines ("[periodic_log] INFO: {" up to "}")."""
    blocks, block = [], None
    if not os.path.exists(path):
        return blocks
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if block is None and line.endswith("[periodic_log] INFO: {"):
            block = "{"
        elif block is not None:
            block += line
            if line == "}":
                blocks.append(json.loads(block))
                block = None
    return blocks


def read_rss(path):
    """rss_sampler.py's samples: (seconds since start, MiB)."""
    if not os.path.exists(path):
        return []
    return [(float(t), int(kib) / 1024) for t, kib in (line.split() for line in open(path))]


def memory_over_time(log_path, rss_path, out, entry):
    """Report lines on what a crawl's memory followed: its queue, or its seen set."""
    rss = read_rss(rss_path)
    samples = []
    for block in periodic_lines(log_path):
        stats, at = block.get("stats", {}), block["time"]["elapsed"]
        before = [mib for t, mib in rss if t <= at]
        samples.append({
            "s": at,
            "pages": stats.get("response_received_count", 0),
            "seen": stats.get("scheduler/enqueued", 0),
            "queue": stats.get("scheduler/enqueued", 0) - stats.get("scheduler/dequeued", 0),
            "filtered": stats.get("bloomfilter/filtered", 0),
            "rss_mib": before[-1] if before else None,
            "peak_mib": stats.get("memusage/max", 0) / 2**20,
            "startup_mib": stats.get("memusage/startup", 0) / 2**20,
            "bloom_mib": stats.get("bloomfilter/bits", 0) / 8 / 2**20,
        })
    if len(samples) < 3 or not rss:
        return []
    entry["memory_samples"] = samples
    top = max(range(len(samples)), key=lambda i: samples[i]["queue"])
    at_top, last = samples[top], samples[-1]
    bloom = max(s["bloom_mib"] for s in samples)
    per_request = (at_top["peak_mib"] - at_top["startup_mib"] - bloom) * 2**20 / max(at_top["queue"], 1)
    entry["bytes_per_queued_request"] = per_request
    lines = ["", "What its memory follows: every half second the crawler's own log gives the queue "
             "(`PERIODIC_LOG_STATS`: `scheduler/enqueued` - `scheduler/dequeued`), the seen set (every "
             "request enqueued) and peak RSS (`memusage/max`); `bench/rss_sampler.py` gives the "
             "resident memory at that moment.", "",
             "| s | pages crawled | seen set | queue | duplicates filtered | RSS MiB | peak RSS MiB |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    step = max(1, len(samples) // 12)
    for i, s in enumerate(samples):
        if i % step == 0 or i == top or i == len(samples) - 1:
            mark = " **(queue's peak)**" if i == top else ""
            lines.append(f"| {s['s']:.1f}{mark} | {s['pages']:,} | {s['seen']:,} | {s['queue']:,} | "
                         f"{s['filtered']:,} | {fmt(s['rss_mib'], 1)} | {s['peak_mib']:.1f} |")
    lines += ["", f"- The memory follows the queue: {fmt(at_top['rss_mib'], 1)} MiB resident at "
              f"{at_top['s']:.1f} s with {at_top['queue']:,} requests queued, then down with the queue "
              f"to {fmt(last['rss_mib'], 1)} MiB as it drains (the allocator hands pages back over "
              f"about 10 s), while the seen set stays at {last['seen']:,} requests and the dupefilter "
              f"goes on from {at_top['filtered']:,} to {last['filtered']:,} filtered duplicates.",
              f"- Of the peak, {at_top['startup_mib']:.1f} MiB was there at start-up and the Bloom "
              f"filter's bits are {bloom:.1f} MiB, fixed by its capacity however much it has seen; the "
              f"rest is about {per_request:,.0f} bytes per queued request: the 256-byte request in "
              "the queue's deque, its URL, its meta (a JSON object holding its depth), and allocator "
              "slack.", "", "![memory and queue over the long crawl](memory.png)"]
    memory_chart(out, samples, rss)
    return lines


def memory_chart(out, samples, rss):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, left = plt.subplots(figsize=(12, 4.5))
    xs = [s["s"] for s in samples]
    left.plot([t for t, _ in rss], [mib for _, mib in rss], color="#d62728", label="RSS (MiB)")
    left.plot(xs, [s["peak_mib"] for s in samples], color="#d62728", linestyle=":",
              label="peak RSS (MiB)")
    left.set_xlabel("seconds since the crawl started")
    left.set_ylabel("MiB")
    left.set_ylim(bottom=0)
    right = left.twinx()
    right.plot(xs, [s["queue"] / 1000 for s in samples], color="#1f77b4", label="queue (thousands)")
    right.plot(xs, [s["seen"] / 1000 for s in samples], color="#1f77b4", linestyle="--",
               label="seen set (thousands)")
    right.plot(xs, [s["pages"] / 1000 for s in samples], color="#999999", label="pages crawled (thousands)")
    right.set_ylabel("thousands of requests")
    right.set_ylim(bottom=0)
    handles = left.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    left.legend(handles, [h.get_label() for h in handles], loc="center right", fontsize="small")
    left.set_title("The long crawl: memory follows the queue, not the seen set")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "memory.png"), dpi=100)
    plt.close(fig)


def count_pages(rows, expected):
    fetched = [(t, canonical(u)) for t, status, u in rows if status == 200]
    pages = [(t, u) for t, u in fetched if u in expected]
    unique = {u for _, u in pages}
    extra = {u for _, u in fetched if u not in expected and u not in ("/robots.txt", "/sitemap.xml",
                                                                      "/static/site.css")}
    return {
        "requests": len(rows),
        "pages": len(unique),
        "duplicate_fetches": len(pages) - len(unique),
        "missing": len(expected) - len(unique),
        "extra": sorted(extra)[:5],
        "extra_count": len(extra),
        "status": dict(Counter(str(s) for _, s, _ in rows)),
        "times": sorted(t for t, _ in pages),
    }


def rate_by_slice(times, first, last):
    """Pages per second between the first-th and last-th fraction of a crawl's page times."""
    lo, hi = int(len(times) * first), max(int(len(times) * last) - 1, 0)
    if hi <= lo or times[hi] <= times[lo]:
        return None
    return (hi - lo) / (times[hi] - times[lo])


def version(cmd):
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    first = ((done.stdout.strip() or done.stderr.strip()).splitlines() or ["?"])[0]
    return first.split(" Copyright")[0].split(" built on")[0].rstrip(".")


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} cores ({cpu}), Linux {platform.release()}"


def fmt(value, digits=0):
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def ratio_cell(ratio, suffix=""):
    return "-" if ratio is None else f"{ratio:,.1f}x{suffix}"


def charts(out, results, timelines, shape="light"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in CRAWLS if n in results and results[n].get("pages_per_s")]
    colors = ["#1f77b4" if n.startswith("crawler") else "#999999" for n in names]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    left.barh(names, [results[n]["pages_per_s"] for n in names], color=colors)
    left.set_xlabel("pages/s (higher is better)")
    left.invert_yaxis()
    right.barh(names, [results[n]["cpu_ms_per_page"] for n in names], color=colors)
    right.set_xlabel("CPU ms per page (lower is better)")
    right.invert_yaxis()
    fig.suptitle(f"Crawling the benchmark site ({shape} pages) on loopback nginx")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "pages.png"), dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(12, 4.5))
    for name, times in timelines.items():
        if len(times) < 2:
            continue
        span = times[-1] - times[0]
        bucket = max(0.25, span / 60)
        counts = Counter(int((t - times[0]) / bucket) for t in times)
        xs = sorted(counts)
        ax.plot([x * bucket for x in xs], [counts[x] / bucket for x in xs], label=name)
    ax.set_xlabel("seconds since the crawl's first page")
    ax.set_ylabel("pages/s")
    ax.set_yscale("log")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title("Pages/s over each crawl (flat means the seen set and queue cost nothing as they grow)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "timeline.png"), dpi=100)
    plt.close(fig)


def site_description(work):
    """What the site's pages are like: site_generator.py's shape.json, or the light shape's
    figures for a run from before shapes."""
    path = os.path.join(work, "shape.json")
    if not os.path.exists(path):
        return "light", "8-16 KB each, 20-40 links a page"
    shape = json.load(open(path))
    low, high = shape["page_kb"]
    links_low, links_high = shape["links"]
    return shape["shape"], (
        f"{shape['shape']} pages: {low}-{high} KB each ({shape['mean_bytes'] / 1024:.1f} KB on "
        f"average), {links_low}-{links_high} links a page ({shape['mean_links']:.0f} on average), "
        f"{shape['mean_elements']:.0f} elements a page (markup {shape['markup']:g})")


# The speed goals each shape is held to: (what, contender, results.json field, goal, how shown).
GOALS = [
    ("items crawl, Gumbo, pages/s vs Scrapy", "crawler-gumbo", "x_scrapy_pages_per_s", 25, "{:.1f}x"),
    ("items crawl, libxml2, pages/s vs Scrapy", "crawler-libxml2", "x_scrapy_pages_per_s", 50, "{:.1f}x"),
    ("items crawl, Gumbo, Scrapy's RSS / ours", "crawler-gumbo", "x_scrapy_rss", 3, "{:.2f}x"),
    ("items crawl, libxml2, Scrapy's RSS / ours", "crawler-libxml2", "x_scrapy_rss", 3, "{:.2f}x"),
    ("links only, share of wrk's requests/s", "crawler-links", "share_of_wrk", 0.20, "{:.1%}"),
]


def summary(out, shapes):
    """OUT/report.md: each shape's figures against GOALS, and links to the shapes' reports."""
    lines = [f"# Crawl benchmark, {os.path.basename(os.path.abspath(out))}", "",
             f"- Machine: {machine()}; nginx (1 worker) shares it with each crawler.",
             "- One run of `bench/run.sh` over " + str(len(shapes)) + " page shapes; each shape's "
             "report has every contender, the charts and the one-core runs:"]
    found = {}
    for shape in shapes:
        path = os.path.join(out, shape, "results.json")
        if not os.path.exists(path):
            lines.append(f"  - {shape}: no results (the run stopped before its report)")
            continue
        found[shape] = json.load(open(path))
        lines.append(f"  - [{shape}]({shape}/report.md): {found[shape].get('site', shape)}")
    lines += ["", "## Goals", "",
              "| goal | " + " | ".join(found) + " |",
              "|---|" + "---:|" * len(found)]
    for what, contender, field, goal, shown in GOALS:
        cells = []
        for results in found.values():
            entry = results["contenders"].get(contender, {})
            value = entry.get(field)
            if field == "share_of_wrk" and entry.get("pages_per_s") and results.get("wrk_requests_per_s"):
                value = entry["pages_per_s"] / results["wrk_requests_per_s"]
            if value is None or entry.get("void"):
                cells.append("n/a")
            else:
                cells.append(shown.format(value) + (" ✓" if value >= goal else " ✗ (goal " + shown.format(goal) + ")"))
        lines.append(f"| {what}, goal >= {shown.format(goal)} | " + " | ".join(cells) + " |")
    lines += ["", "| contender, pages/s | " + " | ".join(found) + " |", "|---|" + "---:|" * len(found)]
    for name in CRAWLS:
        cells = [fmt(r["contenders"].get(name, {}).get("pages_per_s")) for r in found.values()]
        if any(c != "-" for c in cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    wrk = [fmt(r.get("wrk_requests_per_s")) for r in found.values()]
    lines.append("| wrk, requests/s | " + " | ".join(wrk) + " |")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", help="run.sh's measurements, or with --summary OUT")
    parser.add_argument("out", nargs="*", help="where the report goes, or with --summary the shapes")
    parser.add_argument("--pages", type=int)
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    if args.summary:
        return summary(args.work, args.out)
    if len(args.out) != 1 or args.pages is None:
        parser.error("WORK OUT --pages N, or --summary OUT SHAPE...")
    work, out = args.work, args.out[0]
    expected = set(open(os.path.join(work, "expected.txt")).read().split())
    shape, site_text = site_description(work)

    results, timelines = {}, {}
    for name in CRAWLS + [c + "@1core" for c in CRAWLS if c.startswith("crawler")]:
        run = median_run(work, name)
        if run is None:
            continue
        timing = read_time(os.path.join(work, f"{run}.time"))
        log = os.path.join(work, "logs", f"{run}.log")
        log_rows = read_log(log)
        counted = count_pages(log_rows, expected)
        times = counted.pop("times")
        entry = {**counted, **(timing or {"failed": True})}
        if timing and counted["pages"]:
            entry["pages_per_s"] = counted["pages"] / timing["wall"]
            entry["cpu_ms_per_page"] = timing["cpu"] / counted["pages"] * 1000
        requests = [t for t, _, _ in log_rows]
        if len(times) > 1 and requests:
            # From its first request to its last page: the crawl without start-up and shutdown
            # (spider-rs lingers for about half a minute after its last page).
            entry["crawl_s"] = times[-1] - min(requests)
            entry["pages_per_crawl_s"] = counted["pages"] / entry["crawl_s"]
        entry["void"] = counted["missing"] > 0 or timing is None
        entry["runs"] = len(runs_of(work, name))
        results[name] = entry
        if "@" not in name:
            timelines[name] = times

    wrk = None
    if os.path.exists(os.path.join(work, "wrk.out")):
        match = re.search(r"Requests/sec:\s+([\d.]+)", open(os.path.join(work, "wrk.out")).read())
        wrk = float(match.group(1)) if match else None

    base = results.get("scrapy")
    base_ok = base and not base["void"]
    for entry in results.values():
        if base_ok and not entry["void"] and entry.get("pages_per_s"):
            entry["x_scrapy_pages_per_s"] = entry["pages_per_s"] / base["pages_per_s"]
            entry["x_scrapy_cpu"] = base["cpu_ms_per_page"] / entry["cpu_ms_per_page"]
            entry["x_scrapy_rss"] = base["rss_mib"] / entry["rss_mib"]

    repeats = max((e["runs"] for e in results.values()), default=1)
    lines = [f"# Crawl benchmark, {os.path.basename(os.path.dirname(os.path.abspath(out)))}, {shape} pages", "",
             f"- Machine: {machine()}; nginx (1 worker) shares it with each crawler.",
             f"- Site: {len(expected):,} pages reachable from `/` (`bench/site_generator.py "
             f"--shape {shape}`, {args.pages:,} asked), {site_text}: relative spellings, repeats, "
             "fragments, query arguments in either order, other hosts, 404s, robots.txt-disallowed "
             "/private/.",
             f"- Versions: {version(['nginx', '-v'])}; {version(['/usr/bin/python3', '-m', 'scrapy', 'version'])}; "
             f"node {version(['node', '--version'])}; {version(['wget', '--version'])}; "
             f"{version(['wrk', '--version'])}.",
             "- Every contender: 64 concurrent requests where it has the setting, robots.txt obeyed, "
             "the site's host only. Pages are counted off nginx's access log.",
             "", "## Crawls", "",
             "Pages/s divides the pages by the process's wall time; pages per crawl second by the "
             "time from its first request to its last page in nginx's log." +
             (f" A contender run more than once (`run.sh --repeat`) shows its run of median wall "
              f"time, of {repeats}." if repeats > 1 else ""), "",
             "| contender | what | pages | missing | duplicate fetches | wall s | pages/s | crawl s | pages per crawl s | CPU ms/page | peak RSS MiB | pages/s vs Scrapy | CPU/page vs Scrapy | RSS vs Scrapy |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in CRAWLS:
        if name not in results:
            lines.append(f"| {name} | {WHAT[name]} | skipped | | | | | | | | | | | |")
            continue
        e = results[name]
        void = " (void)" if e["void"] else ""
        lines.append(
            f"| {name}{void} | {WHAT[name]} | {e['pages']:,} | {e['missing']:,} | {e['duplicate_fetches']:,} | "
            f"{fmt(e.get('wall'), 2)} | {fmt(e.get('pages_per_s'))} | {fmt(e.get('crawl_s'), 2)} | "
            f"{fmt(e.get('pages_per_crawl_s'))} | {fmt(e.get('cpu_ms_per_page'), 3)} | "
            f"{fmt(e.get('rss_mib'), 1)} | {ratio_cell(e.get('x_scrapy_pages_per_s'))} | "
            f"{ratio_cell(e.get('x_scrapy_cpu'), ' less')} | {ratio_cell(e.get('x_scrapy_rss'), ' less')} |")
    if wrk:
        lines += ["", f"**Ceiling**: wrk (1 thread, 64 connections, 10 s over the site's pages) got "
                  f"{wrk:,.0f} requests/s from the same nginx."]
        for name in ("crawler-links", "crawler-libxml2", "crawler-gumbo"):
            if results.get(name, {}).get("pages_per_s"):
                lines.append(f"`{name}` reached {results[name]['pages_per_s'] / wrk:.0%} of it.")
    parse_path = os.path.join(work, "micro-parse_bench.txt")
    if os.path.exists(parse_path):
        text = open(parse_path).read()
        rows = []
        # The site's own pages when parse_bench had them (PARSE_BENCH_PAGES), else its 12 KB page.
        site = micro_ms(text, "parse_site_pages/0") is not None
        source = "parse_site_pages" if site else "parse_only"
        for parser, arg in (("gumbo", 0), ("libxml2", 1)):
            parse_ms = micro_ms(text, f"{source}/{arg}")
            entry = results.get(f"crawler-{parser}")
            if parse_ms is not None and entry and entry.get("cpu_ms_per_page"):
                entry["parse_ms_per_page"] = parse_ms
                entry["cpu_ms_per_page_outside_parser"] = entry["cpu_ms_per_page"] - parse_ms
                rows.append(f"| crawler-{parser} | {entry['cpu_ms_per_page']:.3f} | {parse_ms:.3f} | "
                            f"**{entry['cpu_ms_per_page_outside_parser']:.3f}** |")
        if rows:
            what = ("`parse_site_pages`: the median over 3 runs of parsing up to 2,000 of the site's own "
                    "pages in turn" if site else "`parse_only` (its 12 KB page; the site's pages are "
                    "8-16 KB)")
            lines += ["", "CPU per page outside the HTML parser: the crawl's CPU per page less "
                      f"`parse_bench`'s time to parse a page with that parser, {what}.", "",
                      f"| contender | CPU ms/page | parse ms/page | outside the parser, ms/page |",
                      "|---|---:|---:|---:|"] + rows
    void = [n for n in results if results[n]["void"]]
    if void:
        lines += ["", "Void (missed pages of the site, or failed): " + ", ".join(
            f"{n} ({results[n]['missing']:,} missing)" for n in void) + "."]
    extras = [f"{n}: {results[n]['extra_count']} (e.g. {', '.join(results[n]['extra'][:3])})"
              for n in CRAWLS if n in results and results[n]["extra_count"]]
    if extras:
        lines += ["", "Fetched outside the page set (disallowed or missing pages): " + "; ".join(extras) + "."]
    lines += ["", "![pages/s and CPU per page](pages.png)", "", "![pages/s over each crawl](timeline.png)"]

    pinned = [n for n in CRAWLS if n + "@1core" in results]
    if pinned:
        lines += ["", "## One core and two", "",
                  "The same crawls with the crawler pinned to one core (`taskset -c 0`; nginx free to "
                  "use the other) and unpinned (two cores, shared with nginx).", "",
                  "| contender | pages/s, 1 core | pages/s, 2 cores | 2 cores / 1 core | CPU ms/page, 1 core |",
                  "|---|---:|---:|---:|---:|"]
        for name in pinned:
            one, two = results[name + "@1core"], results[name]
            ratio = two["pages_per_s"] / one["pages_per_s"] if one.get("pages_per_s") and two.get("pages_per_s") else None
            lines.append(f"| {name} | {fmt(one.get('pages_per_s'))} | {fmt(two.get('pages_per_s'))} | "
                         f"{fmt(ratio, 2)}x | {fmt(one.get('cpu_ms_per_page'), 3)} |")

    long_log = os.path.join(work, "logs", "long-bloom.log")
    if os.path.exists(long_log):
        long_expected = set(open(os.path.join(work, "long-expected.txt")).read().split())
        counted = count_pages(read_log(long_log), long_expected)
        timing = read_time(os.path.join(work, "long-bloom.time"))
        times = counted["times"]
        first, last = rate_by_slice(times, 0.02, 0.12), rate_by_slice(times, 0.90, 1.0)
        timelines["long-bloom"] = times
        results["long-bloom"] = {k: v for k, v in counted.items() if k != "times"}
        results["long-bloom"].update(timing or {})
        results["long-bloom"].update({"first_tenth_pages_per_s": first, "last_tenth_pages_per_s": last})
        lines += ["", "## A long crawl with the bloom dupefilter", "",
                  f"`crawler crawl site -s DUPEFILTER_CLASS=bloom` on a {len(long_expected):,}-page site: "
                  f"{counted['pages']:,} pages ({counted['missing']:,} missing) in {fmt(timing and timing['wall'], 1)} s, "
                  f"peak RSS {fmt(timing and timing['rss_mib'], 1)} MiB.", "",
                  f"- pages/s over the first tenth after warm-up (pages 2%-12%): {fmt(first)}",
                  f"- pages/s over the last tenth (pages 90%-100%): {fmt(last)}",
                  f"- last / first: {fmt(last / first if first and last else None, 2)}"]
        lines += memory_over_time(os.path.join(work, "long-bloom.log.txt"),
                                  os.path.join(work, "long-bloom.rss.txt"), out, results["long-bloom"])
        stats_path = os.path.join(work, "long-bloom.stats.json")
        if os.path.exists(stats_path):
            stats = json.load(open(stats_path))
            keep = {k: v for k, v in stats.items() if k.startswith(("bloomfilter/", "memusage/", "scheduler/"))}
            lines += ["", "Its stats on memory, the dupefilter and the queue:", "", "```",
                      json.dumps(keep, indent=1, sort_keys=True), "```"]

    fp_c, fp_s = read_time(os.path.join(work, "fp-crawler.time")), read_time(os.path.join(work, "fp-scrapy.time"))
    if fp_c and fp_s:
        agree = open(os.path.join(work, "fp.agree")).read().strip()
        results["fingerprint"] = {"crawler": fp_c, "scrapy": fp_s, "output": agree}
        lines += ["", "## Fingerprints of 100,000 URLs, whole process", "",
                  "`crawler fingerprint -` against the same loop in Scrapy (`bench/peers/scrapy_fingerprint.py`: "
                  "`fingerprint(Request(url))` and `canonicalize_url`), on URLs from "
                  "`site_generator.py --urls 100000`. Outputs are " + agree + ".", "",
                  "| | wall s | CPU s | peak RSS MiB |", "|---|---:|---:|---:|",
                  f"| crawler | {fp_c['wall']:.2f} | {fp_c['cpu']:.2f} | {fp_c['rss_mib']:.1f} |",
                  f"| Scrapy | {fp_s['wall']:.2f} | {fp_s['cpu']:.2f} | {fp_s['rss_mib']:.1f} |", "",
                  f"crawler / Scrapy: **{fp_s['wall'] / fp_c['wall']:.0f}x** faster (wall)."]

    micro = [(n, os.path.join(work, f"micro-{n}.txt")) for n in ("fingerprint_bench", "parse_bench", "dupefilter_bench")]
    micro = [(n, p) for n, p in micro if os.path.exists(p)]
    if micro:
        lines += ["", "## Micro-benchmarks", ""]
        for name, path in micro:
            text = open(path).read().strip()
            lines += [f"`{name}`:", "", "```", text, "```", ""]

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"site_pages": len(expected), "site": site_text, "wrk_requests_per_s": wrk,
                   "contenders": results}, f,
                  indent=1, sort_keys=True)
    charts(out, results, timelines, shape)


if __name__ == "__main__":
    main()
