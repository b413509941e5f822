use super::*;
use crate::blob::file_writer::BlobFileWriter;
use crate::blob::format::Creator;
use crate::io::PosixFs;

fn value(i: usize) -> Vec<u8> {
    // Sizes around the page and the chunk: empty, small, exactly a page,
    // a page and a bit, larger than a chunk.
    let len = [0, 17, 4096, 4100, 70_000, 4096, 1][i % 7];
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}

fn write_file(dir: &Path, n: usize) -> (PathBuf, Vec<(Vec<u8>, BlobPointer)>) {
    let path = dir.join("000009.blob");
    let mut w = BlobFileWriter::create(&PosixFs, &path, 9, 16 * 1024, Creator::WriteLane, false)
        .expect("create");
    let mut out = Vec::new();
    for i in 0..n {
        let v = value(i);
        let p = w.add(format!("key{i:05}").as_bytes(), &v).expect("add");
        out.push((v, p));
    }
    let meta = w.finish().expect("finish");
    assert_eq!(meta.value_count, n as u64);
    assert_eq!(meta.size, std::fs::metadata(&path).expect("stat").len());
    assert_eq!(meta.size % PAGE as u64, 0);
    (path, out)
}

#[test]
fn values_read_back_by_pointer_and_chunks_walk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, written) = write_file(dir.path(), 60);
    for direct in [false, true] {
        let r = match BlobReader::open(&PosixFs, &path, direct) {
            Ok(r) => r,
            Err(e) if direct => {
                crate::io::uring::skip_or_fail(
                    "direct blob reads",
                    &format!("O_DIRECT unavailable: {e}"),
                );
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(r.header().file_number, 9);
        for (v, p) in &written {
            assert_eq!(&r.get(p).expect("get"), v);
            if v.len() == 4096 && p.aligned_span().1 == 4096 {
                assert_eq!(p.offset % PAGE as u64, 0);
            }
        }
        let walk = r.chunks(true).expect("walk");
        let footer = walk.footer.expect("sealed");
        assert_eq!(walk.tail, 0);
        assert_eq!(footer.chunk_count, walk.chunks.len() as u64);
        let keys: Vec<Vec<u8>> = walk
            .chunks
            .iter()
            .flat_map(|c| c.entries.iter().map(|e| e.key.clone()))
            .collect();
        let want: Vec<Vec<u8>> = (0..60).map(|i| format!("key{i:05}").into_bytes()).collect();
        assert_eq!(keys, want);
    }
}

#[test]
fn damage_is_corruption_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, written) = write_file(dir.path(), 30);
    let clean = std::fs::read(&path).expect("read");
    // A flipped byte inside a value: that value's get fails, naming the
    // file and the value's offset; the others read back.
    let (v, p) = written
        .iter()
        .find(|(v, _)| v.len() > 100)
        .expect("a value");
    let mut bytes = clean.clone();
    bytes[p.offset as usize + 50] ^= 0x08;
    std::fs::write(&path, &bytes).expect("write");
    let r = BlobReader::open(&PosixFs, &path, false).expect("open");
    match r.get(p) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, path);
            assert_eq!(offset, p.offset);
        }
        other => panic!("expected Corruption, got {:?}", other.map(|x| x.len())),
    }
    assert!(v.len() > 100);
    assert!(matches!(r.chunks(true), Err(Error::Corruption { .. })));
    // A pointer past the end, or into another file: Corruption.
    let past = BlobPointer {
        offset: clean.len() as u64,
        ..*p
    };
    assert!(matches!(r.get(&past), Err(Error::Corruption { .. })));
    let other = BlobPointer {
        file_number: 10,
        ..*p
    };
    assert!(matches!(r.get(&other), Err(Error::Corruption { .. })));

    // Cut in the middle of the last chunk: whole chunks before the cut are
    // found, the rest is a tail, and there is no footer.
    std::fs::write(&path, &clean).expect("write");
    let whole = BlobReader::open(&PosixFs, &path, false).expect("open");
    let big = whole
        .chunks(false)
        .expect("walk")
        .chunks
        .into_iter()
        .rfind(|c| c.len >= 2 * PAGE as u64)
        .expect("a chunk of two pages or more");
    let cut = (big.offset + PAGE as u64) as usize;
    std::fs::write(&path, &clean[..cut]).expect("write");
    let r = BlobReader::open(&PosixFs, &path, false).expect("open");
    let walk = r.chunks(true).expect("walk");
    assert!(walk.footer.is_none());
    assert!(walk.tail > 0);
    let end = walk.chunks.last().map_or(PAGE as u64, |c| c.offset + c.len);
    assert_eq!(end, big.offset);
    assert_eq!(end + walk.tail, cut as u64);

    // A damaged header: the file is refused.
    let mut bytes = clean.clone();
    bytes[30] ^= 1;
    std::fs::write(&path, &bytes).expect("write");
    assert!(matches!(
        BlobReader::open(&PosixFs, &path, false),
        Err(Error::Corruption { .. })
    ));
}
