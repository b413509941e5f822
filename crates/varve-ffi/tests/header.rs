//! `include/varve.h` is what cbindgen generates from this crate today.
//!
//! The header is checked in so C users need no Rust tooling; this test
//! regenerates it in memory (with `cbindgen.toml`) and fails when the
//! checked-in file differs. Refresh it with
//! `VARVE_BLESS_HEADER=1 cargo test -p varve-ffi --test header`.

use std::path::{Path, PathBuf};

const REFRESH: &str = "VARVE_BLESS_HEADER=1 cargo test -p varve-ffi --test header";

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    crate_dir().join("../../include/varve.h")
}

fn generate() -> String {
    let dir = crate_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("reading cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen failed on crates/varve-ffi/src: {e}"));
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen writes UTF-8")
}

/// The first line where `a` and `b` differ, for the failure message.
fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  checked in: {x}\n  generated:  {y}", i + 1);
        }
    }
    format!(
        "one is a prefix of the other ({} vs {} lines)",
        a.lines().count(),
        b.lines().count()
    )
}

#[test]
fn checked_in_header_is_current() {
    let generated = generate();
    let path = header_path();
    if std::env::var_os("VARVE_BLESS_HEADER").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("include/")).expect("create include/");
        std::fs::write(&path, &generated).expect("write include/varve.h");
        eprintln!("wrote {}", path.display());
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}\nGenerate it with: {REFRESH}",
            path.display()
        )
    });
    assert!(
        checked_in == generated,
        "include/varve.h is out of date with crates/varve-ffi/src ({})\n\
         Refresh it with: {REFRESH}",
        first_difference(&checked_in, &generated)
    );
}

#[test]
fn header_declares_every_exported_function() {
    // Every `#[unsafe(no_mangle)]` function of the crate is in the header:
    // guards against a function cbindgen skips silently (say, one in a
    // module it did not parse).
    let header = generate();
    let src = crate_dir().join("src");
    let mut missing = Vec::new();
    let mut count = 0;
    for entry in std::fs::read_dir(&src).expect("src/") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("source");
        for line in text.lines() {
            let Some(rest) = line.split("extern \"C\" fn ").nth(1) else {
                continue;
            };
            let name = rest.split('(').next().unwrap_or_default();
            count += 1;
            if !header.contains(&format!("{name}(")) {
                missing.push(format!("{name} ({})", rel(&path)));
            }
        }
    }
    assert!(count > 50, "found only {count} exported functions");
    assert!(missing.is_empty(), "not in the header: {missing:?}");
}

fn rel(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
