"""The HTML report of a watched run: well-formed, self-contained, escaped, and really drawn."""

from __future__ import annotations

import json
import math
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser

import numpy as np
import pytest

from torchdoctor.watch import html as report_html
from torchdoctor.watch.html import render_html

MALICIOUS = "<script>alert(1)</script>"


def nan_run(n: int = 60, nan_at: int = 40, module: str = "fc2") -> dict:
    """A run whose loss explodes and goes NaN at `nan_at`, caught at that step on `module`."""
    steps = list(range(n))
    loss = [
        2.3 * math.exp(-s / 12) + 0.1 if s < nan_at - 4 else 10.0 ** (s - nan_at + 5)
        for s in steps[:nan_at]
    ] + [math.nan] * (n - nan_at)
    lr = [1e-3 * min(1.0, (s + 1) / 10) for s in steps]
    # conv1 sits at the bottom of the colour scale and fc2 at its top for ten steps, so both
    # ends of the scale cover whole columns of cells.
    grads = {
        "conv1": [1e-3] * nan_at + [math.nan] * (n - nan_at),
        "layer1.0.conv1": [0.05 * (1 + s % 3) for s in range(nan_at)] + [math.nan] * (n - nan_at),
        module: [1.0] * (nan_at - 10) + [1e3] * 10 + [math.nan] * (n - nan_at),
    }
    return {
        "findings": [
            {
                "code": "TD211",
                "name": "nan-loss",
                "message": f"loss became NaN at step {nan_at}",
                "origin": "runtime",
                "confidence": None,
                "fix": None,
                "path": "train.py",
                "line": 37,
                "step": nan_at,
                "rank": 0,
                "module": module,
            },
            {
                "code": "TD301",
                "name": "dataloader-bottleneck",
                "message": "data loading took 60%",
                "origin": "runtime",
                "confidence": None,
                "fix": None,
                "path": "train.py",
                "line": 12,
                "rank": None,
                "module": None,
            },
        ],
        "crash": None,
        "exit_code": 0,
        "rank": 0,
        "script": "train.py",
        "argv": ["train.py", "--lr", "1e-3"],
        "torch_version": "2.13.0",
        "duration_s": 12.3,
        "metrics": {"step": steps, "loss": loss, "lr": lr, "grad_norm": grads},
    }


def crash_run() -> dict:
    return {
        "findings": [],
        "exit_code": 1,
        "script": "train.py",
        "crash": {
            "findings": [
                {
                    "code": "TD001",
                    "name": "device-mismatch",
                    "title": "Tensors on different devices",
                    "confidence": 0.92,
                    "cause": "the model is on cuda:0 but the batch is on cpu",
                    "fix": "images = images.to(device)",
                    "location": {"path": "train.py", "line": 41},
                }
            ],
            "error": {
                "type": "RuntimeError",
                "message": "Expected all tensors to be on the same device",
                "user_frame": {"path": "train.py", "line": 44, "source": "out = model(images)"},
            },
        },
    }


class _Structure(HTMLParser):
    """Checks that every element is closed in order and collects what the page refers to."""

    VOID = {"meta", "br", "link", "img", "input", "hr"}

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend((name, value or "") for name, value in attrs)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend((name, value or "") for name, value in attrs)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> _Structure:
    parser = _Structure()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.stack == [], (parser.errors, parser.stack)
    return parser


def test_nan_run_is_well_formed_and_shows_every_part():
    page = render_html(nan_run())
    parsed = parse(page)
    assert page.startswith("<!DOCTYPE html>")
    assert parsed.tags.count("svg") == 3  # loss, learning rate, gradient heatmap
    text = "".join(parsed.text)
    for words in (
        "Loss",
        "Learning rate",
        "Gradient norm per layer",
        "Findings",
        "TD211",
        "nan-loss",
        "loss became NaN at step 40",
        "data loading took 60%",
    ):
        assert words in text
    assert report_html.NONFINITE_COLOUR in page  # NaN markers and NaN heatmap cells
    assert "log scale" in text  # the loss spans seven decades
    # the finding's marker sits on the loss plot, labelled by its code, at step 40
    assert re.search(r"<title>TD211 nan-loss \(step 40\)", page)


def test_no_external_references():
    page = render_html(nan_run())
    parsed = parse(page)
    assert "http://" not in page and "https://" not in page
    assert not [name for name, _ in parsed.attributes if name in ("src", "href")]
    assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", page))
    assert "<script" not in page


def test_user_strings_are_escaped():
    run = nan_run(module=MALICIOUS)
    run["script"] = MALICIOUS
    run["argv"] = [MALICIOUS]
    run["findings"][0]["message"] = MALICIOUS
    run["findings"][0]["fix"] = MALICIOUS
    crash = crash_run()["crash"]
    crash["error"]["message"] = MALICIOUS
    crash["findings"][0]["cause"] = MALICIOUS
    run["crash"] = crash
    page = render_html(run)
    parse(page)
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize(
    "report",
    [
        {},
        {"findings": None, "crash": None, "metrics": None},
        {"metrics": {"step": [], "loss": [], "lr": [], "grad_norm": {}}},
        {"metrics": {"loss": [None, None]}},
        {"metrics": {"loss": [math.nan, math.inf, -math.inf]}},
        {"metrics": {"loss": [1.0], "lr": [0.1], "grad_norm": {"fc": [2.0]}}},
        {"metrics": {"step": [0, 1, 2], "loss": ["NaN", "Infinity", 3], "grad_norm": ["junk"]}},
        {"metrics": {"grad_norm": {"fc": [None, math.nan], "conv": [0.0, 0.0]}}},
        {"findings": [{"code": "TD211"}, "junk", {"message": "no code, no step"}]},
        {"findings": [{"code": "TD211", "step": 99}], "metrics": {"loss": [1.0, 0.5]}},
        crash_run(),
        {"crash": {"error": {}, "findings": []}, "exit_code": 1},
    ],
)
def test_missing_and_odd_values_still_render(report):
    page = render_html(report)
    parse(page)
    assert "torchdoctor" in page


def test_crash_is_explained():
    text = "".join(parse(render_html(crash_run())).text)
    assert "RuntimeError: Expected all tensors to be on the same device" in text
    assert "Tensors on different devices" in text and "92%" in text
    assert "images = images.to(device)" in text
    assert "crashed" in text


def test_fifty_thousand_steps_stay_small_and_keep_spikes_and_nans():
    n = 50_000
    loss = [1.0 + (s % 7) / 10 for s in range(n)]
    loss[12_345] = 1e4  # one spike among 50k steps must survive downsampling
    loss[45_000] = math.nan
    layers = {f"blocks.{i}.mlp": [0.1 + i / 100] * n for i in range(300)}
    layers["blocks.250.mlp"][44_000] = math.inf  # small norm, but non-finite: must stay
    run = {
        "findings": [{"code": "TD211", "name": "nan-loss", "message": "NaN", "step": 45_000}],
        "metrics": {
            "step": list(range(n)),
            "loss": loss,
            "lr": [0.1 * 0.5 ** (s // 10_000) for s in range(n)],
            "grad_norm": layers,
        },
    }
    page = render_html(run)
    parse(page)
    assert len(page.encode()) < 400_000
    for d in re.findall(r' d="([^"]*)"', page):
        assert d.count("L") + d.count("M") <= report_html.MAX_LINE_POINTS * 2
    assert ">1e4<" in page  # the y axis reaches the spike
    assert report_html.NONFINITE_COLOUR in page
    assert "40 of 300 layers shown" in page
    assert "blocks.250.mlp" in page and "blocks.299.mlp" in page and "blocks.0.mlp" not in page
    assert "Each column is the maximum over 250 steps." in page


def test_sampled_gradient_norms_are_drawn_at_their_own_steps():
    run = {
        "metrics": {
            "step": list(range(100)),
            "loss": [1.0] * 100,
            "grad_norm_step": list(range(0, 100, 10)),
            "grad_norm": {"fc": [0.5] * 10, "late": [None] * 5 + [2.0] * 5},
        }
    }
    page = render_html(run)
    parse(page)
    heatmap = page[page.index("Gradient norm per layer") :]
    ticks = [int(t) for t in re.findall(r'text-anchor="middle">(\d+)<', heatmap)]
    assert max(ticks) == 80  # its step axis runs to the last sampled step (90), not to 9


def test_chinese_labels():
    page = render_html(nan_run(), lang="zh")
    parse(page)
    assert '<html lang="zh-CN">' in page
    for words in ("训练运行报告", "损失", "学习率", "各层梯度范数", "发现的问题", "对数刻度"):
        assert words in page
    assert "Learning rate" not in page


def test_command_line_writes_the_page(tmp_path):
    source = tmp_path / "report.json"
    source.write_text(json.dumps(nan_run()), encoding="utf-8")
    out = tmp_path / "report.html"
    assert report_html.main([str(source), "-o", str(out), "--lang", "en"]) == 0
    assert out.read_text(encoding="utf-8") == render_html(nan_run())


# -- the page as a browser draws it -----------------------------------------------------------


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def decode_png(data: bytes) -> np.ndarray:
    """Pixels of an 8-bit, non-interlaced PNG (what Chromium writes) as a height x width x
    channels array, undoing the per-row filters of the PNG specification."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    assert depth == 8 and interlace == 0 and colour in (0, 2, 4, 6), (depth, colour, interlace)
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(height, stride + 1)
    pixels = np.zeros((height, stride), np.uint8)
    prior = np.zeros(stride, np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            row = line
        elif kind == 1:  # Sub: a running sum per channel, modulo 256
            row = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint8).reshape(stride)
        elif kind == 2:  # Up
            row = line + prior
        else:  # Average and Paeth depend on the byte just decoded: one at a time
            row = _average_or_paeth(kind, line.tolist(), prior.tolist(), bpp)
        pixels[y] = row
        prior = pixels[y]
    return pixels.reshape(height, width, bpp)


def _average_or_paeth(kind: int, line: list[int], prior: list[int], bpp: int) -> np.ndarray:
    row = bytearray(len(line))
    for i, value in enumerate(line):
        a = row[i - bpp] if i >= bpp else 0
        b = prior[i]
        if kind == 3:
            row[i] = (value + ((a + b) >> 1)) & 0xFF
            continue
        c = prior[i - bpp] if i >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        row[i] = (value + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return np.frombuffer(bytes(row), np.uint8)


def screenshot(chromium: str, page: str, tmp_path, name: str) -> np.ndarray:
    source = tmp_path / f"{name}.html"
    source.write_text(page, encoding="utf-8")
    png = tmp_path / f"{name}.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={png}",
            "--window-size=1200,2400",
            source.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return decode_png(png.read_bytes())[:, :, :3].astype(np.int16)


def pixels_of(image: np.ndarray, colour: str, tolerance: int = 0) -> int:
    """How many pixels are within `tolerance` of `colour` in every channel."""
    distance = np.abs(image - np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], np.int16))
    return int(
        (
            (distance[..., 0] <= tolerance)
            & (distance[..., 1] <= tolerance)
            & (distance[..., 2] <= tolerance)
        ).sum()
    )


@pytest.mark.skipif(
    _chromium() is None,
    reason="SCREENSHOT TEST SKIPPED: no chromium binary found (apt-get install chromium)",
)
def test_screenshot_in_headless_chromium_shows_the_plots(tmp_path):
    chromium = _chromium()
    page = render_html(nan_run())
    # The same page with its plots cut out: everything else (legends, tables) stays, so the
    # colours counted below can only come from the SVG being drawn.
    without_plots = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
    assert without_plots.count("<svg") == 0 and len(without_plots) < len(page)
    drawn = screenshot(chromium, page, tmp_path, "drawn")
    bare = screenshot(chromium, without_plots, tmp_path, "bare")

    packed = drawn[..., 0].astype(np.int32) << 16 | drawn[..., 1] << 8 | drawn[..., 2]
    assert len(np.unique(packed)) > 50  # not a blank page
    plot_colours = {
        # the loss line is anti-aliased: near its colour, not exactly it
        "loss line": (report_html.LOSS_COLOUR, 40, 400),
        "lr line": (report_html.LR_COLOUR, 40, 400),
        "NaN markers and cells": (report_html.NONFINITE_COLOUR, 0, 2000),
        "lowest norm cells": (report_html._colour_at(0.0), 0, 1000),
        "highest norm cells": (report_html._colour_at(1.0), 0, 300),
        "finding marker": (report_html.FINDING_COLOUR, 30, 100),
    }
    for what, (colour, tolerance, least) in plot_colours.items():
        added = pixels_of(drawn, colour, tolerance) - pixels_of(bare, colour, tolerance)
        assert added >= least, f"{what}: {added} pixels of {colour}, expected {least}+"
