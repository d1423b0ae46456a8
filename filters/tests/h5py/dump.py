"""Prints nothing; writes h5py's read of FILE:/DATASET as raw bytes to OUT."""
import sys

import h5py
import numpy as np

with h5py.File(sys.argv[1], "r") as f:
    with open(sys.argv[3], "wb") as out:
        out.write(np.ascontiguousarray(f[sys.argv[2]][...]).tobytes())
