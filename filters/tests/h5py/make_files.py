"""Writes the HDF5 test files with h5py (a writer that is not ours) and the
expected values as raw bytes (numpy's own read of each dataset or hyperslab).

Usage: make_files.py OUTDIR  -> OUTDIR/*.h5, OUTDIR/*.bin, OUTDIR/manifest.json
"""
import json
import os
import sys

import h5py
import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(13)
manifest = []


def data(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -5000), min(info.max, 5000), size=shape, endpoint=True).astype(dt)


def expect(fname, name, ds, sel=None):
    arr = ds[...] if sel is None else ds[tuple(slice(s, s + c) for s, c in zip(*sel))]
    tag = name.strip("/").replace("/", "_") + ("" if sel is None else "_sel")
    path = os.path.join(out, tag + ".bin")
    with open(path, "wb") as f:
        f.write(np.ascontiguousarray(arr).tobytes())
    entry = {"file": fname, "dataset": name, "elem": ds.dtype.itemsize, "expected": tag + ".bin"}
    if sel is not None:
        entry["start"], entry["count"] = list(sel[0]), list(sel[1])
    manifest.append(entry)


fname = "filters.h5"
with h5py.File(os.path.join(out, fname), "w") as f:
    cases = [
        ("d1_i32_deflate", (1000,), "<i4", (128,), dict(compression="gzip", compression_opts=4)),
        ("d2_f64_shuffle_deflate", (50, 37), "<f8", (16, 10), dict(shuffle=True, compression="gzip")),
        ("d3_u16_all", (9, 10, 11), "<u2", (4, 5, 3), dict(shuffle=True, compression="gzip", fletcher32=True)),
        ("d2_i8_fletcher", (64, 64), "i1", (32, 32), dict(fletcher32=True)),
        ("d2_i16be_shuffle_deflate", (33, 20), ">i2", (8, 8), dict(shuffle=True, compression="gzip", compression_opts=9)),
        ("d1_f32_shuffle_fletcher", (300,), "<f4", (64,), dict(shuffle=True, fletcher32=True)),
        ("d3_i64_deflate_divides", (8, 6, 4), "<i8", (4, 3, 2), dict(compression="gzip", compression_opts=1)),
        ("d2_f32_shuffle_rows", (100, 64), "<f4", (32, 64), dict(shuffle=True)),
    ]
    for name, shape, dtype, chunks, kw in cases:
        ds = f.create_dataset(name, data=data(shape, dtype), chunks=chunks, **kw)
        expect(fname, "/" + name, ds)
    # A hyperslab of the 3-D one, crossing chunk edges.
    expect(fname, "/d3_u16_all", f["d3_u16_all"], sel=((1, 2, 3), (5, 6, 7)))
    # Chunks never written: the fill value.
    ds = f.create_dataset("d1_u64_sparse", shape=(100,), dtype="<u8", chunks=(10,), fillvalue=7, compression="gzip")
    ds[20:35] = np.arange(15, dtype="<u8")
    expect(fname, "/d1_u64_sparse", ds)
    # Not chunked.
    f.create_dataset("contiguous", data=np.arange(10, dtype="<i4"))

# The LZ4 plugin filter (32004), written by the plugin itself.
try:
    import hdf5plugin

    fname = "plugins.h5"
    with h5py.File(os.path.join(out, fname), "w") as f:
        ds = f.create_dataset("d2_f32_lz4", data=data((100, 100), "<f4"), chunks=(25, 50), **hdf5plugin.LZ4())
        expect(fname, "/d2_f32_lz4", ds)
        blocks = np.tile(np.arange(64, dtype="<i4"), 500).reshape(100, 320)
        ds = f.create_dataset("d2_i32_lz4_blocks", data=blocks, chunks=(50, 160), **hdf5plugin.LZ4(nbytes=4096))
        expect(fname, "/d2_i32_lz4_blocks", ds)
        # A filter we do not implement (Blosc, 32001).
        f.create_dataset("blosc", data=np.arange(100, dtype="<i4"), chunks=(10,), **hdf5plugin.Blosc())
except ImportError as e:
    print(f"hdf5plugin missing, no plugin files: {e}", file=sys.stderr)

# Corrupt chunks, made through h5py's direct chunk API.
fname = "corrupt.h5"
with h5py.File(os.path.join(out, fname), "w") as f:
    ds = f.create_dataset("fletcher_bad", data=np.arange(256, dtype="<i4").reshape(16, 16), chunks=(8, 8), fletcher32=True)
    mask, raw = ds.id.read_direct_chunk((8, 0))
    bad = bytearray(raw)
    bad[5] ^= 0x40
    ds.id.write_direct_chunk((8, 0), bytes(bad), mask)
    # The same in whole rows with shuffle: a dataset the device loader takes (its checksum checked on the device).
    ds = f.create_dataset("fletcher_bad_rows", data=np.arange(1024, dtype="<i4").reshape(64, 16), chunks=(16, 16), shuffle=True, fletcher32=True)
    mask, raw = ds.id.read_direct_chunk((16, 0))
    bad = bytearray(raw)
    bad[5] ^= 0x40
    ds.id.write_direct_chunk((16, 0), bytes(bad), mask)
    ds = f.create_dataset("deflate_truncated", data=np.arange(4096, dtype="<i4"), chunks=(1024,), compression="gzip")
    mask, raw = ds.id.read_direct_chunk((2048,))
    ds.id.write_direct_chunk((2048,), raw[: len(raw) // 2], mask)
    # An empty dataset our writer fills (then h5py reads it back).
    f.create_dataset("write_target", shape=(40, 30), dtype="<i4", chunks=(16, 16), shuffle=True, compression="gzip", fletcher32=True)

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump({"h5py": h5py.version.version, "hdf5": h5py.version.hdf5_version, "datasets": manifest}, f, indent=1)
