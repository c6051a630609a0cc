#!/usr/bin/env python3
"""Writes the benchmark site: a deterministic shop-like site with the untidiness of real ones.

    site_generator.py DIR PAGES --base http://127.0.0.1:PORT [--seed N] [--shape light|heavy]
                      [--page-kb 8-16] [--links 20-40] [--markup 0]

DIR/site/ gets the files nginx serves (see site_server.sh for the locations), DIR/expected.txt the
canonical path of every page a polite crawler reaches from "/" (one per line, sorted; wrk requests
them too).

What the pages hold, and why:
- product pages /p/<i>.html of 8-16 KB, each with 20-40 links: relative (`7.html`, `./7.html`,
  `../p/7.html`) and absolute-path spellings of the same page, repeats, `#fragments`, list pages
  whose query string comes in either order (`?cat=1&page=2`, `?page=2&cat=1`: one page to a
  crawler that canonicalizes, two fetches to one that does not), links to other hosts, links to
  pages that do not exist (404) and to /private/, which robots.txt disallows;
- list pages /list?cat=<c>&page=<k>, 40 products each, chained to the next page of their category;
- robots.txt (Disallow: /private/) and sitemap.xml (every page of expected.txt, as BASE URLs), an
  about page and a stylesheet.
Every product page links to the next one, so all are reachable from "/" whatever else is drawn.

Two page shapes (--shape), since a crawler's cost per page follows its markup and links more than
its bytes:
- light (the default, the site earlier reports measured): product pages of 8-16 KB with 20-40
  links, their text mostly bare sentences (one in five in a <p>);
- heavy: 10-14 KB with 36-50 links (about 43), and dense markup (--markup 3): each sentence in a
  block of its own with about three inline elements carrying classes, as catalogue pages built
  from components are, and links that carry class and title attributes.
--page-kb, --links and --markup override the shape's figures. DIR/shape.json records what was
asked and what the product pages came out as (mean bytes, links and elements per page).
"""
import argparse
import json
import math
import os
import random
import sys

PER_LIST = 40
SHAPES = {
    "light": {"page_kb": (8, 16), "links": (20, 40), "markup": 0.0},
    "heavy": {"page_kb": (10, 14), "links": (36, 50), "markup": 3.0},
}
INLINE = ("span", "em", "b", "i", "small", "strong", "code", "mark")
WORDS = ("crawler frontier request response scheduler slot fingerprint bloom filter redis queue "
         "spider item pipeline feed selector link extractor canonical robots sitemap delay "
         "concurrency middleware downloader engine callback").split()


def layout(pages):
    """Splits PAGES reachable pages into the index, products and list pages."""
    products = max(1, round((pages - 1) * PER_LIST / (PER_LIST + 1)))
    categories = max(1, products // 400)
    return products, categories


def category_members(products, categories, c):
    return list(range(c, products, categories))


def list_path(c, k, rng=None):
    if rng is not None and rng.random() < 0.5:
        return f"/list?page={k}&cat={c}"
    return f"/list?cat={c}&page={k}"


def filler(rng, target, markup=0.0):
    """Sentences up to TARGET bytes. With MARKUP > 0 each sentence is a block of its own whose
    words are wrapped in about MARKUP inline elements; with 0 (the light shape, unchanged from the
    first generator) one sentence in five is a <p>."""
    out, length = [], 0
    while length < target:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
        if markup > 0:
            for _ in range(round(rng.uniform(0, 2 * markup))):
                k = rng.randrange(len(words))
                tag = rng.choice(INLINE)
                words[k] = f"<{tag} class=\"t{rng.randrange(20)}\">{words[k]}</{tag}>"
            block = rng.choice(["p", "div", "li"])
            sentence = " ".join(words) + ". "
            sentence = (f"<ul><li class=\"row\">{sentence}</li></ul>\n" if block == "li" else
                        f"<{block} class=\"c{rng.randrange(10)}\">{sentence}</{block}>\n")
        else:
            sentence = " ".join(words).capitalize() + ". "
            if rng.random() < 0.2:
                sentence = f"<p>{sentence}</p>\n"
        out.append(sentence)
        length += len(sentence)
    return "".join(out)


def page(title, heading, links, rng, size, markup=0.0):
    head = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title>\n<link rel=\"stylesheet\" href=\"/static/site.css\">\n"
            f"<script>window.dataLayer = [];</script></head>\n<body>\n"
            f"<header><nav><a href=\"/\">Home</a> | <a href=\"/about.html\">About</a></nav></header>\n"
            f"<main><h1>{heading}</h1>\n")
    if markup > 0:
        nav = "<ul class=\"related\">\n" + "".join(
            f"  <li class=\"item\"><a class=\"link l{n % 7}\" href=\"{href}\" title=\"{text}\">"
            f"<span>{text}</span></a></li>\n" for n, (href, text) in enumerate(links)) + "</ul>\n"
    else:
        nav = "<ul class=\"related\">\n" + "".join(
            f"  <li><a href=\"{href}\">{text}</a></li>\n" for href, text in links) + "</ul>\n"
    price = f"<p class=\"price\">{rng.randint(1, 999)}.{rng.randint(0, 99):02d} EUR</p>\n"
    tail = "</main>\n<footer>&copy; bench shop</footer>\n</body></html>\n"
    body_size = max(0, size - len(head) - len(nav) - len(price) - len(tail))
    return head + price + "<article>" + filler(rng, body_size, markup) + "</article>\n" + nav + tail


def product_links(i, products, categories, lists_of, rng, counts=(20, 40)):
    links = [(f"{(i + 1) % products}.html", "next")]
    for _ in range(rng.randint(*counts) - 1):
        kind = rng.random()
        j = rng.randrange(products)
        if kind < 0.45:
            href = rng.choice([f"/p/{j}.html", f"{j}.html", f"./{j}.html", f"../p/{j}.html"])
        elif kind < 0.55:
            href = f"/p/{j}.html#" + rng.choice(["reviews", "specs", "top"])
        elif kind < 0.65 and links:
            href = rng.choice(links)[0]  # the same link twice, as menus and footers do
        elif kind < 0.80:
            c = rng.randrange(categories)
            href = list_path(c, rng.randint(1, lists_of[c]), rng)
            if rng.random() < 0.3:
                href = ".." + href
        elif kind < 0.88:
            href = rng.choice(["https://example.com/", f"https://example.com/item/{j}",
                               f"http://cdn.example.net/{j}.html", "mailto:shop@example.com"])
        elif kind < 0.95:
            href = f"/p/missing-{rng.randrange(max(1, products // 20))}.html"
        else:
            href = f"/private/{rng.randrange(50)}.html"
        links.append((href, f"item {j}"))
    return links


def span(text):
    """"8-16" as (8, 16)."""
    low, sep, high = text.partition("-")
    try:
        low, high = int(low), int(high if sep else low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN-MAX (two whole numbers)")
    if not 0 < low <= high:
        raise argparse.ArgumentTypeError(f"{text!r}: MIN must be above 0 and at most MAX")
    return low, high


def print_urls(count, seed):
    """URLs in the shapes links take: mixed-case hosts, ports, query arguments in any order, blank
    values, fragments, escapes, default ports and dot segments."""
    rng = random.Random(seed)
    hosts = ["example.com", "WWW.Example.com", "shop.example.net:8080", "127.0.0.1:8000",
             "docs.example.org"]
    out = []
    for i in range(count):
        path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        query = [f"{rng.choice(WORDS)}={rng.randint(0, 99)}" for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.2:
            query.append(rng.choice(["q=bloom%20filter", "empty=", "flag", "a=1&a=2", "s=caf%C3%A9"]))
        if rng.random() < 0.1:
            path = path.replace("/", "/./", 1)
        url = f"{rng.choice(['http', 'https'])}://{rng.choice(hosts)}/{path}"
        if rng.random() < 0.3:
            url += f"/{i}.html"
        if query:
            url += "?" + "&".join(query)
        if rng.random() < 0.2:
            url += "#" + rng.choice(WORDS)
        out.append(url)
    sys.stdout.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?")
    parser.add_argument("pages", type=int, nargs="?")
    parser.add_argument("--base", help="the site's URL, for sitemap.xml")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="light",
                        help="the product pages' size, links and markup (see above)")
    parser.add_argument("--page-kb", type=span, metavar="MIN-MAX",
                        help="product pages' size in KB, instead of the shape's")
    parser.add_argument("--links", type=span, metavar="MIN-MAX",
                        help="links per product page, instead of the shape's")
    parser.add_argument("--markup", type=float, metavar="N",
                        help="inline elements per sentence, about (0: bare sentences), instead of "
                             "the shape's")
    parser.add_argument("--urls", type=int, metavar="N",
                        help="instead of a site, print N URLs as crawls meet them, for fingerprinting")
    args = parser.parse_args()
    if args.urls:
        print_urls(args.urls, args.seed)
        return
    if args.dir is None or args.pages is None or args.base is None:
        parser.error("DIR, PAGES and --base are needed to write a site")

    site = os.path.join(args.dir, "site")
    for sub in ("p", "list", "private", "static"):
        os.makedirs(os.path.join(site, sub), exist_ok=True)
    shape = dict(SHAPES[args.shape])
    for key in ("page_kb", "links", "markup"):
        if getattr(args, key) is not None:
            shape[key] = getattr(args, key)
    low_kb, high_kb = shape["page_kb"]
    products, categories = layout(args.pages)
    members = [category_members(products, categories, c) for c in range(categories)]
    lists_of = [max(1, math.ceil(len(m) / PER_LIST)) for m in members]
    expected = ["/", "/about.html"]

    def write(path, text):
        with open(os.path.join(site, path), "w") as f:
            f.write(text)

    rng = random.Random(args.seed)
    index_links = [("/p/0.html", "Start")] + [(list_path(c, 1), f"Category {c}")
                                              for c in range(categories)]
    write("index.html", page("Bench shop", "Bench shop", index_links, rng, 8192))
    write("about.html", page("About", "About the bench shop", [], rng, 4096))
    write("static/site.css", "body { font-family: sans-serif; }\n")

    sizes = links_made = elements = 0
    for i in range(products):
        rng = random.Random(args.seed * 1_000_003 + i)
        links = product_links(i, products, categories, lists_of, rng, shape["links"])
        text = page(f"Product {i}", f"Product {i}", links, rng,
                    rng.randint(low_kb * 1024, high_kb * 1024), shape["markup"])
        write(f"p/{i}.html", text)
        sizes += len(text)
        links_made += len(links)
        elements += text.count("<") - text.count("</") - text.count("<!")
        expected.append(f"/p/{i}.html")

    for c in range(categories):
        for k in range(1, lists_of[c] + 1):
            rng = random.Random(args.seed * 7_000_003 + c * 100_003 + k)
            chunk = members[c][(k - 1) * PER_LIST:k * PER_LIST]
            links = [(f"/p/{j}.html", f"Product {j}") for j in chunk]
            if k < lists_of[c]:
                links.append((list_path(c, k + 1, rng), "Next page"))
            if k > 1:
                links.append((list_path(c, k - 1, rng), "Previous page"))
            rng.shuffle(links)
            write(f"list/{c}-{k}.html", page(f"Category {c}, page {k}", f"Category {c}", links, rng,
                                             rng.randint(8 * 1024, 12 * 1024), shape["markup"]))
            expected.append(f"/list?cat={c}&page={k}")

    for k in range(50):
        write(f"private/{k}.html", page(f"Private {k}", "Private", [], random.Random(k), 2048))
    base = args.base.rstrip("/")
    write("robots.txt", f"User-agent: *\nDisallow: /private/\n\nSitemap: {base}/sitemap.xml\n")
    write("sitemap.xml", '<?xml version="1.0" encoding="UTF-8"?>\n'
          '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
          + "".join(f"<url><loc>{base}{p.replace('&', '&amp;')}</loc></url>\n" for p in expected)
          + "</urlset>\n")

    expected.sort()
    with open(os.path.join(args.dir, "expected.txt"), "w") as f:
        f.write("\n".join(expected) + "\n")
    made = {"shape": args.shape, "page_kb": list(shape["page_kb"]), "links": list(shape["links"]),
            "markup": shape["markup"], "product_pages": products,
            "mean_bytes": round(sizes / products), "mean_links": round(links_made / products, 1),
            "mean_elements": round(elements / products, 1)}
    with open(os.path.join(args.dir, "shape.json"), "w") as f:
        json.dump(made, f, indent=1)
        f.write("\n")
    print(f"{len(expected)} pages ({products} products, "
          f"{sum(lists_of)} list pages in {categories} categories) in {site}")


if __name__ == "__main__":
    main()
