#!/usr/bin/env python3
"""Writes configs/data/far-clusters-3d-{references,queries}.f32: clustered 3-D points far from the
origin, like cities in Earth-centred coordinates (kilometres). Raw little-endian float32, row-major,
3 floats a point. 16 cluster centres on the sphere of radius 6371 within a patch of about 2000 km;
each point is a centre plus a normal offset of 5 km per coordinate. The ‖q‖² + ‖r‖² − 2 q·r recipe
(faiss's knn_L2sqr from 20 queries on) loses about 4 km² of each squared distance here to float
rounding (‖q‖² ≈ 4·10⁷), more than the gaps between the nearest neighbours: configs/peers.json
shows its answers failing validation. Deterministic (Python's Mersenne Twister, fixed seed).
Usage: scripts/setup/make_far_clusters.py [OUTPUT_DIR]   (default: configs/data next to this script)"""
import math
import os
import random
import struct
import sys

RADIUS_KM = 6371.0
CLUSTERS = 16
SIGMA_KM = 5.0


def centres(rng):
    out = []
    for _ in range(CLUSTERS):
        lat = math.radians(45.0 + rng.uniform(-9.0, 9.0))
        lon = math.radians(5.0 + rng.uniform(-12.0, 12.0))
        out.append((RADIUS_KM * math.cos(lat) * math.cos(lon), RADIUS_KM * math.cos(lat) * math.sin(lon), RADIUS_KM * math.sin(lat)))
    return out


def points(rng, cs, count):
    data = []
    for _ in range(count):
        c = cs[rng.randrange(CLUSTERS)]
        data.extend(c[t] + rng.gauss(0.0, SIGMA_KM) for t in range(3))
    return struct.pack("<%df" % len(data), *data)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs", "data")
    rng = random.Random(20240607)
    cs = centres(rng)
    for name, count in (("references", 8192), ("queries", 1024)):
        with open(os.path.join(out_dir, "far-clusters-3d-%s.f32" % name), "wb") as f:
            f.write(points(rng, cs, count))


if __name__ == "__main__":
    main()
