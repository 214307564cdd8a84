#!/usr/bin/env python3
"""Plot a knnbench results file: time per version, speed-up over v0, and build/query split for trees.

Usage: scripts/plot.py results.json -o out.png   (or .svg, .pdf)

Versions run along x in numeric order (v0, v1, ..., v13). A version that was skipped or failed on a
case is marked at the bottom of the axis (x = skip, red X = fail), never drawn as zero.

Exit codes: 0 written, 2 a usage error (bad file or arguments), 3 matplotlib is missing.
"""
import argparse
import json
import math
import os
import sys

SCHEMA_VERSION = 1
# Debian's python3-matplotlib installs for /usr/bin/python3; another python3 first on PATH
# (pyenv, a venv) may not see it.
SYSTEM_PYTHON = "/usr/bin/python3"
Line2D = Rectangle = None  # from matplotlib, once imported


def import_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle

        return plt, Line2D, Rectangle
    except ImportError:
        pass
    if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK)
            and not os.environ.get("KNN_PLOT_REEXEC")):
        os.environ["KNN_PLOT_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0])] + sys.argv[1:])  # the script run (plot_sweep.py imports this)
    print(f"plot.py: matplotlib is not installed for {sys.executable}.\n"
          "Install it with:  sudo apt-get install python3-matplotlib", file=sys.stderr)
    sys.exit(3)


def fail(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    sys.exit(2)


def version_key(v):
    try:
        return (int(v[1:]), v)
    except ValueError:
        return (1 << 30, v)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except ValueError as e:  # JSONDecodeError, or bytes that are not UTF-8
        fail(f"{path}: not valid JSON: {e}")
    if not isinstance(doc, dict) or doc.get("schema_version") != SCHEMA_VERSION:
        found = doc.get("schema_version") if isinstance(doc, dict) else type(doc).__name__
        fail(f"{path}: schema_version {found}, this script reads {SCHEMA_VERSION}")
    if not isinstance(doc.get("results"), list):
        fail(f"{path}: no results array")
    return doc


def median_ms(r):
    if r.get("status") != "pass":
        return None
    m = (r.get("stats") or {}).get("median_ms")
    return m if isinstance(m, (int, float)) and m > 0 else None


def phase_ms(r, name):
    m = ((r.get("phases") or {}).get(name) or {}).get("median_ms")
    return m if isinstance(m, (int, float)) and m >= 0 else None


def machine_title(doc):
    host = doc.get("host") or {}
    devices = doc.get("devices") or []
    names = {}
    for d in devices:
        names[d.get("name", "?")] = names.get(d.get("name", "?"), 0) + 1
    gpus = ", ".join(f"{n}× {name}" if n > 1 else name for name, n in names.items()) or "no GPU"
    date = (doc.get("meta") or {}).get("date_utc", "")
    return f"knnbench on {host.get('hostname', '?')} ({host.get('cpu_model', '?')}), {gpus}" + (f", {date}" if date else "")


def case_label(c):
    return f"case {c['id']}: k={c.get('k')} m={c.get('m')} n={c.get('n')}"


def mark_missing(ax, x, status, color, row=0, rows=1):
    """A skipped or failed version: a marker in a band at the bottom of the axis, in the case's
    colour, spread sideways by case so that markers do not hide each other."""
    x = x + (row - (rows - 1) / 2) * min(0.12, 0.6 / rows)
    style = dict(marker="X", markersize=8, color="red", markeredgecolor=color) if status == "fail" else dict(marker="x", markersize=7, color=color)
    ax.plot([x], [0.035], transform=ax.get_xaxis_transform(), clip_on=False, linestyle="none", **style)
    return "fail" if status == "fail" else "skip"


def shade_band(ax):
    ax.add_patch(Rectangle((0, 0), 1, 0.07, transform=ax.transAxes, facecolor="0.93", edgecolor="none", zorder=0))


def missing_handles(seen, skip_colour):
    handles = []
    if "skip" in seen:
        handles.append(Line2D([], [], marker="x", color=skip_colour, linestyle="none", label="skipped (not run)"))
    if "fail" in seen:
        handles.append(Line2D([], [], marker="X", color="red", linestyle="none", label="failed"))
    return handles


def keep_bottom_band_free(ax, values):
    """Lowers a log axis so that no data point falls in the band where missing versions are marked."""
    values = [v for v in values if v is not None and v > 0 and not math.isnan(v)]
    if not values:
        return
    lo, hi = math.log10(min(values)), math.log10(max(values))
    span = max(hi - lo, 1.0)
    ax.set_ylim(10 ** (lo - 0.14 * span), 10 ** (hi + 0.06 * span))


def main():
    ap = argparse.ArgumentParser(description="Plot a knnbench results JSON file.")
    ap.add_argument("results", help="results JSON written by knnbench --json")
    ap.add_argument("-o", "--output", required=True, help="image to write: .png, .svg or .pdf")
    ap.add_argument("--dpi", type=int, default=120, help="resolution of a PNG (default 120)")
    args = ap.parse_args()
    ext = os.path.splitext(args.output)[1].lower()
    if ext not in (".png", ".svg", ".pdf"):
        fail(f"-o {args.output}: expected a .png, .svg or .pdf file name")
    doc = load(args.results)
    global Line2D, Rectangle
    plt, Line2D, Rectangle = import_matplotlib()

    results = [r for r in doc["results"] if isinstance(r, dict) and isinstance(r.get("case"), dict)]
    if not results:
        fail(f"{args.results}: no results to plot")
    versions = sorted({r["version"] for r in results}, key=version_key)
    cases = {}
    for r in results:
        cases.setdefault(r["case"]["id"], r["case"])
    case_ids = sorted(cases)
    by = {(r["case"]["id"], r["version"]): r for r in results}
    xpos = {v: i for i, v in enumerate(versions)}
    cmap = plt.get_cmap("tab20" if len(case_ids) > 10 else "tab10")
    colour = {cid: cmap(i % cmap.N) for i, cid in enumerate(case_ids)}

    trees = [r for r in results if phase_ms(r, "build") is not None or r.get("family") == "tree"]
    panels = 3 if trees else 2
    tree_slots = len({r["case"]["id"] for r in trees}) * max(1.0, 0.5 * len({r["version"] for r in trees}))
    width = max(12.0, 0.75 * len(versions) + 6, 1.7 * tree_slots + 3)
    fig, axes = plt.subplots(panels, 1, figsize=(width, 4.6 * panels), squeeze=False)
    axes = axes[:, 0]
    fig.suptitle(machine_title(doc), fontsize=11)
    missing_seen = set()  # "skip", "fail": what the case legend must explain

    # 1. Median time per version, one line per case.
    ax = axes[0]
    plotted = []
    for row, cid in enumerate(case_ids):
        xs, ys = [], []
        for v in versions:
            r = by.get((cid, v))
            m = median_ms(r) if r else None
            xs.append(xpos[v])
            ys.append(m if m is not None else math.nan)  # a gap, never a zero
            if r and m is None:
                missing_seen.add(mark_missing(ax, xpos[v], r.get("status"), colour[cid], row, len(case_ids)))
        ax.plot(xs, ys, marker="o", markersize=4, color=colour[cid], label=case_label(cases[cid]))
        plotted += ys
    ax.set_yscale("log")
    keep_bottom_band_free(ax, plotted)
    ax.set_ylabel("median wall time per call (ms)")
    ax.set_title("Time per version (log scale)")

    # 2. Speed-up over v0 per version.
    ax = axes[1]
    plotted = [1.0]
    if "v0" in versions:
        for row, cid in enumerate(case_ids):
            base = median_ms(by[(cid, "v0")]) if (cid, "v0") in by else None
            if base is None:
                continue
            xs, ys = [], []
            for v in versions:
                r = by.get((cid, v))
                m = median_ms(r) if r else None
                xs.append(xpos[v])
                ys.append(base / m if m is not None else math.nan)
                if r and m is None:
                    mark_missing(ax, xpos[v], r.get("status"), colour[cid], row, len(case_ids))
            ax.plot(xs, ys, marker="o", markersize=4, color=colour[cid], label=case_label(cases[cid]))
            plotted += ys
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_yscale("log")
        keep_bottom_band_free(ax, plotted)
        ax.set_title("Speed-up over v0 (v0 median / version median; log scale)")
    else:
        ax.text(0.5, 0.5, "no v0 results: no speed-up to show", ha="center", va="center", transform=ax.transAxes)
        ax.set_title("Speed-up over v0")
    ax.set_ylabel("speed-up over v0 (×)")

    for ax in axes[:2]:
        ax.set_xticks(range(len(versions)))
        ax.set_xticklabels(versions)
        ax.set_xlim(-0.5, len(versions) - 0.5)
        ax.set_xlabel("version")
        ax.grid(True, which="major", axis="y", alpha=0.3)

    # 3. Trees: build and query stacked per (case, tree version).
    if trees:
        ax = axes[2]
        tree_versions = sorted({r["version"] for r in trees}, key=version_key)
        tree_cases = sorted({r["case"]["id"] for r in trees})
        width = 0.8 / len(tree_versions)
        hatches = ["", "//", "..", "xx", "\\\\", "oo"]
        labels, plotted, tree_missing = [], [], set()
        for ci, cid in enumerate(tree_cases):
            for vi, v in enumerate(tree_versions):
                x = ci + (vi - (len(tree_versions) - 1) / 2) * width
                r = by.get((cid, v))
                if r is None:
                    continue
                build, query = phase_ms(r, "build"), phase_ms(r, "query")
                if r.get("status") != "pass" or build is None or query is None:
                    tree_missing.add(mark_missing(ax, x, r.get("status"), "black"))
                    continue
                h = hatches[vi % len(hatches)]
                ax.bar(x, query, width * 0.9, color="tab:orange", hatch=h, edgecolor="black", linewidth=0.5)
                ax.bar(x, build, width * 0.9, bottom=query, color="tab:blue", hatch=h, edgecolor="black", linewidth=0.5)
                total = build + query
                plotted += [query, total]
                ax.annotate(f"{100 * build / total:.0f}% build" if total > 0 else "", (x, total), textcoords="offset points", xytext=(0, 2),
                            ha="center", fontsize=7)
            labels.append(case_label(cases[cid]).replace(": ", "\n"))
        ax.set_yscale("log")
        keep_bottom_band_free(ax, plotted)
        ax.set_xticks(range(len(tree_cases)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_xlim(-0.6, len(tree_cases) - 0.4)
        ax.set_xlabel("case")
        ax.set_ylabel("median time per call (ms), stacked")
        ax.set_title(f"Trees: build (blue) and query (orange) per call; bars left to right: {', '.join(tree_versions)}")
        ax.grid(True, which="major", axis="y", alpha=0.3)
        handles = [plt.Rectangle((0, 0), 1, 1, color="tab:blue", label="build"), plt.Rectangle((0, 0), 1, 1, color="tab:orange", label="query")]
        handles += [plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch=hatches[i % len(hatches)], label=v)
                    for i, v in enumerate(tree_versions)]
        handles += missing_handles(tree_missing, "black")
        if tree_missing:
            shade_band(ax)
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)

    # Case legend once, beside the first panel, with the meaning of the markers.
    handles, labels = axes[0].get_legend_handles_labels()
    extra = missing_handles(missing_seen, "grey")
    handles += extra
    labels += [h.get_label() for h in extra]
    if missing_seen:
        for ax in axes[:2]:
            shade_band(ax)
    axes[0].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)

    fig.tight_layout(rect=(0, 0, 1, 0.97))
    try:
        fig.savefig(args.output, dpi=args.dpi, bbox_inches="tight")
    except OSError as e:
        fail(f"{args.output}: {e.strerror}")
    print(f"plot.py: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
