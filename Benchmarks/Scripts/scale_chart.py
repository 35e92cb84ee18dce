#!/usr/bin/env python3
"""Draws the scale chart of docs/BENCHMARKS.md from the `Ratios scale` figures.

    swift run -c release --package-path Benchmarks Ratios scale --csv docs/benchmarks/scale.csv
    python3 Benchmarks/Scripts/scale_chart.py docs/benchmarks/scale.csv docs/benchmarks/scale.svg

The input is the CSV `Ratios scale --csv` writes (size,backend,metric,value), or a saved
run's output with the CSV in a ```csv block. The output is one SVG, written by hand (the
standard library only): six log-log panels, records on x, one line per backend.
"""

import csv
import io
import math
import sys

BACKENDS = [  # (key, legend, colour, marker)
    ("array", "Array", "#6b6b6b", "square"),
    ("memory", "MemoryStore", "#1f77b4", "circle"),
    ("log", "LogStore", "#e8710a", "circle"),
    ("sqlite", "SQLite + GRDB", "#2ca02c", "diamond"),
]

# (title, metric, unit, a second metric drawn dashed in the same panel). The queries, as
# `Ratios scale` runs them: `filter(\.name == k).fetch()` with name indexed (the Array
# scans), `filter(\.age > 20 && \.species == "Cow").count`, and
# `filter(\.species == "Cow").sortBy(\.age).limit(10)`, the last also timed once right
# after the load or the open.
PANELS = [
    ("Load every record (dashed: reopen the file)", "load_ms", "time", "open_ms"),
    ("Resident heap (dotted: 40 bytes/record)", "resident_bytes", "bytes", None),
    ("First query after load or open", "first_query_ms", "time", None),
    ("Indexed equality, fetch: name == k", "indexed_ms", "time", None),
    ("Filtered count: age > 20 AND species == Cow", "count_ms", "time", None),
    ("Sort + limit 10: species == Cow, by age", "sort_ms", "time", None),
]

PANEL_W, PANEL_H = 420, 290
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 64, 24, 40, 42
COLUMNS = 3
LEGEND_H = 44


def read_figures(path):
    """{(backend, metric): {size: value}} from the CSV or a saved run's output."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if "```csv" in text:
        text = text.split("```csv", 1)[1].split("```", 1)[0]
    figures = {}
    for row in csv.DictReader(io.StringIO(text.strip())):
        key = (row["backend"], row["metric"])
        figures.setdefault(key, {})[int(row["size"])] = float(row["value"])
    return figures


def escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def size_label(n):
    for div, suffix in ((1_000_000, "M"), (1_000, "K")):
        if n >= div:
            return f"{n // div}{suffix}"
    return str(n)


def time_label(ms):
    s = ms / 1000
    for limit, div, unit in ((1e-6, 1e-9, "ns"), (1e-3, 1e-6, "µs"), (1, 1e-3, "ms")):
        if s < limit:
            return f"{s / div:g} {unit}"
    return f"{s:g} s"


def bytes_label(b):
    for div, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if b >= div:
            return f"{b / div:g} {unit}"
    return f"{b:g} B"


def decades(lo, hi):
    """Powers of ten covering [lo, hi]."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if a == b:
        b += 1
    return a, b


def panel(out, x0, y0, title, series, unit, sizes, reference=None):
    """One log-log panel at (x0, y0); series: [(legend, colour, marker, dashed, {size: value})]."""
    values = [v for *_, points in series for v in points.values() if v > 0]
    if reference:
        values += [reference(n) for n in sizes]
    if not values:
        return
    ylo, yhi = decades(min(values), max(values))
    xlo, xhi = decades(min(sizes), max(sizes))
    left, top = x0 + MARGIN_L, y0 + MARGIN_T
    width, height = PANEL_W - MARGIN_L - MARGIN_R, PANEL_H - MARGIN_T - MARGIN_B

    def px(n):
        return left + (math.log10(n) - xlo) / (xhi - xlo) * width

    def py(v):
        return top + height - (math.log10(v) - ylo) / (yhi - ylo) * height

    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{y0 + 22}" class="title">{escape(title)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{width}" height="{height}" class="frame"/>')
    label = time_label if unit == "time" else bytes_label
    for e in range(ylo, yhi + 1):
        y = py(10.0**e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" class="ytick">{escape(label(10.0**e))}</text>')
    for e in range(xlo, xhi + 1):
        x = px(10**e)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + height}" class="grid"/>')
        out.append(f'<text x="{x:.1f}" y="{top + height + 16}" class="xtick">{size_label(10**e)}</text>')
    out.append(f'<text x="{left + width / 2}" y="{top + height + 34}" class="axis">records</text>')
    if reference:
        points = " ".join(f"{px(n):.1f},{py(reference(n)):.1f}" for n in sorted(sizes))
        out.append(f'<polyline points="{points}" class="reference"/>')
    for _, colour, marker, dashed, points in series:
        xs = sorted(n for n, v in points.items() if v > 0)
        if not xs:
            continue
        path = " ".join(f"{px(n):.1f},{py(points[n]):.1f}" for n in xs)
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for n in xs:
            out.append(mark(marker, px(n), py(points[n]), colour, dashed))


def mark(marker, x, y, colour, hollow=False):
    fill = "white" if hollow else colour
    style = f'fill="{fill}" stroke="{colour}" stroke-width="1.5"'
    if marker == "square":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" {style}/>'
    if marker == "diamond":
        return f'<polygon points="{x:.1f},{y - 5:.1f} {x + 5:.1f},{y:.1f} {x:.1f},{y + 5:.1f} {x - 5:.1f},{y:.1f}" {style}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" {style}/>'


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scale_chart.py FIGURES.csv OUTPUT.svg")
    figures = read_figures(sys.argv[1])
    sizes = sorted({n for points in figures.values() for n in points})
    rows = math.ceil(len(PANELS) / COLUMNS)
    total_w, total_h = COLUMNS * PANEL_W, rows * PANEL_H + LEGEND_H
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
        f'viewBox="0 0 {total_w} {total_h}" font-family="Helvetica, Arial, sans-serif">',
        "<style>"
        ".title{font-size:12px;font-weight:bold;text-anchor:middle}"
        ".frame{fill:none;stroke:#999}"
        ".grid{stroke:#e4e4e4}"
        ".ytick{font-size:10px;text-anchor:end;fill:#444}"
        ".xtick{font-size:10px;text-anchor:middle;fill:#444}"
        ".axis{font-size:10px;text-anchor:middle;fill:#666}"
        ".legend{font-size:12px;fill:#222}"
        ".reference{fill:none;stroke:#e8710a;stroke-width:1.2;stroke-dasharray:2 3}"
        "</style>",
        f'<rect width="{total_w}" height="{total_h}" fill="white"/>',
    ]
    # The legend, one entry per backend.
    x = 20
    for _, legend, colour, marker in BACKENDS:
        out.append(f'<line x1="{x}" y1="22" x2="{x + 28}" y2="22" stroke="{colour}" stroke-width="2"/>')
        out.append(mark(marker, x + 14, 22, colour))
        out.append(f'<text x="{x + 36}" y="26" class="legend">{escape(legend)}</text>')
        x += 60 + 8 * len(legend)
    out.append(
        f'<text x="{x + 10}" y="26" class="legend" fill="#666">log-log; per call for queries; '
        "each backend in a process of its own</text>"
    )
    for i, (title, metric, unit, extra) in enumerate(PANELS):
        x0, y0 = (i % COLUMNS) * PANEL_W, LEGEND_H + (i // COLUMNS) * PANEL_H
        series = []
        for key, legend, colour, marker in BACKENDS:
            series.append((legend, colour, marker, False, figures.get((key, metric), {})))
            if extra:
                series.append((legend, colour, marker, True, figures.get((key, extra), {})))
        reference = (lambda n: 40.0 * n) if metric == "resident_bytes" else None
        panel(out, x0, y0, title, series, unit, sizes, reference)
    out.append("</svg>")
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
