"""report.html in a real headless browser (Debian's chromium; ``bash .ci/run`` installs it).

The page is loaded through the Chrome DevTools protocol (a minimal websocket client below, on the
standard library only) at a phone's width: no console message of level error, no uncaught
exception, no failed request; every table and every figure of report.md is in the page and every
image decoded; the page does not scroll sideways (wide tables scroll inside their wrapper); a
screenshot and a printed PDF are produced. Skipped, with the reason, when no chromium is found.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptune.report import Report

pytestmark = pytest.mark.browser

#: How long to wait for the browser (to start, to answer, to load a page): a safety net for a
#: browser that never does, long enough that a slow or loaded machine never reaches it.
WAIT_S = 300.0
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0", "--remote-allow-origins=*",
]


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless Chromium found (bash .ci/run installs Debian's chromium; "
                "apt-get install chromium)")


class DevTools:
    """The smallest websocket client the DevTools protocol needs (RFC 6455 text frames)."""

    def __init__(self, url: str):
        m = re.match(r"ws://([^/:]+):(\d+)(/.*)", url)
        assert m, url
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=WAIT_S)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.next_id = 0
        self.events: list[dict] = []

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data

    def _frame(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            message += self._read(n)
            if b0 & 0x80:  # FIN
                return message.decode()

    def send(self, method: str, **params) -> dict:
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + body)
        while True:
            msg = json.loads(self._frame())
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg["result"]
            self.events.append(msg)

    def wait(self, method: str, timeout: float = WAIT_S) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events:
                if e.get("method") == method:
                    return e
            self.events.append(json.loads(self._frame()))
        raise AssertionError(f"no {method} within {timeout} s")


@pytest.fixture
def chromium(tmp_path):
    """A headless Chromium with a fresh profile; yields a DevTools session on one page. Its
    temporary files (the profile lock's socket folder, under ``$TMPDIR``) go to a short-named
    folder of their own, deleted afterwards: nothing is left in the machine's /tmp. (Not the
    test's own folder: a Unix socket's path must stay under 108 bytes.)"""
    exe = _browser()
    scratch = tempfile.TemporaryDirectory(prefix="dptune-chromium-")
    proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "TMPDIR": scratch.name})
    try:
        port = None
        end = time.monotonic() + WAIT_S
        while port is None and time.monotonic() < end:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        if port is None:
            pytest.skip(f"chromium did not start its DevTools server (exit {proc.poll()})")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=WAIT_S) as r:
            pages = [t for t in json.load(r) if t["type"] == "page"]
        dt = DevTools(pages[0]["webSocketDebuggerUrl"])
        yield dt
        dt.sock.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        scratch.cleanup()


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    """The report of :func:`_report_dir`, written once for the tests that load it in the
    browser (they read it and write their screenshots elsewhere). Skipped first, as they are,
    where there is no browser."""
    _browser()
    return _report_dir(tmp_path_factory.mktemp("html_report"))


def _report_dir(tmp_path: Path) -> Path:
    """The report of a real analysis of a per-user table: 2 algorithms (one with two
    hyperparameters: Table 5, one at a time, the dominant hyperparameter), 6 metrics at 2
    cutoffs, 3 folds, with intervals and a verdict."""
    import dptune

    rng = np.random.default_rng(3)
    metrics = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
    rows = []
    for alg, grid in (("bpr-mf", [(f, lr) for f in (10, 40, 160) for lr in (0.1, 0.01)]),
                      ("userknn", [(k, 0) for k in (10, 20, 40, 80, 160)])):
        for cid, (a, b) in enumerate(grid):
            for fold in ("0", "1", "2"):
                user = rng.uniform(0.1, 0.5, 60)
                for m in metrics:
                    for c in (5, 10):
                        v = np.clip(user + 0.02 * cid + rng.normal(0, 0.1 + 0.02 * metrics.index(m),
                                                                   60), 0.0, 1.0)
                        rows += [{"algorithm": alg, "config_id": cid, "fold": fold,
                                  "user": f"u{u}", "metric": m, "cutoff": c, "value": x,
                                  "factors" if alg == "bpr-mf" else "k": a,
                                  "learning_rate": b} for u, x in enumerate(v)]
    df = pd.DataFrame(rows)
    res = dptune.analyze(df, hyperparameters=["factors", "k", "learning_rate"])
    rep = Report.from_result(res, settings={"alpha": 0.05})
    out = tmp_path / "report"
    rep.write(out)
    return out


def _load(dt, out: Path, width: int, height: int, mobile: bool) -> None:
    for domain in ("Page", "Runtime", "Log", "Network"):
        dt.send(f"{domain}.enable")
    dt.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
            deviceScaleFactor=1, mobile=mobile)
    dt.send("Page.navigate", url=(out / "report.html").resolve().as_uri())
    dt.wait("Page.loadEventFired")


def test_every_table_fits_a_laptop_screen(chromium, report_dir, tmp_path):
    """At 1280 px every table shows all its columns: none needs to scroll sideways (the
    verdict's and Table 3's included, intervals and all)."""
    out = report_dir
    dt = chromium
    _load(dt, out, 1280, 800, False)
    check = dt.send("Runtime.evaluate", returnByValue=True, expression="""JSON.stringify(
        Array.from(document.querySelectorAll('.table-wrap')).map(w => [
            w.querySelector('tr').textContent.trim().slice(0, 60),
            w.scrollWidth - w.clientWidth]))""")
    tables = json.loads(check["result"]["value"])
    assert len(tables) >= 8
    wide = [(head, extra) for head, extra in tables if extra > 1]
    assert not wide, wide
    shot = base64.b64decode(dt.send("Page.captureScreenshot", format="png")["data"])
    (tmp_path / "report-1280.png").write_bytes(shot)
    keep = os.environ.get("DPTUNE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "report-1280.png", Path(keep) / "report-1280.png")


def test_report_html_renders_in_headless_chromium(chromium, report_dir, tmp_path):
    out = report_dir
    md = (out / "report.md").read_text()
    n_tables = len(re.findall(r"^\| (?::?---:?)( \| :?---:?)* \|$", md, flags=re.M))
    figures = sorted(p.name for p in out.glob("figure1*.png"))
    assert n_tables >= 7 and len(figures) == 2
    assert md.index("## Verdict") < md.index("## Data sets")

    dt = chromium
    _load(dt, out, 412, 915, True)
    check = dt.send("Runtime.evaluate", returnByValue=True, expression="""JSON.stringify({
        tables: document.querySelectorAll('table').length,
        wrapped: document.querySelectorAll('.table-wrap > table').length,
        images: Array.from(document.images).map(i => [i.id || i.alt, i.complete,
                                                      i.naturalWidth]),
        h2: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        external: Array.from(document.querySelectorAll('[src],[href]')).map(
            e => e.getAttribute('src') || e.getAttribute('href')).filter(
            u => /^(https?:)?\\/\\//.test(u)).length})""")
    page = json.loads(check["result"]["value"])
    assert page["tables"] == n_tables and page["wrapped"] == n_tables
    assert len(page["images"]) == len(figures) + len(list(out.glob("figure_dp*.png")))
    assert all(ok and width > 0 for _, ok, width in page["images"]), page["images"]
    assert page["h2"][:2] == ["Summary", "Verdict"] and "Files" in page["h2"]
    assert page["overflow"] <= 0, "the page scrolls sideways on a phone"
    assert page["external"] == 0

    errors = [e for e in dt.events if
              (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
              or e.get("method") in ("Runtime.exceptionThrown", "Network.loadingFailed")
              or (e.get("method") == "Log.entryAdded"
                  and e["params"]["entry"]["level"] == "error")]
    assert not errors, errors

    shot = base64.b64decode(dt.send("Page.captureScreenshot", format="png")["data"])
    assert shot.startswith(b"\x89PNG")
    (tmp_path / "report-phone.png").write_bytes(shot)
    pdf = base64.b64decode(dt.send("Page.printToPDF", printBackground=False)["data"])
    assert pdf.startswith(b"%PDF")
    (tmp_path / "report.pdf").write_bytes(pdf)
    keep = os.environ.get("DPTUNE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "report-phone.png", Path(keep) / "report-phone.png")
        shutil.copy(tmp_path / "report.pdf", Path(keep) / "report.pdf")
