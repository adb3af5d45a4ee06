"""A watched run's JSON report as one self-contained HTML page: plots drawn as inline SVG.

Nothing is loaded from the network and no script runs: the page is opened from disk, attached to
a CI artifact or mailed around, and must look the same everywhere. Every string that came from
the user's run (module names, messages, paths, argv) is escaped.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from html import escape
from pathlib import Path

from torchdoctor._lang import LANGS
from torchdoctor.report import strings

# Colours that mean one thing everywhere on the page (the screenshot test looks for them).
LOSS_COLOUR = "#1d4ed8"
LR_COLOUR = "#059669"
NONFINITE_COLOUR = "#e11d48"
FINDING_COLOUR = "#d97706"
MISSING_COLOUR = "#e2e8f0"
# viridis, sampled at 9 points; cells interpolate between them.
_VIRIDIS = [
    "#440154",
    "#472d7b",
    "#3b528b",
    "#2c728e",
    "#21918c",
    "#28ae80",
    "#5ec962",
    "#addc30",
    "#fde725",
]
_LEVELS = 48  # colour levels of the heatmap: one SVG path per level keeps the page small

MAX_LINE_POINTS = 2000  # per plotted line, min and max of each bin are kept
MAX_HEATMAP_COLUMNS = 200
MAX_HEATMAP_ROWS = 40
MAX_TABLE_ROWS = 500

_CSS = """
body{margin:0;background:#f8fafc;color:#0f172a;font:14px/1.5 system-ui,-apple-system,"Segoe UI",
"Noto Sans","Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif}
main{max-width:1080px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:20px;margin:0 0 8px}
h2{font-size:16px;margin:0 0 8px}
section{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:14px 16px;margin:14px 0}
.meta{display:flex;flex-wrap:wrap;gap:4px 18px;color:#475569;font-size:13px}
.meta b{color:#0f172a;font-weight:600}
.badge{display:inline-block;padding:1px 10px;border-radius:10px;font-weight:600;font-size:13px;
color:#fff;margin-left:8px;vertical-align:2px}
.ok{background:#15803d}.warn{background:#b45309}.bad{background:#991b1b}
.note{color:#64748b;font-size:12.5px;margin:4px 0 0}
svg{display:block;width:100%;height:auto}
svg text{font-size:11px;fill:#475569}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px;color:#475569;margin-top:4px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;
margin-right:5px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;vertical-align:top;padding:5px 8px;border-bottom:1px solid #e2e8f0}
th{color:#475569;font-weight:600;background:#f8fafc}
td.code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:nowrap}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-word;background:#f1f5f9;padding:8px 10px;
border-radius:6px;margin:6px 0}
.cause{border-left:3px solid #cbd5e1;padding:2px 0 2px 12px;margin:10px 0}
.bar{display:inline-block;width:60px;height:6px;background:#e2e8f0;border-radius:3px;
vertical-align:middle;margin:0 6px}
.bar i{display:block;height:6px;background:#475569;border-radius:3px}
"""


def render_html(report: dict, lang: str = "en") -> str:
    """The whole page for one run's report (the dict `run --report-json` writes)."""
    labels = strings.labels("watch_html", lang)
    report = report if isinstance(report, dict) else {}
    findings = [f for f in _list(report.get("findings")) if isinstance(f, dict)]
    crash = report.get("crash") if isinstance(report.get("crash"), dict) else None
    metrics = report.get("metrics") if isinstance(report.get("metrics"), dict) else {}
    steps, loss, lr, grad_steps, grads = _metrics(metrics)

    parts = [_header(report, findings, crash, len(steps), labels)]
    if crash:
        parts.append(_crash_section(crash, labels))
    if not steps and not grads:
        parts.append(f'<section><p class="note">{escape(labels["no_metrics"])}</p></section>')
    else:
        parts.append(
            _line_section("loss", labels["loss"], steps, loss, LOSS_COLOUR, findings, labels)
        )
        parts.append(_line_section("lr", labels["lr"], steps, lr, LR_COLOUR, [], labels))
        if grads:
            parts.append(_heatmap_section(grad_steps, grads, labels))
    parts.append(_findings_section(findings, labels))
    return (
        f'<!DOCTYPE html>\n<html lang="{labels["lang"]}">\n<head>\n<meta charset="utf-8">\n'
        # The page must never reach out: no fonts, images or scripts from anywhere.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(labels['title'])}</title>\n<style>{_CSS}</style>\n</head>\n"
        f"<body>\n<main>\n{''.join(parts)}</main>\n</body>\n</html>\n"
    )


# -- reading the report ---------------------------------------------------------------------


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _number(value) -> float | None:
    """A float (NaN and infinities included), or None for a value that was not recorded."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):  # "NaN", "Infinity": JSON writers that avoid bare NaN
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _metrics(metrics: dict) -> tuple[list[float], list, list, list[float], dict[str, list]]:
    """Steps with loss and lr aligned to them, and the gradient norms' own steps with the
    per-layer norms (sampled less often when `grad_norm_step` says so; else on `step`)."""
    loss = [_number(v) for v in _list(metrics.get("loss"))]
    lr = [_number(v) for v in _list(metrics.get("lr"))]
    raw_grads = metrics.get("grad_norm") if isinstance(metrics.get("grad_norm"), dict) else {}
    # Left raw: hundreds of layers x tens of thousands of steps are only read once, by _bin_layer.
    grads = {
        str(name): values
        for name, values in raw_grads.items()
        if isinstance(values, list) and values
    }
    grads_length = max((len(v) for v in grads.values()), default=0)
    raw_grad_steps = _list(metrics.get("grad_norm_step"))
    own_steps = bool(raw_grad_steps)
    length = max(
        len(loss), len(lr), len(_list(metrics.get("step"))), 0 if own_steps else grads_length
    )
    steps = _axis(_list(metrics.get("step")), length)
    grad_steps = (
        _axis(raw_grad_steps, max(grads_length, len(raw_grad_steps))) if own_steps else steps
    )

    def pad(series: list) -> list:
        return series + [None] * (length - len(series))

    return steps, pad(loss), pad(lr), grad_steps, grads


def _axis(raw: list, length: int) -> list[float]:
    """`length` step numbers: the recorded ones, counting on where they are missing."""
    steps: list[float] = []
    for i in range(length):
        step = _number(raw[i]) if i < len(raw) else None
        if step is None or not math.isfinite(step):
            step = steps[-1] + 1 if steps else float(i)
        steps.append(step)
    return steps


def _finding_step(finding: dict) -> float | None:
    step = _number(finding.get("step"))
    return step if step is not None and math.isfinite(step) else None


# -- numbers and scales -----------------------------------------------------------------------


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        mantissa, exponent = f"{value:.1e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    return f"{value:.4g}"


def _fmt_step(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + step * 1e-9:
        ticks.append(k * step)
        k += 1
    return ticks


def _log_ticks(lo: float, hi: float) -> list[float]:
    first, last = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
    decades = list(range(first, last + 1))
    stride = max(1, math.ceil(len(decades) / 7))
    ticks = [10.0**d for d in decades[::stride]]
    if len(ticks) < 3:  # a narrow range: 2 and 5 between the powers of ten
        ticks = sorted(
            {
                m * 10.0**d
                for d in range(first - 1, last + 1)
                for m in (1, 2, 5)
                if lo <= m * 10.0**d <= hi
            }
        )
    return ticks


class _Axes:
    """Maps data to SVG coordinates inside a plot frame, linear or log in y."""

    def __init__(self, x_range, y_range, log_y, frame):
        self.x0, self.x1 = x_range
        self.log_y = log_y
        lo, hi = y_range
        self.y0, self.y1 = (math.log10(lo), math.log10(hi)) if log_y else (lo, hi)
        self.left, self.top, self.width, self.height = frame

    def px(self, x: float) -> float:
        span = self.x1 - self.x0
        return self.left + (self.width * (x - self.x0) / span if span else self.width / 2)

    def py(self, y: float) -> float:
        value = math.log10(y) if self.log_y else y
        t = (value - self.y0) / (self.y1 - self.y0)
        return self.top + self.height * (1 - min(max(t, -0.02), 1.02))


def _y_range(values: list[float], log_by_bulk: bool) -> tuple[tuple[float, float], bool]:
    """The padded y range of the finite values, and whether to draw it on a log scale: when
    they span more than about two decades, or for `log_by_bulk` when most of them do (a cosine
    schedule ending at 1e-10 reads better on a linear axis, a step decay 0.1 -> 0.001 on a log
    one)."""
    lo, hi = min(values), max(values)
    spread_lo, spread_hi = lo, hi
    if log_by_bulk and lo > 0:
        ordered = sorted(values)
        spread_lo, spread_hi = ordered[len(ordered) // 10], ordered[-1 - len(ordered) // 10]
    if lo > 0 and spread_hi / spread_lo > 10**2.3:
        pad = (math.log10(hi) - math.log10(lo)) * 0.05
        return (10 ** (math.log10(lo) - pad), 10 ** (math.log10(hi) + pad)), True
    if hi == lo:
        delta = abs(hi) * 0.1 or 1.0
        return (lo - delta, hi + delta), False
    pad = (hi - lo) * 0.06
    low = max(lo - pad, 0.0) if lo >= 0 else lo - pad  # a loss near 0 gets no negative axis
    return (low, hi + pad), False


def _downsample(steps: list[float], values: list) -> tuple[list, list, list]:
    """The line's envelope (None where it breaks), its mean per bin (empty when every point
    fits), and the non-finite points, each at most MAX_LINE_POINTS: every bin keeps its
    minimum, maximum and first non-finite value, so spikes and NaNs survive. Missing values
    (None) are skipped: the line runs across them."""
    n = len(values)
    bins = max(1, MAX_LINE_POINTS // 2)
    per_bin = 1 if n <= MAX_LINE_POINTS else math.ceil(n / bins)
    points: list = []
    means: list = []
    bad: list[tuple[float, float]] = []
    for start in range(0, n, per_bin):
        chosen: dict[int, float | None] = {}
        low = high = None
        total, count = 0.0, 0
        for i in range(start, min(start + per_bin, n)):
            value = values[i]
            if value is None:
                continue
            if not math.isfinite(value):
                if not any(c is None for c in chosen.values()):
                    chosen[i] = None
                    bad.append((steps[i], value))
                continue
            total, count = total + value, count + 1
            if low is None or value < values[low]:
                low = i
            if high is None or value > values[high]:
                high = i
        for i in (low, high):
            if i is not None:
                chosen[i] = values[i]
        points.extend((steps[i], chosen[i]) for i in sorted(chosen))
        if per_bin > 1:
            middle = steps[min(start + per_bin // 2, n - 1)]
            if count:
                means.append((middle, total / count))
            if None in chosen.values():
                means.append((middle, None))
    return points, means, bad


# -- sections ---------------------------------------------------------------------------------


def _header(report: dict, findings: list, crash: dict | None, n_steps: int, labels: dict) -> str:
    exit_code = report.get("exit_code")
    crashed = crash is not None or (isinstance(exit_code, int) and exit_code != 0)
    if crashed:
        badge = f'<span class="badge bad">{escape(labels["crashed"])}</span>'
    elif findings:
        text = (
            labels["finding_1"]
            if len(findings) == 1
            else labels["findings_n"].format(n=len(findings))
        )
        badge = f'<span class="badge warn">{escape(text)}</span>'
    else:
        badge = f'<span class="badge ok">{escape(labels["clean"])}</span>'
    meta = []
    script = report.get("script")
    if script:
        meta.append((labels["script"], f"<code>{escape(str(script))}</code>"))
    argv = [str(a) for a in _list(report.get("argv"))]
    if argv:
        meta.append((labels["args"], f"<code>{escape(' '.join(argv))}</code>"))
    if report.get("torch_version"):
        meta.append((labels["torch"], escape(str(report["torch_version"]))))
    duration = _number(report.get("duration_s"))
    if duration is not None and math.isfinite(duration):
        meta.append((labels["duration"], escape(_duration(duration))))
    if n_steps:
        meta.append((labels["steps"], str(n_steps)))
    if exit_code is not None:
        meta.append((labels["exit"], escape(str(exit_code))))
    if report.get("rank") is not None:
        meta.append((labels["rank"], escape(str(report["rank"]))))
    items = "".join(f"<span>{escape(k)} <b>{v}</b></span>" for k, v in meta)
    return f'<h1>{escape(labels["title"])}{badge}</h1>\n<div class="meta">{items}</div>\n'


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


_W = 960
_HEIGHTS = {"loss": 260, "lr": 160}  # the learning rate says less: a flatter plot
_TOPS = {"loss": 40, "lr": 12}  # room above the loss plot for the findings' codes


def _frame(key: str) -> tuple[int, int, int, int]:
    """Left, top, width and height of the plot area inside the SVG."""
    return 64, _TOPS[key], _W - 64 - 16, _HEIGHTS[key] - _TOPS[key] - 30


def _line_section(
    key: str,
    title: str,
    steps: list[float],
    values: list,
    colour: str,
    findings: list,
    labels: dict,
) -> str:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    has_bad = any(v is not None and not math.isfinite(v) for v in values)
    if not finite and not has_bad:
        return (
            f"<section><h2>{escape(title)}</h2>"
            f'<p class="note">{escape(labels["no_series"])}</p></section>\n'
        )
    y_range, log_y = _y_range(finite, key == "lr") if finite else ((0.0, 1.0), False)
    frame = _frame(key)
    axes = _Axes((steps[0], steps[-1]), y_range, log_y, frame)
    points, means, bad = _downsample(steps, values)
    left, top, width, height = frame
    svg = [
        f'<svg viewBox="0 0 {_W} {_HEIGHTS[key]}" role="img" aria-label="{escape(title)}">',
        f'<defs><clipPath id="clip-{key}"><rect x="{left}" y="{top - 4}" width="{width}" '
        f'height="{height + 8}"/></clipPath></defs>',
        _frame_and_axes(axes, log_y, labels, frame),
    ]
    svg.append(_finding_marks(axes, findings, labels))
    clip = f'fill="none" stroke="{colour}" stroke-linejoin="round" clip-path="url(#clip-{key})"'
    if means:  # many steps per pixel: the spread of each bin, faint, under its mean
        svg.append(
            f'<path d="{_path(axes, points)}" {clip} stroke-width="1" stroke-opacity="0.3"/>'
        )
        points = means
    svg.append(f'<path d="{_path(axes, points)}" {clip} stroke-width="1.8"/>')
    svg.append(_nonfinite_marks(axes, bad))
    svg.append("</svg>")
    legend = [f'<span><i class="sw" style="background:{colour}"></i>{escape(title)}</span>']
    if bad:
        legend.append(
            f'<span><i class="sw" style="background:{NONFINITE_COLOUR}"></i>'
            f"{escape(labels['nonfinite'])}</span>"
        )
    if findings and any(_finding_step(f) is not None for f in findings):
        legend.append(
            f'<span><i class="sw" style="background:{FINDING_COLOUR}"></i>'
            f"{escape(labels['finding_marker'])}</span>"
        )
    if log_y:
        legend.append(f"<span>{escape(labels['log'])}</span>")
    return (
        f"<section><h2>{escape(title)}</h2>{''.join(svg)}"
        f'<div class="legend">{"".join(legend)}</div></section>\n'
    )


def _frame_and_axes(axes: _Axes, log_y: bool, labels: dict, frame: tuple) -> str:
    left, top, width, height = frame
    out = [
        f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="#fff" '
        f'stroke="#cbd5e1"/>'
    ]
    lo, hi = (10**axes.y0, 10**axes.y1) if log_y else (axes.y0, axes.y1)
    count = max(3, height // 40)
    for tick in _log_ticks(lo, hi) if log_y else _nice_ticks(lo, hi, count):
        y = axes.py(tick)
        out.append(
            f'<line x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#eef2f7"/><text x="{left - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{_fmt(tick)}</text>'
        )
    for tick in _nice_ticks(axes.x0, axes.x1, 8):
        x = axes.px(tick)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + height}" y2="{top + height + 4}" '
            f'stroke="#94a3b8"/><text x="{x:.1f}" y="{top + height + 17}" '
            f'text-anchor="middle">{_fmt_step(round(tick, 6))}</text>'
        )
    out.append(
        f'<text x="{left + width}" y="{top + height + 26}" text-anchor="end">'
        f"{escape(labels['step'])}</text>"
    )
    return "".join(out)


def _path(axes: _Axes, points: list) -> str:
    out = []
    move = True
    for x, y in points:
        if y is None:
            move = True
            continue
        out.append(f"{'M' if move else 'L'}{axes.px(x):.1f} {axes.py(y):.1f}")
        move = False
    return "".join(out)


def _nonfinite_marks(axes: _Axes, bad: list) -> str:
    if not bad:
        return ""
    top = axes.top
    bottom = axes.top + axes.height
    shapes = []
    last_x = None
    for step, value in bad:
        x = axes.px(step)
        if last_x is not None and x - last_x < 2:  # one marker per couple of pixels
            continue
        last_x = x
        if value == -math.inf:
            shapes.append(f"M{x - 4:.1f} {bottom}L{x + 4:.1f} {bottom}L{x:.1f} {bottom - 8}Z")
        else:
            shapes.append(f"M{x - 4:.1f} {top}L{x + 4:.1f} {top}L{x:.1f} {top + 8}Z")
    first_step, first_value = bad[0]
    tip = f"{_fmt_step(first_step)}: {first_value}"
    return (
        f"<g><title>{escape(tip)} ({len(bad)})</title>"
        f'<path d="{"".join(shapes)}" fill="{NONFINITE_COLOUR}"/></g>'
    )


def _finding_marks(axes: _Axes, findings: list, labels: dict) -> str:
    by_step: dict[float, list[dict]] = {}
    for finding in findings:
        step = _finding_step(finding)
        if step is not None and axes.x0 <= step <= axes.x1:
            by_step.setdefault(step, []).append(finding)
    if not by_step:
        return ""
    top, bottom = axes.top, axes.top + axes.height
    label_rows = [-1e9, -1e9, -1e9]  # right edge of the last label in each row
    out = []
    for step in sorted(by_step):
        group = by_step[step]
        x = axes.px(step)
        codes = " ".join(dict.fromkeys(str(f.get("code", "")) for f in group))
        tip = "\n".join(
            f"{f.get('code', '')} {f.get('name', '')} "
            f"({labels['step']} {_fmt_step(step)}): {f.get('message', '')}"
            for f in group[:10]
        )
        label, line_top = "", top
        text_width = 6.2 * len(codes)
        for row, right in enumerate(label_rows):
            if x + 3 > right + 16:  # a clear gap, so no two codes read as one label
                label_rows[row] = x + 3 + text_width
                label = (
                    f'<text x="{x + 3:.1f}" y="{top - 28 + 11 * row}" '
                    f'style="fill:{FINDING_COLOUR};font-weight:600">{escape(codes)}</text>'
                )
                line_top = top - 36 + 11 * row
                break
        out.append(
            f'<g><title>{escape(tip)}</title><line x1="{x:.1f}" x2="{x:.1f}" '
            f'y1="{line_top}" y2="{bottom}" stroke="{FINDING_COLOUR}" '
            f'stroke-width="1.2" stroke-dasharray="4 3"/>{label}</g>'
        )
    return "".join(out)


# -- heatmap ------------------------------------------------------------------------------------

_NONFINITE = "nonfinite"


def _bin_layer(raw: list, per_bin: int, columns: int) -> list:
    """Per column: the largest finite norm, _NONFINITE if any value was NaN/Inf, None if none."""
    cells = []
    for start in range(0, min(len(raw), columns * per_bin), per_bin):
        chunk = raw[start : start + per_bin]
        try:  # the common case, all plain finite numbers, at C speed
            if math.isfinite(sum(chunk)):
                cells.append(float(max(chunk)))
                continue
        except TypeError:
            pass
        cell = None
        for value in map(_number, chunk):
            if value is None:
                continue
            if not math.isfinite(value):
                cell = _NONFINITE
                break
            if cell is None or value > cell:
                cell = value
        cells.append(cell)
    return cells + [None] * (columns - len(cells))


def _largest(cells: list) -> float | None:
    return max((c for c in cells if c is not None and c is not _NONFINITE), default=None)


def _pick_layers(rows: dict[str, list]) -> list[str]:
    """The layers worth a row: non-finite ones (earliest first), then the largest norms."""
    if len(rows) <= MAX_HEATMAP_ROWS:
        return list(rows)

    def rank(name: str) -> tuple:
        cells = rows[name]
        first_bad = next((i for i, c in enumerate(cells) if c is _NONFINITE), len(cells))
        largest = _largest(cells)
        return first_bad, -(largest if largest is not None else -1.0)

    keep = set(sorted(rows, key=rank)[:MAX_HEATMAP_ROWS])
    return [name for name in rows if name in keep]  # model order reads best


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _colour_at(t: float) -> str:
    position = min(max(t, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(position), len(_VIRIDIS) - 2)
    frac = position - i
    a, b = _hex(_VIRIDIS[i]), _hex(_VIRIDIS[i + 1])
    return "#" + "".join(f"{round(p + (q - p) * frac):02x}" for p, q in zip(a, b))


def _short_name(name: str, limit: int = 30) -> str:
    return name if len(name) <= limit else "\u2026" + name[-(limit - 1) :]


def _heatmap_section(steps: list[float], grads: dict[str, list], labels: dict) -> str:
    n = len(steps)
    per_bin = max(1, math.ceil(n / MAX_HEATMAP_COLUMNS))
    columns = math.ceil(n / per_bin)
    all_rows = {name: _bin_layer(raw, per_bin, columns) for name, raw in grads.items()}
    names = _pick_layers(all_rows)
    rows = {name: all_rows[name] for name in names}
    positive = [
        c
        for cells in rows.values()
        for c in cells
        if c is not None and c is not _NONFINITE and c > 0
    ]
    hi = math.log10(max(positive)) if positive else 0.0
    lo = math.log10(min(positive)) if positive else -1.0
    lo = max(lo, hi - 12)  # a stray 1e-30 would wash out every other colour
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5

    label_width, row_height, right_pad = 210, 14, 16
    top = 8
    width = _W - label_width - right_pad
    cell_width = width / columns
    height = row_height * len(names)
    paths: dict[str, list[str]] = {}
    texts = []
    for r, name in enumerate(names):
        y = top + r * row_height
        cells = rows[name]
        c = 0
        while c < len(cells):
            fill = _cell_colour(cells[c], lo, hi)
            end = c + 1
            while end < len(cells) and _cell_colour(cells[end], lo, hi) == fill:
                end += 1
            x0 = label_width + c * cell_width
            paths.setdefault(fill, []).append(
                f"M{x0:.2f} {y}h{(end - c) * cell_width:.2f}v{row_height}H{x0:.2f}Z"
            )
            c = end
        largest = _largest(cells)
        tip = f"{name}: max {_fmt(largest)}" if largest is not None else name
        if _NONFINITE in cells:
            tip += f" ({labels['nonfinite']})"
        texts.append(
            f'<g><title>{escape(tip)}</title><text x="{label_width - 6}" '
            f'y="{y + row_height - 3.5}" text-anchor="end">'
            f"{escape(_short_name(name))}</text></g>"
        )
    axis_y = top + height
    total_height = axis_y + 34
    svg = [
        f'<svg viewBox="0 0 {_W} {total_height}" role="img" aria-label="'
        f'{escape(labels["grad"])}"><g shape-rendering="crispEdges">'
    ]
    svg.extend(f'<path d="{"".join(d)}" fill="{fill}"/>' for fill, d in paths.items())
    svg.append("</g>")
    svg.extend(texts)
    axes = _Axes((steps[0], steps[-1]), (0, 1), False, (label_width, top, width, height))
    for tick in _nice_ticks(steps[0], steps[-1], 8):
        x = axes.px(tick)
        svg.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{axis_y}" y2="{axis_y + 4}" '
            f'stroke="#94a3b8"/><text x="{x:.1f}" y="{axis_y + 17}" '
            f'text-anchor="middle">{_fmt_step(round(tick, 6))}</text>'
        )
    svg.append(
        f'<text x="{label_width + width}" y="{axis_y + 30}" text-anchor="end">'
        f"{escape(labels['step'])}</text></svg>"
    )

    gradient = ",".join(_colour_at(i / 8) for i in range(9))
    legend = (
        f'<div class="legend"><span>{_fmt(10**lo)} <i class="sw" style="width:120px;'
        f'background:linear-gradient(90deg,{gradient})"></i>{_fmt(10**hi)} '
        f"({escape(labels['log'])})</span>"
        f'<span><i class="sw" style="background:{NONFINITE_COLOUR}"></i>'
        f"{escape(labels['nonfinite'])}</span>"
        f'<span><i class="sw" style="background:{MISSING_COLOUR}"></i>'
        f"{escape(labels['missing'])}</span></div>"
    )
    notes = []
    if per_bin > 1:
        notes.append(labels["columns"].format(n=per_bin))
    if len(names) < len(grads):
        notes.append(
            labels["layers_shown"].format(
                shown=len(names), total=len(grads), left=len(grads) - len(names)
            )
        )
    note = "".join(f'<p class="note">{escape(text)}</p>' for text in notes)
    return f"<section><h2>{escape(labels['grad'])}</h2>{''.join(svg)}{legend}{note}</section>\n"


def _cell_colour(cell, lo: float, hi: float) -> str:
    if cell is None:
        return MISSING_COLOUR
    if cell is _NONFINITE:
        return NONFINITE_COLOUR
    if cell <= 0:
        return _colour_at(0.0)
    level = round((math.log10(cell) - lo) / (hi - lo) * (_LEVELS - 1))
    return _colour_at(min(max(level, 0), _LEVELS - 1) / (_LEVELS - 1))


# -- findings and crash -------------------------------------------------------------------------


def _fix_text(fix) -> str:
    if isinstance(fix, dict):
        return str(fix.get("title") or fix.get("applicability") or "")
    return "" if fix is None else str(fix)


def _cell(value) -> str:
    return "" if value is None else escape(str(value))


def _findings_section(findings: list, labels: dict) -> str:
    if not findings:
        return (
            f"<section><h2>{escape(labels['findings'])}</h2>"
            f'<p class="note">{escape(labels["no_findings"])}</p></section>\n'
        )
    ordered = sorted(
        findings,
        key=lambda f: (_finding_step(f) is None, _finding_step(f) or 0, str(f.get("code", ""))),
    )
    head = "".join(
        f"<th>{escape(labels[k])}</th>"
        for k in ("code", "name", "step", "rank", "module", "message", "fix")
    )
    rows = []
    for f in ordered[:MAX_TABLE_ROWS]:
        step = _finding_step(f)
        message = _cell(f.get("title") if not f.get("message") else f.get("message"))
        where = f.get("path")
        if where:
            line = f.get("line")
            where = f"{where}:{line}" if line else str(where)
            message += (
                f'<br><span class="note">{escape(labels["where"])} '
                f"<code>{escape(where)}</code></span>"
            )
        rows.append(
            f'<tr><td class="code">{_cell(f.get("code"))}</td><td>{_cell(f.get("name"))}</td>'
            f"<td>{'' if step is None else _fmt_step(step)}</td><td>{_cell(f.get('rank'))}</td>"
            f"<td><code>{_cell(f.get('module'))}</code></td><td>{message}</td>"
            f"<td>{escape(_fix_text(f.get('fix')))}</td></tr>"
        )
    more = ""
    if len(ordered) > MAX_TABLE_ROWS:
        more = (
            f'<p class="note">'
            f"{escape(labels['rows_left'].format(n=len(ordered) - MAX_TABLE_ROWS))}</p>"
        )
    return (
        f"<section><h2>{escape(labels['findings'])}</h2><table><thead><tr>{head}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>{more}</section>\n"
    )


def _crash_section(crash: dict, labels: dict) -> str:
    error = crash.get("error") if isinstance(crash.get("error"), dict) else {}
    parts = [f"<section><h2>{escape(labels['crash'])}</h2>"]
    kind, message = error.get("type"), error.get("message")
    if kind or message:
        text = f"{kind}: {message}" if kind and message else str(kind or message)
        parts.append(f"<pre>{escape(text)}</pre>")
    frame = error.get("user_frame") if isinstance(error.get("user_frame"), dict) else None
    if frame and frame.get("path"):
        where = f"{frame['path']}:{frame['line']}" if frame.get("line") else str(frame["path"])
        source = (
            f" &nbsp; <code>{escape(str(frame['source']))}</code>" if frame.get("source") else ""
        )
        parts.append(f"<p>{escape(labels['at'])} <code>{escape(where)}</code>{source}</p>")
    causes = [c for c in _list(crash.get("findings")) if isinstance(c, dict)]
    if causes:
        parts.append(f"<h2>{escape(labels['causes'])}</h2>")
    else:
        parts.append(f'<p class="note">{escape(labels["unknown"])}</p>')
    for cause in causes:
        confidence = _number(cause.get("confidence"))
        bar = ""
        if confidence is not None and math.isfinite(confidence):
            share = min(max(confidence, 0.0), 1.0)
            bar = (
                f'<span class="bar" title="{escape(labels["confidence"])}">'
                f'<i style="width:{share * 100:.0f}%"></i></span>'
                f'<span class="note">{share:.0%}</span>'
            )
        heading = (
            f"<b><code>{_cell(cause.get('code'))}</code> "
            f"{_cell(cause.get('title') or cause.get('name'))}</b>{bar}"
        )
        body = []
        if cause.get("cause"):
            body.append(f"<div>{escape(labels['cause'])}: {_cell(cause['cause'])}</div>")
        if cause.get("fix"):
            body.append(f"<div>{escape(labels['fix'])}: {escape(_fix_text(cause['fix']))}</div>")
        location = cause.get("location") if isinstance(cause.get("location"), dict) else None
        if location and location.get("path"):
            where = location["path"] + (f":{location['line']}" if location.get("line") else "")
            body.append(
                f'<div class="note">{escape(labels["where"])} <code>{escape(str(where))}'
                f"</code></div>"
            )
        parts.append(f'<div class="cause">{heading}{"".join(body)}</div>')
    parts.append("</section>\n")
    return "".join(parts)


# -- command line -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """python -m torchdoctor.watch.html report.json -o report.html"""
    parser = argparse.ArgumentParser(
        prog="python -m torchdoctor.watch.html",
        description="Render a watched run's JSON report as HTML.",
    )
    parser.add_argument("report", help="the file written by `torchdoctor run --report-json`")
    parser.add_argument("-o", "--output", help="HTML file to write (default: stdout)")
    parser.add_argument("--lang", choices=LANGS, default=None)
    args = parser.parse_args(argv)
    if args.lang is None:
        from torchdoctor._lang import default_lang

        args.lang = default_lang()
    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    page = render_html(report, args.lang)
    if args.output:
        Path(args.output).write_text(page, encoding="utf-8")
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
