"""Render HTML and SVG in headless Chromium and check the screenshot shows something.

Debian's ``chromium`` package provides the browser; without it the browser tests skip and
say so. The PNG is decoded here (zlib and the five PNG row filters) so the check needs no
imaging library.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

BROWSER_MISSING = "headless Chromium is not installed (apt-get install -y chromium) - the browser rendering checks need it"


def chromium() -> str:
    """The browser's path; without one the test skips, or fails when DMLPY_REQUIRE_BROWSER=1 (CI sets it)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("DMLPY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"DMLPY_REQUIRE_BROWSER=1 but {BROWSER_MISSING}")
        pytest.skip(BROWSER_MISSING)
    return found


def page(body: str) -> str:
    return f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}</body></html>'


def screenshot(document: Path, png: Path, size: tuple[int, int] = (800, 600)) -> Path:
    """Chromium's screenshot of ``document`` (an .html or .svg file) at ``size``."""
    # a profile of its own, so that test runs in parallel never hand their page to another Chromium
    with tempfile.TemporaryDirectory() as profile:
        command = [
            chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--screenshot={png}", f"--window-size={size[0]},{size[1]}", document.resolve().as_uri(),
        ]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, timeout=120)
    assert png.exists(), f"chromium wrote no screenshot of {document}"
    return png


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def decode_png(path: Path) -> np.ndarray:
    """An 8-bit RGB or RGBA, non-interlaced PNG as a (height, width, channels) array."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        chunk = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        position += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG format {header}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int64)
        if kind == 0:
            out = line
        elif kind == 1:  # Sub: running sums along each channel
            out = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) % 256
        elif kind == 2:  # Up
            out = (line + previous) % 256
        else:  # Average and Paeth depend on the byte just decoded: byte by byte
            out_list = [0] * stride
            up = previous.tolist()
            values = line.tolist()
            for i in range(stride):
                left = out_list[i - bpp] if i >= bpp else 0
                if kind == 3:
                    out_list[i] = (values[i] + (left + up[i]) // 2) % 256
                else:
                    upper_left = up[i - bpp] if i >= bpp else 0
                    out_list[i] = (values[i] + _paeth(left, up[i], upper_left)) % 256
            out = np.array(out_list, dtype=np.int64)
        rows[y] = out
        previous = out
    return rows.reshape(height, width, bpp)


def assert_not_blank(png: Path, minimum_share: float = 0.005) -> None:
    assert_pixels_not_blank(decode_png(png), str(png), minimum_share)

BAND = (800, 450)  # each document's share of one tall screenshot


def screenshot_bands(documents: dict[str, str], directory: Path) -> dict[str, np.ndarray]:
    """One Chromium run for many documents: each in its own 800x450 frame of one page, as pixels.

    Each body is a complete HTML document or an SVG file's text, loaded through an iframe from
    its own file, as a browser opens a saved file (a launch costs seconds; a frame does not).
    """
    width, height = BAND
    frames = []
    for index, (name, text) in enumerate(documents.items()):
        suffix = ".svg" if text.lstrip().startswith("<svg") else ".html"
        path = directory / f"frame{index}{suffix}"
        path.write_text(text, encoding="utf-8")
        frames.append(
            f'<iframe title="{name}" src="{path.name}" style="position:absolute;left:0;top:{index * height}px;'
            f'width:{width}px;height:{height}px;border:0;margin:0"></iframe>'
        )
    sheet = directory / "sheet.html"
    sheet.write_text(page("".join(frames)).replace("<body>", '<body style="margin:0;background:#ffffff">'), encoding="utf-8")
    pixels = decode_png(screenshot(sheet, directory / "sheet.png", (width, height * len(documents))))
    return {name: pixels[i * height : (i + 1) * height] for i, name in enumerate(documents)}


def assert_pixels_not_blank(pixels: np.ndarray, what: str, minimum_share: float = 0.005) -> None:
    """More than one colour, and at least ``minimum_share`` of the pixels differ from the most common (the background)."""
    rgb = pixels[..., :3].reshape(-1, 3).astype(np.uint32)
    packed = rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]
    colours, counts = np.unique(packed, return_counts=True)
    assert len(colours) > 1, f"{what} is one flat colour #{int(colours[0]):06x}: nothing rendered"
    share = 1 - counts.max() / counts.sum()
    assert share >= minimum_share, f"{what}: only {share:.4%} of the pixels differ from the background"
