#!/usr/bin/env python3
"""Regenerates tests/corpus/results/: results files that `report` and `compare` must refuse,
each a copy of base.json (a file knnbench wrote, two passes of v0) with one thing made wrong,
plus expected.tsv (file, a part its error message must contain: the field).

Run from anywhere: python3 tests/corpus/make_results_corpus.py. Deterministic; rewrites every
file but base.json.
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results")

with open(os.path.join(OUT, "base.json")) as f:
    BASE = json.load(f)

files = {}  # name -> (text, expected substring)


def variant(name, edit, expect):
    doc = copy.deepcopy(BASE)
    edit(doc)
    files[name + ".json"] = (json.dumps(doc, indent=1), expect)


def raw(name, text, expect):
    files[name + ".json"] = (text, expect)


def set_in(path, value):
    def edit(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


def delete(path):
    def edit(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return edit


r0 = ["results", 0]
samples = BASE["results"][0]["samples_ms"]
variant("median_negative", set_in(r0 + ["stats", "median_ms"], -1.0), "results[0].stats.median_ms: -1")
variant("median_null", set_in(r0 + ["stats", "median_ms"], None), "results[0].stats.median_ms")
# Inside [min, max], but not the samples' median.
variant("median_not_of_samples", set_in(r0 + ["stats", "median_ms"], (min(samples) + sorted(samples)[1]) / 2), "the median of samples_ms is")
variant("median_outside_min_max", set_in(r0 + ["stats", "min_ms"], max(samples) * 2), "results[0].stats.median_ms")
variant("min_negative", set_in(r0 + ["stats", "min_ms"], -0.5), "results[0].stats.min_ms")
variant("samples_count_contradicts", set_in(r0 + ["stats", "samples"], 7), "results[0].stats.samples: 7, but samples_ms holds 3")
variant("samples_zero_for_a_pass", lambda d: (set_in(r0 + ["stats", "samples"], 0)(d), delete(r0 + ["samples_ms"])(d)), "results[0].stats.samples")
variant("sample_negative", set_in(r0 + ["samples_ms", 1], -3.0), "results[0].samples_ms[1]")
variant("stats_missing_for_a_pass", delete(r0 + ["stats"]), "results[0].stats")
variant("status_unknown", set_in(r0 + ["status"], "maybe"), "results[0].status")
variant("status_missing", delete(r0 + ["status"]), "results[0].status")
variant("duplicate_result", lambda d: d["results"].append(copy.deepcopy(d["results"][0])), "results[2].version: case 0 with v0 again (already results[0])")
variant("duplicate_result_later", lambda d: d["results"].insert(1, copy.deepcopy(d["results"][1])), "results[2].version: case 1 with v0 again (already results[1])")
text = json.dumps(BASE, indent=1)
key = '"median_ms": '
at = text.index(key) + len(key)
raw("number_1e400", text[:at] + "1e400" + text[text.index(",", at):], "1e400")
raw("number_minus_1e400", text[:at] + "-1e400" + text[text.index(",", at):], "1e400")

for name in os.listdir(OUT):
    if name != "base.json":
        os.remove(os.path.join(OUT, name))
for name, (data, _) in sorted(files.items()):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(data + "\n")
with open(os.path.join(OUT, "expected.tsv"), "w") as f:
    for name, (_, expect) in sorted(files.items()):
        f.write(f"{name}\t{expect}\n")
print(f"{len(files)} files in {OUT}")
