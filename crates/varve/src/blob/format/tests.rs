use std::path::Path;

use proptest::prelude::*;

use super::*;

fn path() -> &'static Path {
    Path::new("000007.blob")
}

fn is_corruption(r: Result<impl std::fmt::Debug>) -> bool {
    matches!(r, Err(Error::Corruption { .. }))
}

#[test]
fn header_round_trip_and_rejections() {
    let h = BlobHeader {
        file_number: 7,
        chunk_size: 65536,
        creator: Creator::Compaction,
    };
    let page = h.encode();
    assert_eq!(page.len(), PAGE);
    assert_eq!(BlobHeader::decode(&page, path()).expect("decodes"), h);

    // Another version: a clear UnsupportedVersion, once the CRC is right.
    let mut v2 = page.clone();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = mask(crc32c(&v2[..PAGE_CRC_AT]));
    v2[PAGE_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
    match BlobHeader::decode(&v2, path()) {
        Err(Error::UnsupportedVersion {
            found, supported, ..
        }) => assert_eq!((found, supported), (2, FORMAT_VERSION)),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }

    // Any flipped byte: Corruption at offset 0, never a different header.
    for i in (0..PAGE).step_by(97).chain([0, 8, 12, 24, PAGE - 1]) {
        let mut bad = page.clone();
        bad[i] ^= 0x40;
        assert!(is_corruption(BlobHeader::decode(&bad, path())), "byte {i}");
    }
    assert!(is_corruption(BlobHeader::decode(&page[..100], path())));
}

#[test]
fn footer_round_trip_and_rejections() {
    let f = BlobFooter {
        chunk_count: 3,
        value_count: 70,
        value_bytes: 70 * 4096,
    };
    let page = f.encode();
    assert_eq!(page.len(), PAGE);
    assert_eq!(
        BlobFooter::decode(&page, path(), 8192).expect("ok"),
        Some(f)
    );
    // A page that is not a footer (a chunk): not an error, just no footer.
    assert_eq!(
        BlobFooter::decode(&[0u8; PAGE], path(), 0).expect("ok"),
        None
    );
    let mut bad = page.clone();
    bad[20] ^= 1;
    match BlobFooter::decode(&bad, path(), 8192) {
        Err(Error::Corruption { offset, .. }) => assert_eq!(offset, 8192),
        other => panic!("expected Corruption, got {other:?}"),
    }
}

#[test]
fn pointer_round_trip_and_span() {
    for p in [
        BlobPointer {
            file_number: 0,
            offset: 0,
            length: 0,
            crc: 0,
        },
        BlobPointer {
            file_number: u64::MAX,
            offset: u64::MAX / 2,
            length: u32::MAX,
            crc: u32::MAX,
        },
    ] {
        let e = p.encode();
        assert!(e.len() <= MAX_POINTER_LEN);
        assert_eq!(BlobPointer::decode(&e), Some(p));
        assert_eq!(BlobPointer::decode(&e[..e.len() - 1]), None);
        let mut longer = e.clone();
        longer.push(0);
        assert_eq!(BlobPointer::decode(&longer), None);
    }
    let p = |offset, length| BlobPointer {
        file_number: 1,
        offset,
        length,
        crc: 0,
    };
    assert_eq!(p(4096, 4096).aligned_span(), (4096, 4096));
    assert_eq!(p(4000, 200).aligned_span(), (0, 8192));
    assert_eq!(p(8192 + 10, 1).aligned_span(), (8192, 4096));
    assert_eq!(p(4096, 0).aligned_span(), (4096, 0));
}

#[test]
fn chunk_round_trip_keeps_page_sized_values_aligned() {
    let mut b = ChunkBuilder::new();
    assert!(b.is_empty());
    let big = vec![0xabu8; 4096];
    let values: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"k1".to_vec(), big.clone()),
        (b"k2".to_vec(), big.clone()),
        (b"k3".to_vec(), Vec::new()),
        (b"k4".to_vec(), b"small".to_vec()),
    ];
    for (i, (k, v)) in values.iter().enumerate() {
        let predicted = b.size_with(k.len(), v.len());
        let (off, crc) = b.add(k, v);
        assert!(b.size() <= predicted, "size_with never undershoots");
        assert_eq!(crc, value_crc(v));
        if i < 2 {
            assert_eq!(off as usize % PAGE, 0, "4 KiB values stay page-aligned");
        }
    }
    assert_eq!(b.count(), 4);
    let chunk = b.finish();
    assert!(b.is_empty());
    assert_eq!(chunk.len() % PAGE, 0);
    let entries = parse_chunk(&chunk, path(), 4096).expect("parses");
    assert_eq!(entries.len(), values.len());
    for (e, (k, v)) in entries.iter().zip(&values) {
        assert_eq!(&e.key, k);
        assert_eq!(e.value_len as usize, v.len());
        let at = e.value_offset as usize;
        assert_eq!(&chunk[at..at + v.len()], &v[..]);
    }
    check_values(&chunk, &entries, path(), 4096).expect("values check");

    // A pointer to the second value reads it back from an aligned span.
    let e = &entries[1];
    let p = BlobPointer {
        file_number: 7,
        offset: 4096 + u64::from(e.value_offset),
        length: e.value_len,
        crc: e.crc,
    };
    let (start, len) = p.aligned_span();
    assert_eq!((start, len), (8192, 4096));
    let span = &chunk[(start - 4096) as usize..(start - 4096) as usize + len];
    assert_eq!(
        value_from_span(&p, span, start, path()).expect("ok"),
        &big[..]
    );
    let wrong = BlobPointer {
        crc: p.crc ^ 1,
        ..p
    };
    assert!(is_corruption(value_from_span(&wrong, span, start, path())));
    let past = BlobPointer { length: 8192, ..p };
    assert!(is_corruption(value_from_span(&past, span, start, path())));
}

#[test]
fn damaged_chunk_is_corruption_never_other_entries() {
    let mut b = ChunkBuilder::new();
    for i in 0..20u64 {
        b.add(format!("key{i:04}").as_bytes(), &vec![i as u8; 300]);
    }
    let chunk = b.finish();
    let good = parse_chunk(&chunk, path(), 0).expect("parses");
    let values_len: usize = good.iter().map(|e| e.value_len as usize).sum();
    for i in 0..chunk.len() {
        let mut bad = chunk.clone();
        bad[i] ^= 0x10;
        match parse_chunk(&bad, path(), 0) {
            // The value bytes and the padding are not covered by the trailer:
            // the values' own CRCs catch the first, the second is unused.
            Ok(entries) => {
                assert_eq!(entries, good, "byte {i}: same entries or an error");
                let checked = check_values(&bad, &entries, path(), 0);
                assert_eq!(checked.is_err(), i < values_len, "byte {i}");
            }
            Err(Error::Corruption { .. }) => {}
            Err(e) => panic!("byte {i}: {e:?}"),
        }
    }
    assert!(is_corruption(parse_chunk(&chunk[..PAGE - 1], path(), 0)));
}

proptest! {
    #[test]
    fn chunks_round_trip(items in proptest::collection::vec(
        (proptest::collection::vec(any::<u8>(), 0..40),
         proptest::collection::vec(any::<u8>(), 0..9000)), 1..12)) {
        let mut b = ChunkBuilder::new();
        for (k, v) in &items {
            let predicted = b.size_with(k.len(), v.len());
            b.add(k, v);
            prop_assert!(b.size() <= predicted);
        }
        let chunk = b.finish();
        let entries = parse_chunk(&chunk, path(), 0).expect("parses");
        check_values(&chunk, &entries, path(), 0).expect("checks");
        prop_assert_eq!(entries.len(), items.len());
        for (e, (k, v)) in entries.iter().zip(&items) {
            prop_assert_eq!(&e.key, k);
            let at = e.value_offset as usize;
            prop_assert_eq!(&chunk[at..at + v.len()], &v[..]);
        }
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..9000)) {
        let _ = BlobPointer::decode(&bytes);
        let _ = BlobHeader::decode(&bytes, path());
        let _ = BlobFooter::decode(&bytes, path(), 0);
        let mut page_multiple = bytes.clone();
        page_multiple.resize(bytes.len().div_ceil(PAGE).max(1) * PAGE, 0);
        if let Ok(entries) = parse_chunk(&page_multiple, path(), 0) {
            let _ = check_values(&page_multiple, &entries, path(), 0);
        }
    }
}
