"""Render an HTML file in headless Chromium (Debian package `chromium`) for report tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def chromium_binary() -> str:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "headless Chromium is required to check the HTML report but was not found; install it with "
        "`apt-get update && apt-get install -y chromium` (`make test` does this)"
    )


def run_chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def image_widths(html_file: Path, tmp: Path) -> list[int]:
    """naturalWidth of every <img> once the page loaded (via a probe copy of the page)."""
    probe = tmp / "probe.html"
    script = (
        "<script>window.addEventListener('load', () => {"
        "document.body.setAttribute('data-widths', Array.from(document.images).map(i => i.naturalWidth).join(','));"
        "});</script>"
    )
    probe.write_text(
        html_file.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8"
    )
    done = run_chromium(["--dump-dom", probe.as_uri()], tmp / "profile-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    marker = 'data-widths="'
    start = done.stdout.index(marker) + len(marker)
    raw = done.stdout[start : done.stdout.index('"', start)]
    return [int(x) for x in raw.split(",") if x]


def screenshot(html_file: Path, png: Path, tmp: Path) -> None:
    done = run_chromium(
        ["--window-size=1200,2000", f"--screenshot={png}", html_file.as_uri()], tmp / "profile-shot"
    )
    assert done.returncode == 0 and png.exists(), done.stderr[-2000:]
