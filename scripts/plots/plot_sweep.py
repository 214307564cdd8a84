#!/usr/bin/env python3
"""Plot a size sweep: median time per call against m (queries), one line per version, log-log.

Usage: scripts/plots/plot_sweep.py A.json [B.json ...] -o out.png [--title TEXT]

Reads every passing result of the given knnbench results files (several files may hold different
versions of the same cases) and draws one line per version over the cases' m. A result that did not
pass is left out of its line (never drawn as zero). Exit codes as scripts/plots/plot.py: 0 written, 2 a
usage error, 3 matplotlib is missing.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (the shared loader, matplotlib import and version order)


def main():
    args = plot.line_plot_args(__doc__, "the cases' k, n and topk")
    docs = [plot.Doc(p) for p in args.results]
    lines = {}  # version -> {m: median ms}
    shapes = set()
    for doc in docs:
        for r in doc.results:
            if r.median is None:  # skipped or failed: left out of its line, never drawn as zero
                continue
            c = r.case
            lines.setdefault(r.version, {})[c["m"]] = r.median
            shapes.add((c.get("k"), c.get("n"), c.get("topk"), c.get("distribution")))
    if not lines:
        plot.fail("no passing results to plot")
    plt = plot.import_matplotlib()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for version in sorted(lines, key=plot.version_key):
        points = sorted(lines[version].items())
        ax.plot([m for m, _ in points], [ms for _, ms in points], marker="o", label=version)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("m (queries)")
    ax.set_ylabel("median time per call (ms)")
    shape = ", ".join(f"k={k} n={n} topk={t} {d}" for k, n, t, d in sorted(shapes, key=str))
    ax.set_title(args.title or shape, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.text(0.01, 0.01, docs[-1].title(), fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(args.output, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
