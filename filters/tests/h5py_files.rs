//! Files written by h5py (not by us), read with our direct chunk path and
//! compared element by element with h5py's own read.
//!
//! Needs `python3` with `h5py` (and `hdf5plugin` for the LZ4 files) and
//! libhdf5. Without them every test prints why and skips, unless
//! `UR_REQUIRE_H5PY=1` is set (CI sets it): then a missing piece fails.

mod common;

use common::{assert_same_elements, files, manifest, python, script, u64s};
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
    let entries = m["datasets"].as_array().unwrap();
    assert!(entries.len() >= 10, "the script wrote {} datasets", entries.len());
    let mut plugin = 0;
    for e in entries {
        let (file, name) = (e["file"].as_str().unwrap(), e["dataset"].as_str().unwrap());
        let want = std::fs::read(dir.join(e["expected"].as_str().unwrap())).unwrap();
        let ds = Dataset::open(dir.join(file), name, false).unwrap_or_else(|err| panic!("{file}:{name}: {err}"));
        assert_eq!(ds.element_size(), e["elem"].as_u64().unwrap() as usize);
        plugin += usize::from(file == "plugins.h5");
        let sel = match e.get("start") {
            Some(s) => Selection {
                start: u64s(s),
                count: u64s(&e["count"]),
            },
            None => Selection::all(ds.shape()),
        };
        let mut got = vec![0xAAu8; want.len()];
        let report = ds
            .read_into(&sel, &mut got)
            .unwrap_or_else(|err| panic!("{file}:{name}: {err}"));
        assert_same_elements(&format!("{file}:{name} {sel:?}"), &got, &want, ds.element_size());
        println!(
            "{file}:{name} {:?} filters {:?}: {report:?}",
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
fn hyperslab_lands_in_a_logical_buffer_at_every_place() {
    use std::sync::Arc;
    use ur_memory_manager::MemoryManager;

    let Some(dir) = files() else { return };
    let mut rt = ur_api::Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    let mm = MemoryManager::new(Arc::new(rt), &[ur_api::Location::new(ctx, dev)]).unwrap();
    let m = manifest(dir);
    let e = m["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e.get("start").is_some())
        .unwrap();
    let want = std::fs::read(dir.join(e["expected"].as_str().unwrap())).unwrap();
    let ds = Dataset::open(
        dir.join(e["file"].as_str().unwrap()),
        e["dataset"].as_str().unwrap(),
        false,
    )
    .unwrap();
    let sel = Selection {
        start: u64s(&e["start"]),
        count: u64s(&e["count"]),
    };
    for place in mm.places() {
        let buf = mm.create_buffer(want.len() + 64).unwrap();
        let report = ds.read_logical(&sel, &mm, buf, place, 64).unwrap();
        assert_eq!(report.bytes, want.len());
        let kind = h5::place_kind(&mm, place).unwrap();
        let valid = mm.valid_copies(buf).unwrap();
        assert!(
            valid.iter().any(|(p, r, _)| *p == place && r.contains(&64)),
            "{kind}: {valid:?}"
        );
        for (p, r, bytes) in valid.iter().filter(|(_, r, _)| r.start >= 64) {
            assert_same_elements(
                &format!("{kind} copy at {p:?}"),
                bytes,
                &want[r.start - 64..r.end - 64],
                2,
            );
        }
        println!(
            "{kind}: {report:?}; plan of chunk 0:\n{}",
            ds.explain_chunk(&[0, 0, 0], &kind).unwrap()
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
