//! Replays every committed corpus and regression input through its target.

use super::*;

/// Root of the cargo-fuzz crate (`fuzz/` at the repository root).
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every file of `dir`, sorted; panics if `dir` is missing.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_target_has_a_fuzz_binary_and_a_corpus() {
    for t in TARGETS {
        let bin = fuzz_dir().join("fuzz_targets").join(format!("{t}.rs"));
        assert!(bin.is_file(), "missing {}", bin.display());
    }
}

/// Replays every committed corpus file: a non-empty corpus per target
/// is required (no silent skip); regression inputs are optional per
/// target but their directory must exist.
#[test]
fn corpus_and_regressions_replay() {
    let mut total = 0;
    for t in TARGETS {
        let corpus = files_in(&fuzz_dir().join("corpus").join(t));
        assert!(!corpus.is_empty(), "fuzz/corpus/{t} is empty");
        for f in &corpus {
            let data = std::fs::read(f).expect("read corpus file");
            assert!(run_target(t, &data));
            total += 1;
        }
    }
    let regressions = fuzz_dir().join("regressions");
    for entry in std::fs::read_dir(&regressions).expect("fuzz/regressions exists") {
        let dir = entry.expect("dir entry").path();
        let Some(t) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !dir.is_dir() {
            continue;
        }
        assert!(TARGETS.contains(&t), "regressions for unknown target {t}");
        for f in files_in(&dir) {
            let data = std::fs::read(&f).expect("read regression input");
            assert!(run_target(t, &data));
            total += 1;
        }
    }
    assert!(total > TARGETS.len());
}

/// The seeds are what their decoders accept: a replayed seed WAL
/// delivers all its records, a seed table opens and iterates, etc.
#[test]
fn seeds_are_valid_inputs() {
    let seeds = seeds();
    for t in TARGETS {
        assert!(seeds.iter().any(|(s, _, _)| s == t), "no seed for {t}");
    }
    for (t, name, data) in &seeds {
        let what = format!("{t}/{name}");
        match *t {
            "wal_v1" | "wal_v2" => {
                let fs = MemFs::default();
                let path = fs.put("/x/000007.log", data[1..].to_vec());
                let mut n = 0;
                let o = wal::replay(&fs, &path, LOG_NUMBER, |p, _| {
                    WriteBatch::from_encoded(p).expect("seed batch decodes");
                    n += 1;
                    Ok(())
                })
                .expect(&what);
                assert_eq!(o.tail, TailStatus::Clean, "{what}");
                assert_eq!(o.records, n);
                // The checksum fix-up leaves a valid file unchanged.
                let mut fixed = data[1..].to_vec();
                if *t == "wal_v1" {
                    fix_v1_checksums(&mut fixed);
                } else {
                    fix_v2_checksums(&mut fixed);
                }
                assert!(fixed == data[1..], "fix-up changed {what}");
            }
            "write_batch" => {
                WriteBatch::from_encoded(data).expect(&what);
            }
            "sst_table" => {
                let mut fixed = data[1..].to_vec();
                fix_sst_checksums(&mut fixed);
                assert!(fixed == data[1..], "fix-up changed {what}");
                let len = fixed.len() as u64;
                let file = Arc::new(MemFile {
                    data: fixed,
                    path: "/x.sst".into(),
                });
                let t = Table::open(file, len, TableReadOptions::default()).expect(&what);
                let mut it = t.iter();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() {
                    n += 1;
                    it.next();
                }
                it.status().expect(&what);
                assert_eq!(n, sample_entries().len(), "{what}");
            }
            "sst_block" => {
                Block::parse(data.clone(), "/x", 0).expect(&what);
            }
            "bloom_filter" => {
                let n = usize::from(u16::from_le_bytes([data[1], data[2]]));
                BloomFilter::decode(data[3..3 + n].to_vec()).expect(&what);
            }
            "manifest_edit" => {
                let edit = VersionEdit::decode(data).expect(&what);
                if name == "edit-4" || name == "edit-5" {
                    let mut b = crate::version::Builder::new(&base_version());
                    b.apply(&edit).expect(&what);
                }
            }
            "manifest" => {
                let fs = MemFs::default();
                fs.put("/d/CURRENT", b"MANIFEST-000007\n".to_vec());
                fs.put("/d/MANIFEST-000007", data[1..].to_vec());
                let vs = VersionSet::recover_read_only(Arc::new(fs), Path::new("/d")).expect(&what);
                assert_eq!(vs.current().total_files(), 3, "{what}");
            }
            other => panic!("seed for unknown target {other}"),
        }
        assert!(run_target(t, data));
    }
}

#[test]
fn junk_is_rejected_quietly() {
    let junk: Vec<Vec<u8>> = vec![
        Vec::new(),
        vec![0],
        vec![0xff; 100],
        (0..=255u8).collect(),
        vec![FLAG_FIX_CHECKSUMS; 200],
        vec![FLAG_RAW | FLAG_FIX_CHECKSUMS; 40],
    ];
    for t in TARGETS {
        for j in &junk {
            assert!(run_target(t, j));
        }
    }
    assert!(!run_target("nope", b""));
}
