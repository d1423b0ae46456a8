//! Real HDF5 files.
