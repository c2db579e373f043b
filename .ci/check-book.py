#!/usr/bin/env python3
"""Checks the guide as mdBook built it (target/book): every link and image of every chapter resolves, and a chapter's
charts load in a real browser.

1. Links: each `href` and `src` inside a page's `<main>` (what the chapter wrote, not mdBook's own theme) that is not
   an absolute URL must name a file or folder of the built book; a `#fragment` must name an element `id` of the page it
   points at (mdBook gives every heading one). A link to a chapter not in SUMMARY.md, a results file that was renamed,
   or a heading whose wording changed all fail here with the page and the link.
2. Images: each `<img>` must be a file of the book, and an SVG must parse as XML.
3. The browser (with `--browser PATH`, Chromium): the book is served on the loopback interface, a page opens the
   chapter given by `--chapter` in a frame, waits for it to load, and reports each image of the chapter's `<main>`
   with its natural width; every one must have loaded (width above 0), and there must be at least one.

Usage: check-book.py BOOK_DIR [--browser /usr/bin/chromium] [--chapter 09-crossover.html]
"""

from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import xml.etree.ElementTree as ElementTree


class Page(html.parser.HTMLParser):
    """One built page: the ids it defines, and the links and images inside its `<main>`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []
        self._main_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if "id" in values:
            self.ids.add(values["id"])
        if tag == "main":
            self._main_depth += 1
        if not self._main_depth:
            return
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        if tag == "img" and "src" in values:
            self.images.append(values["src"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "main" and self._main_depth:
            self._main_depth -= 1


@functools.lru_cache(maxsize=None)
def parsed(path: pathlib.Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def is_external(link: str) -> bool:
    return bool(urllib.parse.urlsplit(link).scheme) or link.startswith("//")


def check_links(book: pathlib.Path) -> list[str]:
    """Every broken link and image of the book's chapters, as `page: link (why)`."""
    problems: list[str] = []
    chapters = [p for p in sorted(book.rglob("*.html")) if p.name not in ("print.html", "toc.html", "404.html")]
    if len(chapters) < 20:
        problems.append(f"only {len(chapters)} pages were built: the book is not the guide")
    for page_path in chapters:
        page = parsed(page_path)
        name = page_path.relative_to(book)
        for link in page.links + page.images:
            if is_external(link) or link.startswith("mailto:"):
                continue
            target, _, fragment = link.partition("#")
            resolved = (page_path.parent / urllib.parse.unquote(target)).resolve() if target else page_path
            if not resolved.exists():
                problems.append(f"{name}: {link} (no such file in the book)")
                continue
            if fragment and resolved.suffix == ".html" and urllib.parse.unquote(fragment) not in parsed(resolved).ids:
                problems.append(f"{name}: {link} (no element with id `{fragment}` there)")
        for image in page.images:
            if is_external(image):
                problems.append(f"{name}: {image} (an image from outside the book)")
                continue
            path = (page_path.parent / urllib.parse.unquote(image)).resolve()
            if path.suffix == ".svg" and path.exists():
                try:
                    ElementTree.parse(path)
                except ElementTree.ParseError as e:
                    problems.append(f"{name}: {image} (not well-formed SVG: {e})")
    return problems


HARNESS = """<!doctype html><meta charset="utf-8"><title>charts</title>
<iframe id="chapter" src="CHAPTER" width="1200" height="900"></iframe>
<pre id="result">pending</pre>
<script>
const frame = document.getElementById("chapter");
frame.addEventListener("load", async () => {
  const images = [...frame.contentDocument.querySelectorAll("main img")];
  await Promise.all(images.map(img => img.complete ? null : new Promise(done => {
    img.addEventListener("load", done); img.addEventListener("error", done);
  })));
  // mdBook's theme may show one image twice (the page and its zoomed view): report each source once.
  const seen = new Map(images.map(img => [img.getAttribute("src"), img.naturalWidth]));
  const report = [...seen].map(([src, width]) => ({src, width}));
  document.getElementById("result").textContent = JSON.stringify(report);
});
</script>
"""


def check_in_browser(book: pathlib.Path, browser: str, chapter: str) -> list[str]:
    """Opens `chapter` in headless Chromium from a server on the loopback interface; the problems with its images."""
    harness = book / "__charts.html"
    harness.write_text(HARNESS.replace("CHAPTER", chapter), encoding="utf-8")
    handler = functools.partial(QuietHandler, directory=str(book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as profile:
            dom = subprocess.run(
                [
                    browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={profile}", "--virtual-time-budget=15000", "--dump-dom",
                    f"http://127.0.0.1:{server.server_address[1]}/{harness.name}",
                ],
                capture_output=True, text=True, timeout=120, check=False,
            ).stdout
    finally:
        server.shutdown()
        harness.unlink()
    found = re.search(r'<pre id="result">(.*?)</pre>', dom, flags=re.S)
    if not found or found.group(1) == "pending":
        return [f"{chapter}: the browser did not report the chapter's images (its page: {dom[:300]!r})"]
    report = json.loads(html.unescape(found.group(1)))
    if not report:
        return [f"{chapter}: the chapter shows no image in the browser"]
    print(f"{chapter} in {browser}: " + ", ".join(f"{i['src']} {i['width']} px wide" for i in report))
    return [f"{chapter}: {i['src']} did not load in the browser" for i in report if i["width"] <= 0]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the signature is the base class's
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", type=pathlib.Path)
    parser.add_argument("--browser")
    parser.add_argument("--chapter", default="09-crossover.html")
    args = parser.parse_args()
    problems = check_links(args.book)
    if args.browser:
        problems += check_in_browser(args.book, args.browser, args.chapter)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problems in the book", file=sys.stderr)
        return 1
    print("the book's links and images resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
