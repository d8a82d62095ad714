"""Headless Chromium (Debian ``chromium``) for PNG export and the dashboard browser test.
Optional: without it, ``--png`` explains itself and the browser test is skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    env = os.environ.get("INFX_CHROMIUM")
    if env:
        return env if Path(env).is_file() else shutil.which(env)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _base_argv(binary: str, profile: str, window: tuple[int, int]) -> list[str]:
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}", "--virtual-time-budget=15000"]


def headless(url: str, *, screenshot: str | Path | None = None, dump_dom: bool = False,
             window: tuple[int, int] = (1280, 900), timeout: float = 120.0) -> str:
    """Load ``url`` in headless Chromium; write a screenshot and/or return the DOM after load."""
    binary = find_chromium()
    if binary is None:
        raise InfxError(Diagnostic("chromium not found (install Debian 'chromium', e.g. .ci/chromium.sh, "
                                   "or set INFX_CHROMIUM)"))
    with tempfile.TemporaryDirectory(prefix="infx-chromium-") as profile:
        argv = _base_argv(binary, profile, window)
        if screenshot is not None:
            argv.append(f"--screenshot={Path(screenshot).resolve()}")
        if dump_dom:
            argv.append("--dump-dom")
        argv.append(url)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise InfxError(Diagnostic(f"chromium timed out after {timeout:.0f}s loading {url}")) from None
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        raise InfxError(Diagnostic(f"chromium failed ({proc.returncode}) loading {url}: {' | '.join(tail)}"))
    if screenshot is not None and not Path(screenshot).is_file():
        raise InfxError(Diagnostic(f"chromium wrote no screenshot for {url}"))
    return proc.stdout


def export_png(html_text: str, out: str | Path, *, window: tuple[int, int] = (1200, 640)) -> Path:
    """Render a standalone HTML page (the main chart) to a PNG."""
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="infx-png-") as tmp:
        page = Path(tmp) / "chart.html"
        page.write_text(html_text, encoding="utf-8")
        shot = Path(tmp) / "chart.png"
        headless(page.as_uri(), screenshot=shot, window=window)
        from infx import atomic

        atomic.write_bytes(out, shot.read_bytes())
    return out
