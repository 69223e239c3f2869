"""Open the built documentation site in headless Chromium: screenshots and console errors.

    mkdocs build --strict --site-dir /tmp/site
    python docs/check_site.py --site /tmp/site --out /tmp/shots

Serves the built site on 127.0.0.1 (Python's `http.server`, in a thread) and runs Debian's
`chromium` (`--headless`, driven over the DevTools protocol on a pipe) on five pages, each
screenshot into `--out` once its DOM holds what it should: the home page, the PPO family page, an
API reference page (`rlsuite.agents.ppo`), a search (`?q=resume`, which Material's client-side
search opens on load: it must list results) and a benchmark page (FixPO's, its table generated
from `benchmarks/results/fixpo.json`). A console error, an uncaught exception or a file that
fails to load (a request that needs the network among them) fails the check, as does a page the
server does not answer with 200 or that never shows what it should.

Exits 0 when every page loaded without a console error, 1 otherwise, 2 when Chromium is not
installed. Nothing is downloaded: the site must work offline.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import functools
import http.server
import json
import os
import pathlib
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# name -> (path under the site, a string the page's DOM must hold once its scripts have run)
PAGES = {
    "home": ("", "A JAX-accelerated research suite"),
    "ppo": ("families/ppo/", "PPOConfig"),
    "reference": ("reference/rlsuite/agents/ppo/", "rlsuite.agents.ppo"),
    "search": ("?q=resume", "md-search-result__item"),
    # A benchmark page's table, generated from its JSON (benchmarks/tables.py) with its provenance.
    "benchmark": ("benchmarks/fixpo/", "the same keys, tuned PPO configuration; trust region"),
}


class _Handler(http.server.SimpleHTTPRequestHandler):
    statuses: dict[str, int] = {}

    def log_request(self, code="-", size="-"):
        self.statuses[self.path] = int(code) if str(code).isdigit() else 0

    def log_message(self, format, *args):  # quiet: the statuses above say what was served
        pass


def serve(site: pathlib.Path) -> http.server.ThreadingHTTPServer:
    """The built site on 127.0.0.1 at a free port, answered from a daemon thread."""
    handler = functools.partial(_Handler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
    JSON messages ending in a NUL byte, written to its fd 3 and read from its fd 4)."""

    def __init__(self, browser: str):
        self.profile = tempfile.TemporaryDirectory(prefix="check-site-", ignore_cleanup_errors=True)
        to_browser, self._in = os.pipe()
        self._out, from_browser = os.pipe()
        args = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run"]
        args += ["--hide-scrollbars", "--remote-debugging-pipe", "--window-size=1280,1400"]
        args += [f"--user-data-dir={self.profile.name}", "about:blank"]

        def fds():  # the child's fd 3 reads what we write, its fd 4 writes what we read
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen(
            [browser, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,
            close_fds=False,  # fds() sets 3 and 4 up for it
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        attached = self.call("Target.attachToTarget", targetId=target, flatten=True)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._out], [], [], 60)
            chunk = os.read(self._out, 1 << 20) if ready else b""
            if not chunk:
                raise RuntimeError("chromium stopped answering")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, **params) -> dict:
        """Send one command and wait for its answer; events that arrive meanwhile are kept."""
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._in, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def visit(self, url: str, expected: str, png: pathlib.Path, wait: float = 20) -> list[str]:
        """Load `url`, wait until its DOM holds `expected` (its scripts may take a while),
        screenshot it into `png`; the console errors and load failures seen."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        deadline, shown = time.monotonic() + wait, False
        while time.monotonic() < deadline and not shown:
            time.sleep(0.25)
            html = self.call(
                "Runtime.evaluate",
                session=True,
                expression="document.readyState + document.documentElement.outerHTML",
                returnByValue=True,
            )["result"].get("value", "")
            shown = html.startswith("complete") and expected in html
        time.sleep(0.5)  # fonts and the last paint
        shot = self.call("Page.captureScreenshot", session=True, format="png")
        png.write_bytes(base64.b64decode(shot["data"]))
        problems = [] if shown else [f"the page does not show {expected!r} after {wait} s"]
        return problems + errors(self.events)

    def close(self):
        """Ask Chromium to quit (its helper processes with it), then clean its profile up."""
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError):
            pass  # it has gone already
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._in)
        os.close(self._out)
        self.profile.cleanup()


def errors(events: list[dict]) -> list[str]:
    """The console errors, uncaught exceptions and failed loads among DevTools events."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            found.append("console: " + " ".join(str(a.get("value", a)) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description", details.get("text"))
            found.append(f"uncaught: {text}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            found.append(f"console: {entry['text']} {entry.get('url', '')}".rstrip())
    return found


def check(site: pathlib.Path, out: pathlib.Path, browser: str) -> list[str]:
    """Screenshot every page of `PAGES` into `out`; the problems found (none: the site is fine)."""
    out.mkdir(parents=True, exist_ok=True)
    server = serve(site)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    problems = []
    chrome = Chromium(browser)
    try:
        for name, (path, expected) in PAGES.items():
            png = out / f"{name}.png"
            png.unlink(missing_ok=True)
            problems += [f"{name}: {p}" for p in chrome.visit(base + path, expected, png)]
            status = _Handler.statuses.get("/" + path.split("?", 1)[0])
            if status != 200:
                problems.append(f"{name}: /{path} answered {status}")
        problems += [
            f"{path}: answered {code}" for path, code in _Handler.statuses.items() if code >= 400
        ]
    finally:
        chrome.close()
        server.shutdown()
        server.server_close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--site", type=pathlib.Path, default=pathlib.Path("site"))
    parser.add_argument("--out", type=pathlib.Path, required=True, help="folder for the PNGs")
    parser.add_argument("--browser", default=None, help="Chromium's executable (default: PATH)")
    args = parser.parse_args(argv)
    browser = args.browser or shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    if not (args.site / "index.html").is_file():
        print(f"{args.site} holds no built site: run mkdocs build first", file=sys.stderr)
        return 1
    problems = check(args.site, args.out, browser)
    for problem in problems:
        print(problem, file=sys.stderr)
    shots = ", ".join(f"{name}.png" for name in PAGES)
    print(f"{len(PAGES)} pages, {len(problems)} problems; screenshots in {args.out}: {shots}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
