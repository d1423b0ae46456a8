"""bench_file.py shuffle FILE MIB: a MIB MiB float32 dataset /data, shuffle only, 1 MiB chunks of whole rows.
bench_file.py write FILE MIB: a MIB MiB float32 dataset /data, shuffle + deflate, 1 MiB chunks.
bench_file.py read FILE: prints the seconds h5py's dataset[...] takes (the read only)."""
import sys
import time

import h5py
import numpy as np

if sys.argv[1] == "shuffle":
    rows = (int(sys.argv[3]) << 18) // 1024
    with h5py.File(sys.argv[2], "w") as f:
        ds = f.create_dataset("data", shape=(rows, 1024), dtype="<f4", chunks=(256, 1024), shuffle=True)
        ds[...] = np.arange(rows * 1024, dtype="<f4").reshape(rows, 1024)
elif sys.argv[1] == "write":
    n = int(sys.argv[3]) << 18  # float32 elements
    rows = n // 1024
    with h5py.File(sys.argv[2], "w") as f:
        ds = f.create_dataset("data", shape=(rows, 1024), dtype="<f4", chunks=(256, 1024), shuffle=True, compression="gzip", compression_opts=4)
        step = 4096
        rng = np.random.default_rng(1)
        for r in range(0, rows, step):
            base = np.linspace(r, r + step, step * 1024, dtype="<f4").reshape(step, 1024)
            ds[r : r + step] = base + rng.integers(0, 16, size=(step, 1024)).astype("<f4") / 16
else:
    with h5py.File(sys.argv[2], "r") as f:
        ds = f["data"]
        t = time.perf_counter()
        a = ds[...]
        print(time.perf_counter() - t)
        assert a.nbytes > 0
