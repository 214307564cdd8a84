#!/usr/bin/env python3
"""Plot one version against the PCIe copy floor and the best of the other versions, per case.

Usage: scripts/plot_floor.py results.json --version v15 -o out.png [--gbps 54.7] [--others v1-v13]

The copy floor of a case is its reference bytes (n x k x 4) over --gbps GB/s: the time to bring the
references to the GPU once. "Best of the others" is the fastest passing result among --others in the
same file (only the versions that file ran). Exit codes: 0 written, 2 usage error, 3 no matplotlib.
"""
import argparse
import json
import sys


def version_number(v):
    return int(v[1:]) if v.startswith("v") and v[1:].isdigit() else None


def in_range(v, spec):
    lo, _, hi = spec.partition("-")
    num = version_number(v)
    return num is not None and version_number(lo) <= num <= version_number(hi or lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--version", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--gbps", type=float, default=54.7)
    ap.add_argument("--others", default="v1-v13")
    a = ap.parse_args()
    try:
        with open(a.results) as f:
            results = json.load(f)["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_floor.py: {a.results}: {e}", file=sys.stderr)
        return 2
    cases = {}
    for r in results:
        if r["status"] != "pass":
            continue
        c = r["case"]
        entry = cases.setdefault(c["id"], {"case": c, "mine": None, "best": None})
        t = r["stats"]["median_ms"]
        if r["version"] == a.version:
            entry["mine"] = t
        elif in_range(r["version"], a.others) and (entry["best"] is None or t < entry["best"][1]):
            entry["best"] = (r["version"], t)
    rows = [e for _, e in sorted(cases.items()) if e["mine"] is not None]
    if not rows:
        print(f"plot_floor.py: {a.results}: no passing result of {a.version}", file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_floor.py: matplotlib is not installed (try /usr/bin/python3)", file=sys.stderr)
        return 3
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.8))
    axes = axes if len(rows) > 1 else [axes]
    for ax, e in zip(axes, rows):
        c = e["case"]
        floor = c["n"] * c["k"] * 4 / (a.gbps * 1e9) * 1e3
        labels, values, colours = ["copy floor"], [floor], ["#999999"]
        if e["best"]:
            labels.append(f"best {e['best'][0]}")
            values.append(e["best"][1])
            colours.append("#4c72b0")
        labels.append(a.version)
        values.append(e["mine"])
        colours.append("#dd8452")
        bars = ax.bar(labels, values, color=colours)
        for b, v in zip(bars, values):
            ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
        ax.set_title(f"case {c['id']}: k={c['k']} m={c['m']} n={c['n']}\n{a.version} = {e['mine'] / floor:.2f} x floor",
                     fontsize=9)
        ax.set_ylabel("ms per call (median)")
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"{a.version} against the copy floor (references at {a.gbps} GB/s) and the best of {a.others} in the same run",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
