#!/usr/bin/env python3
"""Plot knnbench results: which version wins each case, by how much, and how far from the floor.

Usage:
  scripts/plots/plot.py results.json [-o out.png] [--only heatmap,bars,trees] [--highlight v14] [--h2d-gbps 50]
  scripts/plots/plot.py --compare A.json B.json [-o out.png]

Figures (each written as PNG, 1600 px wide, and as SVG):
  heatmap      cases x versions; colour = time / the case's fastest; median ms in each cell; the
               fastest outlined; skipped and failed versions marked, never drawn as zero
  bars-FAMILY  one per family (cpu, gpu, multi-gpu, tree, ...): a panel per case, a bar per version
               on a linear axis, the case's copy floor as a line
  trees        build and query side by side per tree version, a panel per case, linear axis
  vs-floor     with --highlight V: every case, V against its floor and the fastest other version; the
               floor knnbench recorded (copy or compute, named) where the file has one, else the copy floor
  compare      with --compare A B: B/A per (case, version), both noises as error bars, the verdicts
               of `knnbench compare` (same rule, reimplemented here) coloured

The copy floor of a case is its reference bytes (n * k * 4) over the host-to-device bandwidth,
measured from the "h2d" phases of the brute-force GPU versions in the file (or --h2d-gbps). Files
written with the start-up rates record each result's own floor (docs/measurement.md, "Floors"):
vs-floor draws that one, of V or else of the fastest other version, and names its bound.

-o X.png writes X-<figure>.png and X-<figure>.svg (X.png itself when X already ends in -<figure>);
without -o, X is the results file's name without .json.

Exit codes: 0 written, 2 a usage error (bad file, arguments or version), 3 matplotlib is missing.
"""
import argparse
import gzip
import json
import math
import os
import re
import statistics
import sys

SCHEMA_VERSIONS = (1, 2)  # 2 adds each result's params, params_set and params_chosen (docs/results-schema.md)
# Debian's python3-matplotlib installs for /usr/bin/python3; another python3 first on PATH
# (pyenv, a venv) may not see it.
SYSTEM_PYTHON = "/usr/bin/python3"
WIDTH_IN, DPI = 16.0, 100  # 1600 px
FLOAT_BYTES = 4
FAMILY_ORDER = ["cpu", "gpu", "multi-gpu", "tree", "peer"]
INEXACT_COLOUR = "#d9c3ef"  # a peer's answer that failed validation: timed, but not exact
FIGURES = ["heatmap", "bars", "trees", "vs-floor", "compare"]
VERDICT_COLOUR = {"SLOWER": "#d62728", "FASTER": "#2ca02c", "SAME": "0.55", "too few samples": "#ff7f0e", "????": "black"}
plt = None


def import_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable, smaller
        matplotlib.rcParams["svg.hashsalt"] = "knnbench"  # the same figure gives the same SVG bytes
        import matplotlib.pyplot as pyplot

        return pyplot
    except ImportError:
        pass
    if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK)
            and not os.environ.get("KNN_PLOT_REEXEC")):
        os.environ["KNN_PLOT_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0])] + sys.argv[1:])  # the script run (plot_sweep.py imports this)
    print(f"plot.py: matplotlib is not installed for {sys.executable}.\n"
          "Install it with:  sudo apt-get install python3-matplotlib  (or scripts/setup/install-deps.sh)", file=sys.stderr)
    sys.exit(3)


def line_plot_args(doc, title_default):
    """The arguments of the line-plot scripts (plot_sweep.py, plot_waves.py): results files, -o, --title."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("results", nargs="+", help="results JSON files written by knnbench --json")
    ap.add_argument("-o", "--output", required=True, help="image to write: .png, .svg or .pdf")
    ap.add_argument("--title", default=None, help=f"plot title (default: {title_default})")
    return ap.parse_args()


def fail(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- reading

def version_key(v):
    m = re.match(r"([A-Za-z_-]*)(\d+)$", v)
    return (m.group(1) != "v", int(m.group(2)), v) if m else (True, 1 << 30, v)


def num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def median_interval(samples):
    """The C++ median_interval (src/stats.cpp): order statistics around the median, ~95 % coverage."""
    v = sorted(samples)
    n = len(v)
    if n < 3:
        return None
    log_pmf = lambda k: math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    l, below = 1, math.exp(log_pmf(0))
    while l + 1 <= (n + 1) // 2 and 2 * (below + math.exp(log_pmf(l))) <= 0.05:
        below += math.exp(log_pmf(l))
        l += 1
    return v[l - 1], v[n - l]


class Result:
    def __init__(self, r, path, i):
        w = f"{path}: results[{i}]"
        c = r.get("case")
        if not isinstance(c, dict) or not isinstance(r.get("version"), str):
            fail(f"{w}: no case object or version")
        self.case = c
        self.case_id = c.get("id")
        # A variant of a parameter sweep is its own row: "v16[test=median,sort=off]", as the tables say.
        params, chosen = r.get("params") or {}, r.get("params_set") or []
        shown = [f"{n}={params.get(n, '?')}" for n in chosen if isinstance(n, str)] if isinstance(params, dict) else []
        self.version = r["version"] + (f"[{','.join(shown)}]" if shown else "")
        self.family = r.get("family") or "?"
        self.status = r.get("status") or "?"
        self.reason = r.get("reason") or ""
        self.interrupted = bool(r.get("interrupted"))
        st = r.get("stats") or {}
        self.samples = [x for x in (r.get("samples_ms") or []) if num(x) is not None]
        med = num(st.get("median_ms"))
        self.median = med if self.status == "pass" and med is not None and med > 0 else None
        # A peer's answer that failed validation (graded, not failed): its time is drawn apart, in
        # its own colour, never as the fastest or in the bars.
        self.inexact_ms = med if self.status == "inexact" and med is not None and med > 0 else None
        self.recall = num((r.get("validation") or {}).get("recall"))
        noise = num(st.get("median_noise_pct"))
        if noise is None and self.median is not None and "median_noise_pct" not in st:
            ci = median_interval(self.samples)  # files from before the robust noise: as the C++ reader does
            noise = 100 * (ci[1] - ci[0]) / 2 / self.median if ci else None
        self.noise_pct = noise
        self.phases = {k: num((v or {}).get("median_ms")) for k, v in (r.get("phases") or {}).items() if isinstance(v, dict)}
        self.devices_used = r.get("devices_used") or []
        self.checksums = c.get("checksums") or {}
        # The floor knnbench recorded (docs/measurement.md, "Floors"): its ms and bound (copy or
        # compute) and the rate it used; None in files from before the floors, or without one.
        fl = r.get("floor") if isinstance(r.get("floor"), dict) else {}
        self.floor_ms = num(fl.get("floor_ms")) if fl.get("bound") in ("copy", "compute") else None
        self.floor_bound = fl.get("bound") if self.floor_ms else None
        self.floor_rate = fl.get("rate_name") if self.floor_ms else None

    def phase(self, name):
        v = self.phases.get(name)
        return v if v is not None and v >= 0 else None

    def pair_key(self):
        c = self.case
        return (self.version, c.get("id"), c.get("k"), c.get("m"), c.get("n"), c.get("topk"), bool(c.get("self_join")),
                c.get("distribution"), c.get("max"), c.get("seed"))


class Doc:
    def __init__(self, path):
        try:
            with open(path, "rb") as f:
                gzipped = f.read(2) == b"\x1f\x8b"  # results/**/*.json.gz read as they are
            with (gzip.open if gzipped else open)(path, "rt", encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, EOFError) as e:  # EOFError, gzip.BadGzipFile: a gzip stream cut short or damaged
            fail(f"{path}: {e.strerror or e}" if isinstance(e, OSError) else f"{path}: gzip data cut short")
        except ValueError as e:  # JSONDecodeError, or bytes that are not UTF-8
            fail(f"{path}: not valid JSON: {e}")
        if not isinstance(doc, dict) or doc.get("schema_version") not in SCHEMA_VERSIONS:
            found = doc.get("schema_version") if isinstance(doc, dict) else type(doc).__name__
            fail(f"{path}: schema_version {found}, this script reads {' or '.join(map(str, SCHEMA_VERSIONS))}")
        if not isinstance(doc.get("results"), list):
            fail(f"{path}: no results array")
        self.path, self.doc = path, doc
        self.results = [Result(r, path, i) for i, r in enumerate(doc["results"]) if isinstance(r, dict)]
        if not self.results:
            fail(f"{path}: no results to plot")
        self.by = {}
        for r in self.results:
            self.by.setdefault((r.case_id, r.version), r)
        self.cases = {}
        for r in self.results:
            self.cases.setdefault(r.case_id, r.case)
        self.case_ids = sorted(self.cases)
        self.versions = sorted({r.version for r in self.results}, key=version_key)
        self.labels = case_labels(self.cases)

    def best(self, cid, exclude=None):
        rs = [r for r in self.results if r.case_id == cid and r.median is not None and r.version != exclude]
        return min(rs, key=lambda r: r.median) if rs else None

    def title(self):
        host = self.doc.get("host") or {}
        names = {}
        for d in self.doc.get("devices") or []:
            names[d.get("name", "?")] = names.get(d.get("name", "?"), 0) + 1
        gpus = ", ".join(f"{n}x {name}" if n > 1 else name for name, n in names.items()) or "no GPU"
        meta = self.doc.get("meta") or {}
        date = meta.get("date_utc", "")
        return f"{os.path.basename(self.path)}: {gpus}, {host.get('cpu_model', '?')}" + (f", {date}" if date else "")


def human(x):
    if not isinstance(x, int) or x < 10000:
        return str(x)
    for shift, unit in ((20, "Mi"), (10, "Ki")):
        if x % (1 << shift) == 0:
            return f"{x >> shift}{unit}"
    for div, unit in ((10 ** 6, "M"), (10 ** 3, "K")):
        if x % div == 0:
            return f"{x // div}{unit}"
    return str(x)


def case_labels(cases):
    """'id: k=3 m=1024 n=1Mi', plus topk, distribution and self-join where they differ between cases.
    Returns {id: label, None: what all cases share}."""
    def dist(c):
        d = c.get("distribution", "?")
        return f"{d}<{c.get('max')}" if d == "integers" and c.get("max") is not None else d
    extra = [("topk", lambda c: f"topk={c.get('topk')}"), ("dist", dist), ("self", lambda c: "self-join" if c.get("self_join") else "")]
    varying = [f for name, f in extra if len({f(c) for c in cases.values()}) > 1]
    same = [f(next(iter(cases.values()))) for name, f in extra if f not in varying]
    labels = {}
    for cid, c in cases.items():
        parts = [f"k={c.get('k')}", f"m={human(c.get('m'))}", f"n={human(c.get('n'))}"] + [f(c) for f in varying]
        labels[cid] = f"{cid}: " + " ".join(p for p in parts if p)
    labels[None] = ", ".join(s for s in same if s)
    return labels


def fmt_x(x):
    """A ratio: 1.07×, 24.3×, 2,690×."""
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×" if x < 100 else f"{x:,.0f}×"


def fmt_ms(v):
    if v is None:
        return ""
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:.3g}"
    if v >= 0.001:
        return f"{v:.2g}"
    return f"{v:.1e}"


# ---------------------------------------------------------------- the copy floor

def h2d_bandwidth(doc, given_gbps):
    """Bytes per second, and where the number comes from. Measured: the median over the brute-force
    GPU versions (one device, not self-join) of (queries + references bytes) / h2d time, in the
    case with the most bytes (small copies measure latency, not bandwidth)."""
    if given_gbps:
        return given_gbps * 1e9, f"H2D {given_gbps:g} GB/s (--h2d-gbps)"
    per_case = {}
    for r in doc.results:
        c, h2d = r.case, r.phase("h2d")
        if r.median is None or h2d is None or h2d <= 0 or r.family in ("cpu", "tree") or len(r.devices_used) > 1 or c.get("self_join"):
            continue
        nbytes = FLOAT_BYTES * c["k"] * (c["n"] + c["m"])
        per_case.setdefault(r.case_id, (nbytes, []))[1].append(nbytes / (h2d * 1e-3))
    if not per_case:
        return None, "no copy floor: no brute-force h2d phase in the file (give --h2d-gbps)"
    cid = max(per_case, key=lambda i: per_case[i][0])
    bw = statistics.median(per_case[cid][1])
    return bw, f"H2D {bw / 1e9:.1f} GB/s (median of {len(per_case[cid][1])} h2d phases, case {cid})"


def floor_ms(case, bw):
    return FLOAT_BYTES * case["k"] * case["n"] / bw * 1e3 if bw else None


def case_floor(doc, cid, rs, bw):
    """The floor of case cid for the figure: the first recorded floor of the results rs (None
    skipped), else the copy floor of floor_ms. Returns (ms, label) or (None, None)."""
    for r in rs:
        if r is not None and r.floor_ms:
            return r.floor_ms, f"{r.floor_bound} floor\n(recorded)"
    fl = floor_ms(doc.cases[cid], bw)
    return (fl, "copy floor\n(n k 4 B ÷ H2D)") if fl else (None, None)


# ---------------------------------------------------------------- figure helpers

def new_figure(panels, row_in=3.1, cols=4, top_in=1.3):
    cols = max(1, min(cols, panels))
    rows = max(1, math.ceil(panels / cols))
    fig = plt.figure(figsize=(WIDTH_IN, top_in + row_in * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes[:panels]


def missing_text(ax, x, r, y=0.02):
    """A skipped or failed version, written at the foot of its slot: never a bar of height zero."""
    if r is None:
        return
    text, colour = ("FAIL", "#d62728") if r.status == "fail" else ("skip", "0.4") if r.status == "skip" else (r.status, "0.4")
    ax.text(x, y, text, transform=ax.get_xaxis_transform(), ha="center", va="bottom", rotation=90, fontsize=9, color=colour,
            fontweight="bold" if r.status == "fail" else "normal")


def value_axis(ax, values, extra=(), cut=True):
    """Linear axis from 0; with cut, a bar over 4x the next one is cut at the axis top (labelled, hatched)."""
    vals = sorted(v for v in values if v is not None)
    top = vals[-1] if vals else 1.0
    if cut and len(vals) >= 2 and vals[-1] > 4 * vals[-2]:
        top = 2.5 * vals[-2]
    top = max([top] + [e for e in extra if e is not None and e < 4 * top])
    ax.set_ylim(0, top * 1.4)
    return top * 1.4


def bar_with_label(ax, x, v, ylim, width, colour, edge="black", lw=0.6, label_colour="black", vertical=False):
    clipped = v > ylim
    ax.bar(x, min(v, ylim), width, color=colour, edgecolor=edge, linewidth=lw, hatch="//" if clipped else None)
    y = ylim * 0.97 if clipped else v
    ax.annotate(fmt_ms(v) + (" ↑" if clipped else ""), (x, y), textcoords="offset points", xytext=(0, 2), ha="center",
                va="top" if clipped else "bottom", fontsize=8, color=label_colour, rotation=90 if clipped or vertical else 0,
                bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none", alpha=0.8) if clipped else None)


def ref_line(ax, y, colour, style, text, notes):
    """A horizontal reference (the copy floor, the fastest elsewhere); its value goes into the
    panel's note box rather than onto the line, where bars and their labels would hide it."""
    if y is None:
        return
    ax.axhline(y, color=colour, linestyle=style, linewidth=1.4, zorder=3)
    notes.append((text, colour))


def note_box(ax, notes, title, lines):
    """The panel's title, with the reference lines' values under it, above the axes."""
    for i, (text, colour) in enumerate(reversed(notes)):
        ax.text(0.5, 1.01 + 0.075 * i, text, transform=ax.transAxes, ha="center", va="bottom", fontsize=8, color=colour)
    ax.set_title(title, fontsize=10, pad=4 + 13 * lines)  # the same in every panel: the axes line up


# ---------------------------------------------------------------- figures

def finish_panels(axes, ylabel="median ms per call"):
    for ax in axes:
        n = len(ax.get_xticks())
        ax.set_xlim(-0.6, n - 0.4)
        ax.tick_params(axis="y", labelsize=8)
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)  # no "1e-5" above the axis
        ax.grid(True, axis="y", alpha=0.3)
    for ax in axes[::4]:
        ax.set_ylabel(ylabel)


def fig_heatmap(doc, bw, bw_note):
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    cases, versions = doc.case_ids, doc.versions
    ratio = np.full((len(cases), len(versions)), np.nan)
    for i, cid in enumerate(cases):
        best = doc.best(cid)
        for j, v in enumerate(versions):
            r = doc.by.get((cid, v))
            if r and r.median is not None:
                ratio[i, j] = r.median / best.median
    vmax = max(10.0, min(1000.0, np.nanmax(ratio) if np.isfinite(ratio).any() else 10.0))
    # Column labels that would run into each other (a sweep's "v16[test=median,sort=off,final=off]") slant.
    longest = max(map(len, versions))
    slanted = longest * len(versions) > 180
    fig = plt.figure(figsize=(WIDTH_IN, 2.2 + 0.5 * len(cases) + (0.04 * longest if slanted else 0)), layout="constrained")
    ax = fig.subplots()
    cmap = plt.get_cmap("YlOrRd").copy()
    cmap.set_bad("white")
    norm = LogNorm(1, vmax)
    im = ax.imshow(np.ma.masked_invalid(ratio), cmap=cmap, norm=norm, aspect="auto")
    skips = {}
    inexact = False
    for i, cid in enumerate(cases):
        best = doc.best(cid)
        for j, v in enumerate(versions):
            r = doc.by.get((cid, v))
            if r is None:
                ax.text(j, i, "not run", ha="center", va="center", fontsize=7, color="0.6")
            elif r.status == "inexact":
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=INEXACT_COLOUR, edgecolor="0.75", linewidth=0))
                recall = f"recall {r.recall:.4g}" if r.recall is not None else "recall ?"
                ax.text(j, i - 0.13, fmt_ms(r.inexact_ms) if r.inexact_ms else "inexact", ha="center", va="center", fontsize=10, color="#3d1466")
                ax.text(j, i + 0.22, f"inexact, {recall}", ha="center", va="center", fontsize=6.5, color="#3d1466")
                inexact = True
            elif r.median is None:
                fc = "#f4c7c3" if r.status == "fail" else "0.9"
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=fc, hatch="///", edgecolor="0.75", linewidth=0))
                ax.text(j, i, "FAIL" if r.status == "fail" else r.status, ha="center", va="center", fontsize=9,
                        color="#b00000" if r.status == "fail" else "0.35", fontweight="bold" if r.status == "fail" else "normal")
                if r.status == "skip":
                    skips.setdefault(r.reason or "no reason given", {}).setdefault(v, []).append(cid)
            else:
                x = ratio[i, j]
                dark = norm(x) > 0.55
                colour = "white" if dark else "black"
                ax.text(j, i - 0.13, fmt_ms(r.median), ha="center", va="center", fontsize=10, color=colour,
                        fontweight="bold" if r is best else "normal")
                ax.text(j, i + 0.22, "fastest" if r is best else fmt_x(x), ha="center", va="center", fontsize=7.5, color=colour)
                if r is best:
                    ax.add_patch(Rectangle((j - 0.47, i - 0.47), 0.94, 0.94, fill=False, edgecolor="#1f3fbf", linewidth=3))
    ax.set_xticks(range(len(versions)), versions, fontsize=10)
    ax.xaxis.tick_top()
    if slanted:
        plt.setp(ax.get_xticklabels(), rotation=30, ha="left", rotation_mode="anchor")
    ax.set_yticks(range(len(cases)), [doc.labels[c] for c in cases], fontsize=9.5)
    ax.set_xticks(np.arange(-0.5, len(versions)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(cases)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    fam = {}
    for r in doc.results:
        fam.setdefault(r.version, r.family)
    for j, v in enumerate(versions):  # family under each version name
        ax.text(j, len(cases) - 0.5, fam.get(v, ""), ha="center", va="top", fontsize=7.5, color="0.35",
                transform=ax.transData)
    cb = fig.colorbar(im, ax=ax, shrink=0.9, pad=0.01)
    cb.set_label("time ÷ the case's fastest (log)")
    from matplotlib.ticker import FuncFormatter, LogLocator
    cb.ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    cb.ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    shared = f" — all cases: {doc.labels[None]}" if doc.labels[None] else ""
    ax.set_title(f"Median ms per call, every case × version; the case's fastest outlined{shared}", fontsize=12, pad=8)
    def where(vs):
        vs = sorted(vs.items(), key=lambda t: version_key(t[0]))
        everywhere = [v for v, ids in vs if len(ids) == len(cases)]
        parts = [f"{', '.join(everywhere)} (all cases)"] if everywhere else []
        parts += [f"{v} (case{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))})" for v, ids in vs if len(ids) < len(cases)]
        return ", ".join(parts)
    import textwrap
    notes = [textwrap.fill(f"skip: {where(vs)}: {reason}", 190, subsequent_indent="    ") for reason, vs in skips.items()]
    if inexact:  # said first: a wrong answer matters more than a skip
        notes.insert(0, "lilac: inexact, a peer's answer that failed validation (its time, and recall@topk against the reference)")
    fig.suptitle(doc.title(), fontsize=10)
    if notes:
        ax.set_xlabel("\n".join(notes[:6]) + ("\n…" if len(notes) > 6 else ""), fontsize=8.5, loc="left", labelpad=14)
    return fig


def family_of(doc):
    fams = {}
    for r in doc.results:
        fams.setdefault(r.family, set()).add(r.version)
    order = [f for f in FAMILY_ORDER if f in fams] + sorted(f for f in fams if f not in FAMILY_ORDER)
    return [(f, sorted(fams[f], key=version_key)) for f in order]


def fig_bars(doc, family, versions, bw, bw_note):
    cases = [c for c in doc.case_ids if any((c, v) in doc.by for v in versions)]
    fig, axes = new_figure(len(cases))
    for ax, cid in zip(axes, cases):
        rs = [doc.by.get((cid, v)) for v in versions]
        fl = floor_ms(doc.cases[cid], bw)
        overall = doc.best(cid)
        fam_best = min((r for r in rs if r and r.median is not None), key=lambda r: r.median, default=None)
        outside = overall if overall and overall.family != family else None
        ylim = value_axis(ax, [r.median for r in rs if r], [fl, outside.median if outside else None])
        for x, (v, r) in enumerate(zip(versions, rs)):
            if r is None or r.median is None:
                missing_text(ax, x, r)
                continue
            win = r is overall
            bar_with_label(ax, x, r.median, ylim, 0.7, "#1f77b4" if r is fam_best else "#9ecae1",
                           edge="#1f3fbf" if win else "black", lw=2.5 if win else 0.6)
        notes = []
        ref_line(ax, fl, "#d62728", "--", f"copy floor {fmt_ms(fl)} ms", notes)
        if outside:
            ref_line(ax, outside.median, "#1a7a1a", ":", f"fastest: {outside.version} ({outside.family}) {fmt_ms(outside.median)} ms", notes)
        note_box(ax, notes, doc.labels[cid], 2)
        ax.set_xticks(range(len(versions)), versions, fontsize=9)
    finish_panels(axes)
    fig.suptitle(f"Family {family}: median ms per call (linear; dark bar = the family's fastest, blue outline = fastest of all, "
                 f"↑ = cut at the top)\n{bw_note}; red dashed = copy floor (reference bytes ÷ H2D)\n{doc.title()}", fontsize=11)
    return fig


def fig_trees(doc, bw, bw_note):
    trees = sorted({r.version for r in doc.results if r.family == "tree"}, key=version_key)
    cases = [c for c in doc.case_ids if any((c, v) in doc.by for v in trees)]
    if not cases:
        return None
    fig, axes = new_figure(len(cases))
    w = 0.38
    for ax, cid in zip(axes, cases):
        rs = [doc.by.get((cid, v)) for v in trees]
        brute = min((r for r in doc.results if r.case_id == cid and r.family != "tree" and r.median is not None),
                    key=lambda r: r.median, default=None)
        vals = [x for r in rs if r and r.median is not None for x in (r.phase("build"), r.phase("query"))]
        ylim = value_axis(ax, vals, [brute.median if brute else None], cut=False)  # build against query: no cut
        for x, r in enumerate(rs):
            if r is None or r.median is None or r.phase("build") is None or r.phase("query") is None:
                missing_text(ax, x, r)
                continue
            bar_with_label(ax, x - w / 2, r.phase("build"), ylim, w, "#1f77b4", vertical=True)
            bar_with_label(ax, x + w / 2, r.phase("query"), ylim, w, "#ff7f0e", vertical=True)
        notes = []
        if brute:
            ref_line(ax, brute.median, "#1a7a1a", ":", f"fastest brute force: {brute.version} {fmt_ms(brute.median)} ms (whole call)", notes)
        note_box(ax, notes, doc.labels[cid], 1)
        ax.set_xticks(range(len(trees)), [f"{v}\n{fmt_ms(r.median)} ms a call" if r and r.median else v for v, r in zip(trees, rs)], fontsize=8.5)
    finish_panels(axes)
    from matplotlib.patches import Patch
    axes[0].legend(handles=[Patch(color="#1f77b4", label="build"), Patch(color="#ff7f0e", label="query")], loc="upper right", fontsize=8)
    fig.suptitle(f"Trees: build and query per call, side by side (linear)\n{doc.title()}", fontsize=11)
    return fig


def fig_vs_floor(doc, version, bw, bw_note):
    cases = doc.case_ids  # every case: where the version did not run, its slot says so
    fig, axes = new_figure(len(cases))
    wins = near = timed = recorded = 0
    for ax, cid in zip(axes, cases):
        r = doc.by.get((cid, version))
        other = doc.best(cid, exclude=version)
        fl, floor_name = case_floor(doc, cid, [r, other], bw)
        recorded += bool(floor_name and floor_name.endswith("recorded)"))
        # Each version's "× floor" against its own recorded floor (a tree's is the copy floor only, so
        # it may sit below the brute-force floor drawn), else against the floor drawn.
        vals = [r.median if r else None, other.median if other else None, fl]
        ylim = value_axis(ax, [v for v in vals if v is not None])
        def floor_x(res):
            own = res.floor_ms or fl
            return f"\n{fmt_x(res.median / own)} {'its' if res.floor_ms else 'the'} floor" if own and res.median else ""
        names = [version + (floor_x(r) if r else "\nnot run"),
                 f"{other.version}\n(fastest other)" + floor_x(other) if other else "no other", floor_name or "no floor"]
        note = [(f"{version} = {fmt_x(r.median / other.median)} {other.version}", "#5b2a86")] if r and other and r.median else []
        note_box(ax, note, doc.labels[cid], 1)
        if r is None:
            ax.text(0, 0.02, "not run", transform=ax.get_xaxis_transform(), ha="center", va="bottom", rotation=90, fontsize=9, color="0.4")
        elif r.median is None:
            missing_text(ax, 0, r)
        else:
            timed += 1
            wins += bool(other is None or r.median <= other.median)
            near += bool(fl and r.median <= 2 * fl)
            bar_with_label(ax, 0, r.median, ylim, 0.6, "#9467bd")
        if other:
            bar_with_label(ax, 1, other.median, ylim, 0.6, "0.65")
        if fl is not None:
            bar_with_label(ax, 2, fl, ylim, 0.6, "white", edge="#d62728", label_colour="#d62728")
        ax.set_xticks(range(3), names, fontsize=8.5)
    finish_panels(axes)
    source = (f"floors recorded by knnbench in {recorded} of {len(cases)} cases (the larger of copy and compute), "
              f"elsewhere the copy floor: {bw_note}")
    fig.suptitle(f"{version} against the floor and the fastest other version, per case (linear): {version} fastest on {wins} of "
                 f"{timed} timed cases, within 2× of the floor on {near}\n{source}\n{doc.title()}", fontsize=11)
    return fig


# ---------------------------------------------------------------- compare (the rule of src/compare.cpp)

def mann_whitney_min_p(na, nb):
    if na <= 0 or nb <= 0:
        return 1.0
    return min(1.0, 2 * math.exp(-(math.lgamma(na + nb + 1) - math.lgamma(na + 1) - math.lgamma(nb + 1))))


def mann_whitney_p(a, b):
    na, nb = len(a), len(b)
    n = na + nb
    allv = sorted([(x, True) for x in a] + [(x, False) for x in b], key=lambda t: t[0])
    rank_a = tie = 0.0
    i = 0
    while i < n:
        j = i
        while j < n and allv[j][0] == allv[i][0]:
            j += 1
        t, mid = j - i, 0.5 * (i + 1 + j)
        rank_a += mid * sum(1 for k in range(i, j) if allv[k][1])
        tie += t ** 3 - t
        i = j
    u_a = rank_a - 0.5 * na * (na + 1)
    u_min = min(u_a, na * nb - u_a)
    if tie == 0 and na * nb <= 400:  # exact distribution of U
        count = [[None] * (nb + 1) for _ in range(na + 1)]
        for i in range(na + 1):
            for j in range(nb + 1):
                if i == 0 or j == 0:
                    count[i][j] = [1.0] + [0.0] * (i * j)
                    continue
                count[i][j] = [(count[i - 1][j][u - j] if j <= u <= (i - 1) * j + j else 0.0) +
                               (count[i][j - 1][u] if u <= i * (j - 1) else 0.0) for u in range(i * j + 1)]
        dist = count[na][nb]
        return min(1.0, 2 * sum(d for u, d in enumerate(dist) if u <= u_min + 1e-9) / sum(dist))
    mean = 0.5 * na * nb
    var = na * nb / 12.0 * ((n + 1) - tie / (n * (n - 1)))
    if not var > 0:
        return 1.0
    z = max(0.0, abs(u_a - mean) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def judge(a, b, threshold_pct=5.0, alpha=0.01, min_change_ms=0.05):
    """The verdict of `knnbench compare` (judge_results in src/compare.cpp) on two passing results."""
    na, nb = len(a.samples), len(b.samples)
    p = mann_whitney_p(a.samples, b.samples) if na >= 3 and nb >= 3 else None
    if a.median is None or b.median is None or na == 0 or nb == 0:
        return "????"
    if na < 3 or nb < 3 or mann_whitney_min_p(na, nb) > alpha:
        return "too few samples"
    if a.noise_pct is None or b.noise_pct is None:
        return "????"
    change = b.median - a.median
    beyond_effect = abs(change) / a.median * 100 > threshold_pct and abs(change) > min_change_ms
    beyond_noise = abs(change) > (a.median * a.noise_pct + b.median * b.noise_pct) / 100
    if not (beyond_effect and beyond_noise and p is not None and p < alpha):
        return "SAME"
    return "FASTER" if change < 0 else "SLOWER"


def compare_pairs(da, db, threshold, alpha, min_change=0.05):
    """{(case id, version): (a, b, verdict or None)}; None when not judged (a status, other inputs)."""
    a_by = {}
    for r in da.results:
        a_by.setdefault(r.pair_key(), r)
    out = {}
    for b in db.results:
        a = a_by.get(b.pair_key())
        if a is None or (b.case_id, b.version) in out:
            continue
        judged = a.checksums == b.checksums and a.median is not None and b.median is not None and not a.interrupted and not b.interrupted
        out[(b.case_id, b.version)] = (a, b, judge(a, b, threshold, alpha, min_change) if judged else None)
    return out


def fig_compare(da, db, pairs, threshold):
    from matplotlib.lines import Line2D

    cases = sorted({cid for cid, _ in pairs})
    versions = sorted({v for _, v in pairs}, key=version_key)
    labels = case_labels({cid: pairs[next(k for k in pairs if k[0] == cid)][1].case for cid in cases})
    fig, axes = new_figure(len(cases) + 2)
    key_ax, axes = axes[-1], axes[:-1]
    lo, hi = 1 - threshold / 100, 1 + threshold / 100
    for (a, b, verdict) in pairs.values():
        if verdict:
            r = b.median / a.median
            e = (a.noise_pct or 0) / 100 + r * (b.noise_pct or 0) / 100
            lo, hi = min(lo, r - e), max(hi, r + e)
    pad = 0.08 * (hi - lo)
    for ax, cid in zip(axes, cases):
        ax.axhspan(1 - threshold / 100, 1 + threshold / 100, color="0.92", zorder=0)
        ax.axhline(1, color="0.3", linewidth=0.8)
        for x, v in enumerate(versions):
            p = pairs.get((cid, v))
            if p is None:
                continue
            a, b, verdict = p
            if verdict is None:
                ax.text(x, 1, "n/c", ha="center", va="center", fontsize=8, color="0.45", rotation=90)
                continue
            r = b.median / a.median
            colour = VERDICT_COLOUR[verdict]
            eb = r * (b.noise_pct or 0) / 100
            ea = (a.noise_pct or 0) / 100
            ax.errorbar(x, r, yerr=eb + ea, fmt="none", ecolor=colour, elinewidth=1, capsize=4)
            ax.errorbar(x, r, yerr=eb, fmt="none", ecolor=colour, elinewidth=4, alpha=0.55)
            hollow = verdict in ("too few samples", "????")
            ax.plot([x], [r], "o", color=colour, markerfacecolor="white" if hollow else colour, markersize=6, zorder=4)
            if verdict in ("SLOWER", "FASTER"):
                below = r > (lo + hi) / 2  # in the upper half: the label goes under the whisker, inside the axes
                ax.annotate(f"{verdict} {100 * (r - 1):+.0f}%", (x, r - eb - ea if below else r + eb + ea), textcoords="offset points",
                            xytext=(0, -3 if below else 3), ha="center", va="top" if below else "bottom", fontsize=7.5, color=colour,
                            fontweight="bold", rotation=90)
        ax.set_ylim(lo - pad, hi + 3 * pad)
        ax.set_xticks(range(len(versions)), versions, fontsize=9, rotation=90 if len(versions) > 10 else 0)
        ax.set_title(labels[cid], fontsize=10)
    # The last panel: geometric mean of B/A per version over the judged pairs.
    ax = axes[-1]
    for x, v in enumerate(versions):
        rs = [b.median / a.median for (cid, vv), (a, b, verdict) in pairs.items() if vv == v and verdict]
        counts = {k: sum(1 for (cid, vv), p in pairs.items() if vv == v and p[2] == k) for k in ("SLOWER", "FASTER")}
        if not rs:
            continue
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        colour = VERDICT_COLOUR["SLOWER"] if counts["SLOWER"] else VERDICT_COLOUR["FASTER"] if counts["FASTER"] else "0.55"
        ax.bar(x, g - 1, 0.7, bottom=1, color=colour)
        ax.annotate(f"{g:.3f}", (x, max(g, 1)), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7.5, rotation=90)
    ax.axhline(1, color="0.3", linewidth=0.8)
    ax.set_ylim(lo - pad, hi + 3 * pad)
    ax.set_xticks(range(len(versions)), versions, fontsize=9, rotation=90 if len(versions) > 10 else 0)
    ax.set_title("geometric mean of B/A per version\n(red: some SLOWER, green: some FASTER)", fontsize=9.5)
    finish_panels(axes, "B median ÷ A median")
    handles = [Line2D([], [], marker="o", linestyle="none", color=VERDICT_COLOUR[k], label=k,
                      markerfacecolor="white" if k in ("too few samples", "????") else VERDICT_COLOUR[k]) for k in VERDICT_COLOUR]
    handles += [Line2D([], [], color="0.3", linewidth=4, alpha=0.55, label="B's noise"),
                Line2D([], [], color="0.3", linewidth=1, label="A's + B's noise (crossing 1: within noise)")]
    key_ax.axis("off")
    key_ax.legend(handles=handles, loc="center", fontsize=9, title="verdict (knnbench compare's rule)", title_fontsize=9)
    n = {k: sum(1 for p in pairs.values() if p[2] == k) for k in VERDICT_COLOUR}
    nc = sum(1 for p in pairs.values() if p[2] is None)
    fig.suptitle(f"B/A per case and version: {n['SLOWER']} SLOWER, {n['FASTER']} FASTER, {n['SAME']} SAME"
                 f"{f', {nc} not compared (n/c: skipped, failed or other inputs)' if nc else ''}; grey band: ±{threshold:g}% "
                 f"(--threshold)\nA = {da.title()}\nB = {db.title()}", fontsize=10.5)
    return fig


# ---------------------------------------------------------------- main

def output_paths(stem, name):
    base = stem if stem.endswith("-" + name) else f"{stem}-{name}"
    return base + ".png", base + ".svg"


def save(fig, stem, name, written):
    for path in output_paths(stem, name):
        try:
            fig.savefig(path, dpi=DPI, metadata={"Date": None} if path.endswith(".svg") else None)
        except OSError as e:
            fail(f"{path}: {e.strerror}")
        written.append(path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description="Plot knnbench results (see the top of this file for the figures).")
    ap.add_argument("results", nargs="?", help="results JSON written by knnbench --json")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="plot B/A for two results files instead")
    ap.add_argument("-o", "--output", help="X.png or X.svg: writes X-<figure>.png and .svg (default: the results file's stem)")
    ap.add_argument("--only", help=f"comma list of figures: {', '.join(FIGURES)} (bars-FAMILY for one family)")
    ap.add_argument("--highlight", metavar="VERSION", help="the version of the vs-floor figure")
    ap.add_argument("--h2d-gbps", type=float, help="host-to-device bandwidth for the copy floor instead of the measured one")
    ap.add_argument("--threshold", type=float, default=5.0, help="compare: minimum effect in percent (as knnbench compare)")
    ap.add_argument("--min-change", type=float, default=0.05, help="compare: minimum absolute effect in ms (as knnbench compare)")
    ap.add_argument("--alpha", type=float, default=0.01, help="compare: significance level (as knnbench compare)")
    ap.add_argument("--list-verdicts", action="store_true", help="compare: print 'version case verdict' lines, draw nothing")
    args = ap.parse_args()
    global plt
    if bool(args.results) == bool(args.compare):
        fail("give one results file, or --compare A.json B.json")
    if args.h2d_gbps is not None and not args.h2d_gbps > 0:
        fail(f"--h2d-gbps {args.h2d_gbps}: expected a bandwidth > 0")
    if args.output and os.path.splitext(args.output)[1].lower() not in (".png", ".svg"):
        fail(f"-o {args.output}: expected a .png or .svg file name")
    only = set(filter(None, (args.only or "").split(",")))
    for name in only:
        if name not in FIGURES and not name.startswith("bars-"):
            fail(f"--only {name}: expected one of {', '.join(FIGURES)} or bars-FAMILY")

    if args.compare:
        da, db = Doc(args.compare[0]), Doc(args.compare[1])
        pairs = compare_pairs(da, db, args.threshold, args.alpha, args.min_change)
        if args.list_verdicts:
            for (cid, v), (a, b, verdict) in sorted(pairs.items(), key=lambda t: (version_key(t[0][1]), t[0][0])):
                if verdict:
                    print(f"{v} {cid} {verdict}")
            return 0
        if not any(p[2] for p in pairs.values()):
            fail(f"{da.path} and {db.path}: no pair of passing results with the same inputs to compare")
        stem = os.path.splitext(args.output)[0] if args.output else (
            os.path.splitext(da.path)[0] + "-vs-" + os.path.splitext(os.path.basename(db.path))[0])
        plt = import_matplotlib()
        written = []
        save(fig_compare(da, db, pairs, args.threshold), stem, "compare", written)
        print("plot.py: wrote " + " ".join(written))
        return 0

    doc = Doc(args.results)
    if args.highlight and args.highlight not in doc.versions:
        fail(f"--highlight {args.highlight}: no result for it in {args.results} (versions there: {', '.join(doc.versions)})")
    if "vs-floor" in only and not args.highlight:
        fail("--only vs-floor needs --highlight VERSION")
    if "compare" in only:
        fail("--only compare needs --compare A.json B.json")
    stem = os.path.splitext(args.output or args.results)[0]
    bw, bw_note = h2d_bandwidth(doc, args.h2d_gbps)
    plt = import_matplotlib()
    want = lambda name: not only or name in only or (name.startswith("bars-") and "bars" in only)
    figures = []
    if want("heatmap"):
        figures.append(("heatmap", lambda: fig_heatmap(doc, bw, bw_note)))
    for family, versions in family_of(doc):
        if want(f"bars-{family}") and not any(r.median is not None for r in doc.results if r.family == family):
            reasons = sorted({r.reason or r.status for r in doc.results if r.family == family})
            print(f"plot.py: no bars-{family}: no {family} version passed ({'; '.join(reasons)[:200]})", file=sys.stderr)
        elif want(f"bars-{family}"):
            figures.append((f"bars-{family}", lambda f=family, vs=versions: fig_bars(doc, f, vs, bw, bw_note)))
    if want("trees") and any(r.family == "tree" for r in doc.results):
        figures.append(("trees", lambda: fig_trees(doc, bw, bw_note)))
    if args.highlight and want("vs-floor"):
        figures.append(("vs-floor", lambda: fig_vs_floor(doc, args.highlight, bw, bw_note)))
    if not figures:
        fail(f"--only {args.only}: nothing of that kind in {args.results}")
    written = []
    for name, make in figures:
        fig = make()
        if fig is not None:
            save(fig, stem, name, written)
    print("plot.py: wrote " + " ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
