#!/usr/bin/env python3
"""Plot v16's active queries per wave (seed 004's Figures 19-21): one line per (k, pruning test).

Usage: scripts/plots/plot_waves.py A.json [B.json ...] -o out.png [--title TEXT]

Reads every passing v16 result of the given knnbench results files whose path carries the wave trace
("active per wave (wave:queries): 1:m 2:... "; v16 keeps every wave up to 120, then waves about 5 %
apart and the last) and draws the active queries against the wave, both axes logarithmic, the box
test solid and the median test dashed, with the mean leaves visited per query in the legend. Waves
are only comparable when every wave is sorted (v16.final=off): a result run with the final steps
is drawn all the same, and its legend says so. A result that did not pass is left out. Exit codes as
scripts/plots/plot.py: 0 written, 2 a usage error or nothing to draw, 3 matplotlib is missing.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (the shared loader and matplotlib import)

TRACE = re.compile(r"active per wave \(wave:queries\): ([0-9: ]+)")
LEAVES = re.compile(r"leaves per query ([0-9.]+)")


def curve(path):
    """(waves, queries) from a v16 path, or None when the path has no trace."""
    m = TRACE.search(path)
    if not m:
        return None
    pairs = [p.split(":") for p in m.group(1).split()]
    return [int(w) for w, _ in pairs], [int(q) for _, q in pairs]


def main():
    args = plot.line_plot_args(__doc__, "the cases' m, n and topk")
    lines = []
    for path in args.results:
        doc = plot.Doc(path)
        for i, r in enumerate(doc.doc["results"]):
            if r.get("version") != "v16" or r.get("status") != "pass":
                continue
            c = curve(r.get("path") or "")
            if c is None:
                print(f"plot_waves.py: {path}: results[{i}]: no wave trace in its path (an older v16?): left out",
                      file=sys.stderr)
                continue
            p = r["path"]
            test = "median" if "median test" in p else "box"
            leaves = LEAVES.search(p)
            final = "final steps on" in p
            lines.append((r["case"]["k"], test, c, leaves.group(1) if leaves else "?", final, r["case"]))
    if not lines:
        plot.fail("no passing v16 result with a wave trace in " + ", ".join(args.results))
    plt = plot.import_matplotlib()
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = {}
    for k, test, (waves, queries), leaves, final, _ in sorted(lines, key=lambda x: (x[0], x[1])):
        colour = colours.setdefault(k, f"C{len(colours)}")
        label = f"d = {k}, {test} test: {len(waves) and waves[-1]} waves, {leaves} leaves/query" + (
            " (final steps on)" if final else "")
        ax.plot(waves, queries, linestyle="-" if test == "box" else "--", color=colour, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wave")
    ax.set_ylabel("active queries")
    cases = {(c["m"], c["n"], c["topk"]) for *_, c in lines}
    ax.set_title(args.title or "v16: active queries per wave (" + "; ".join(
        f"m = {m}, n = {n}, top-{t}" for m, n, t in sorted(cases)) + ")")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output)
    print(f"plot_waves.py: wrote {args.output} ({len(lines)} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
