#!/usr/bin/env python3
"""npy_columns.py IN.npy COLS OUT.npy: the first COLS columns of a 2-D little-endian int32 or float32
.npy file (format 1.0), with the Python standard library only (scripts/setup/fetch-data.sh truth)."""
import ast
import struct
import sys


def main(src, cols, out):
    b = open(src, "rb").read()
    if b[:8] != b"\x93NUMPY\x01\x00":
        sys.exit(f"npy_columns.py: {src}: not a .npy 1.0 file")
    hl = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + hl].decode("latin1"))
    rows, have = h["shape"]
    if h["descr"] not in ("<i4", "<f4") or h["fortran_order"] or cols > have:
        sys.exit(f"npy_columns.py: {src}: {h}: expected a C-order <i4 or <f4 array of at least {cols} columns")
    data = b[10 + hl:]
    body = b"".join(data[r * have * 4:(r * have + cols) * 4] for r in range(rows))
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (h["descr"], rows, cols)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    open(out, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
