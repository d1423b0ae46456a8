//! Files written by h5py (not by us), read with our direct chunk path and
//! compared element by element with h5py's own read.
//!
//! Needs `python3` with `h5py` (and `hdf5plugin` for the LZ4 files) and
//! libhdf5. Without them every test prints why and skips, unless
//! `UR_REQUIRE_H5PY=1` is set (CI sets it): then a missing piece fails.

mod common;

use common::every_device;
use common::h5py::{assert_same_elements, entries, files, manifest, python, script};
use ur_filters::h5::{self, Dataset, Selection};
use ur_filters::{FilterError, H5Error, FILTER_DEFLATE};

#[test]
fn every_h5py_dataset_reads_element_for_element() {
    let Some(dir) = files() else { return };
    let m = manifest(dir);
    println!(
        "files by h5py {} (HDF5 {}); reading with {}",
        m["h5py"],
        m["hdf5"],
        h5::available().unwrap()
    );
    let entries = entries(dir);
    assert!(entries.len() >= 10, "the script wrote {} datasets", entries.len());
    let mut plugin = 0;
    for e in entries {
        let want = e.want();
        let spec = e.spec();
        let ds = Dataset::open(&e.file, &e.dataset, false).unwrap_or_else(|err| panic!("{spec}: {err}"));
        assert_eq!(ds.element_size(), e.elem);
        plugin += usize::from(e.file.ends_with("plugins.h5"));
        let sel = match e.hyperslab {
            Some((start, count)) => Selection { start, count },
            None => Selection::all(ds.shape()),
        };
        let mut got = vec![0xAAu8; want.len()];
        let report = ds
            .read_into(&sel, &mut got)
            .unwrap_or_else(|err| panic!("{spec}: {err}"));
        assert_same_elements(&format!("{spec} {sel:?}"), &got, &want, ds.element_size());
        println!(
            "{spec} {:?} filters {:?}: {report:?}",
            ds.shape(),
            ds.filters().iter().map(|f| f.id).collect::<Vec<_>>()
        );
    }
    if plugin == 0 {
        println!("note: no LZ4 plugin datasets (hdf5plugin missing)");
    }
}

#[test]
fn unallocated_chunks_read_as_the_fill_value() {
    let Some(dir) = files() else { return };
    let ds = Dataset::open(dir.join("filters.h5"), "/d1_u64_sparse", false).unwrap();
    let mut got = vec![0u8; ds.byte_len()];
    let r = ds.read_into(&Selection::all(ds.shape()), &mut got).unwrap();
    assert_eq!((r.chunks, r.unallocated), (10, 8));
    assert_eq!(&got[..8], &7u64.to_le_bytes());
}

#[test]
fn our_encoding_matches_the_stored_chunks_bit_for_bit() {
    let Some(dir) = files() else { return };
    // Shuffle + Fletcher-32: no compressor, so every stored byte is determined.
    for name in ["/d1_f32_shuffle_fletcher", "/d2_i8_fletcher"] {
        let ds = Dataset::open(dir.join("filters.h5"), name, false).unwrap();
        let origins = h5::chunks_meeting(&Selection::all(ds.shape()), ds.chunk_shape());
        for o in origins {
            let (stored, mask) = ds.read_raw_chunk(&o).unwrap().unwrap();
            let raw = ds.pipeline().decode(stored.clone(), mask, ds.chunk_bytes()).unwrap();
            assert_eq!(ds.pipeline().encode(raw, mask).unwrap(), stored, "{name} chunk {o:?}");
        }
    }
}

#[test]
fn deflate_encoding_roundtrips_and_is_compared_with_h5py_zlib() {
    let Some(dir) = files() else { return };
    // zlib-rs promises zlib's output at the same level; h5py's wheel carries its own zlib.
    let ds = Dataset::open(dir.join("filters.h5"), "/d1_i32_deflate", false).unwrap();
    assert_eq!(ds.filters()[0].id, FILTER_DEFLATE);
    let (stored, mask) = ds.read_raw_chunk(&[0]).unwrap().unwrap();
    let raw = ds.pipeline().decode(stored.clone(), mask, ds.chunk_bytes()).unwrap();
    let ours = ds.pipeline().encode(raw.clone(), mask).unwrap();
    assert_eq!(ds.pipeline().decode(ours.clone(), mask, ds.chunk_bytes()).unwrap(), raw);
    println!(
        "deflate chunk 0: h5py {} bytes, ours {} bytes, identical: {}",
        stored.len(),
        ours.len(),
        ours == stored
    );
}

#[test]
fn our_writes_read_back_by_h5py() {
    let Some(dir) = files() else { return };
    let path = dir.join("write_copy.h5");
    std::fs::copy(dir.join("corrupt.h5"), &path).unwrap();
    let values: Vec<u8> = (0..40 * 30).flat_map(|i: i32| (i * 37 - 500).to_le_bytes()).collect();
    {
        let ds = Dataset::open(&path, "/write_target", true).unwrap();
        assert_eq!(ds.write_all(&values).unwrap(), 6); // 3 x 2 chunks of 16 x 16
        assert_eq!(ds.read_all().unwrap(), values);
    }
    let out = dir.join("write_target.bin");
    let st = python()
        .arg(script("dump.py"))
        .arg(&path)
        .arg("/write_target")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    assert_same_elements("h5py's read of our write", &std::fs::read(out).unwrap(), &values, 4);
}

#[test]
fn corrupt_and_unsupported_inputs_are_typed_errors_naming_the_chunk() {
    let Some(dir) = files() else { return };
    let corrupt = dir.join("corrupt.h5");
    let ds = Dataset::open(&corrupt, "/fletcher_bad", false).unwrap();
    let mut dst = vec![0xAAu8; ds.byte_len()];
    match ds.read_into(&Selection::all(ds.shape()), &mut dst) {
        Err(H5Error::Chunk {
            chunk,
            name: "fletcher32",
            source: FilterError::Checksum { .. },
            ..
        }) => assert_eq!(chunk, vec![8, 0]),
        other => panic!("expected a fletcher32 mismatch at chunk [8, 0]: {other:?}"),
    }
    assert!(dst.iter().all(|&b| b == 0), "nothing partial left in the destination");

    let ds = Dataset::open(&corrupt, "/deflate_truncated", false).unwrap();
    let err = ds.read_all().unwrap_err();
    assert!(
        matches!(&err, H5Error::Chunk { chunk, name: "deflate", source: FilterError::Corrupt { .. }, .. } if chunk == &vec![2048]),
        "{err}"
    );
    println!("{err}");

    let err = Dataset::open(dir.join("filters.h5"), "/contiguous", false).unwrap_err();
    assert!(matches!(err, H5Error::NotChunked { .. }), "{err}");

    let ds = Dataset::open(dir.join("filters.h5"), "/d3_u16_all", false).unwrap();
    let sel = Selection {
        start: vec![5, 0, 0],
        count: vec![5, 1, 1],
    };
    let err = ds.read_into(&sel, &mut [0u8; 10]).unwrap_err();
    assert!(matches!(err, H5Error::OutOfRange { .. }), "{err}");

    if dir.join("plugins.h5").exists() {
        let err = Dataset::open(dir.join("plugins.h5"), "/blosc", false).unwrap_err();
        assert!(
            matches!(
                err,
                H5Error::Pipeline {
                    source: FilterError::Unknown { id: 32001 },
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn every_h5py_dataset_lands_in_a_logical_buffer_at_every_place() {
    use ur_memory_manager::{Config, MemoryManager};

    let Some(dir) = files() else { return };
    // Host, the native device and every OpenCL device (PoCL's two,
    // rusticl's, Intel's CPU runtime: whichever are present).
    let (rt, locations) = every_device("logical_buffer_at_every_place");
    let config = Config {
        measure_routes: false,
        ..Config::default()
    };
    let mm = MemoryManager::with_config(rt, &locations, config).unwrap();
    let places = mm.places();
    println!(
        "places: {:?}",
        places.iter().map(|p| mm.place_name(*p).unwrap()).collect::<Vec<_>>()
    );
    assert_eq!(places.len(), locations.len() + 1, "the host and every device");
    const OFFSET: usize = 64;
    for e in entries(dir) {
        let want = e.want();
        let spec = e.spec();
        let ds = Dataset::open(&e.file, &e.dataset, false).unwrap();
        let sel = match e.hyperslab {
            Some((start, count)) => Selection { start, count },
            None => Selection::all(ds.shape()),
        };
        for &place in &places {
            let kind = h5::place_kind(&mm, place).unwrap();
            let what = format!("{spec} {sel:?} at {kind}");
            let buf = mm.create_buffer(want.len() + OFFSET).unwrap();
            let report = ds
                .read_logical(&sel, &mm, buf, place, OFFSET)
                .unwrap_or_else(|err| panic!("{what}: {err}"));
            assert_eq!(report.bytes, want.len(), "{what}");
            let valid = mm.valid_copies(buf).unwrap();
            // The whole selection is current at `place`, read back from there.
            let Some((_, range, bytes)) = valid
                .iter()
                .find(|(p, r, _)| *p == place && r.start <= OFFSET && r.end >= OFFSET + want.len())
            else {
                panic!("{what}: not current at the place: {valid:?}");
            };
            let at = OFFSET - range.start;
            assert_same_elements(&what, &bytes[at..at + want.len()], &want, e.elem);
            // And every other copy agrees with h5py where it holds the data.
            for (p, r, bytes) in valid.iter().filter(|(_, r, _)| r.start >= OFFSET) {
                assert_same_elements(
                    &format!("{what}: the copy at {}", mm.place_name(*p).unwrap()),
                    bytes,
                    &want[r.start - OFFSET..r.end - OFFSET],
                    e.elem,
                );
            }
            mm.release(buf).unwrap();
        }
        println!(
            "{spec}: {} bytes at {} places; plan of its first chunk at the last place:\n{}",
            want.len(),
            places.len(),
            ds.explain_chunk(
                &h5::chunks_meeting(&sel, ds.chunk_shape())[0],
                &h5::place_kind(&mm, *places.last().unwrap()).unwrap()
            )
            .unwrap()
        );
    }

    // A corrupt chunk leaves the buffer's contents and validity as they were.
    let bad = Dataset::open(dir.join("corrupt.h5"), "/fletcher_bad", false).unwrap();
    let buf = mm.create_buffer(bad.byte_len()).unwrap();
    mm.write(buf, 0, &vec![5u8; bad.byte_len()]).unwrap();
    let before = mm.residency(buf).unwrap();
    for place in mm.places() {
        assert!(bad
            .read_logical(&Selection::all(bad.shape()), &mm, buf, place, 0)
            .is_err());
        assert_eq!(mm.residency(buf).unwrap(), before);
        let mut back = vec![0u8; bad.byte_len()];
        mm.read(buf, 0, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 5));
    }
}
