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

/// The calls that return no `varve_status`: the exceptions the header's
/// ERRORS paragraph lists, with the reasons (constructors returning a
/// handle, destructors, `varve_free`, static strings, accessors).
const NO_STATUS: &[&str] = &[
    "varve_version",
    "varve_status_name",
    "varve_free",
    "varve_options_create",
    "varve_options_destroy",
    "varve_readoptions_create",
    "varve_readoptions_destroy",
    "varve_writeoptions_create",
    "varve_writeoptions_destroy",
    "varve_writebatch_create",
    "varve_writebatch_destroy",
    "varve_writebatch_count",
    "varve_pinned_value",
    "varve_pinned_destroy",
    "varve_snapshot_release",
    "varve_snapshot_sequence",
    "varve_iter_destroy",
    "varve_iter_valid",
    "varve_iter_key",
    "varve_iter_value",
    "varve_anchors_destroy",
    "varve_ranges_destroy",
];

/// Every function declaration of `header` as (return type, name,
/// parameters), comments and preprocessor lines left out.
fn declarations(header: &str) -> Vec<(String, String, Vec<String>)> {
    let mut code = String::new();
    let mut rest = header;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("comments are closed");
        rest = &rest[start + end + 2..];
    }
    code.push_str(rest);
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = Vec::new();
    for statement in code.split(';') {
        // What follows an `extern "C" {` or the end of a type.
        let statement = statement
            .rsplit(['{', '}'])
            .next()
            .unwrap_or_default()
            .trim();
        let (Some(open), true) = (statement.find('('), statement.ends_with(')')) else {
            continue;
        };
        let head = &statement[..open];
        let name_at = head.rfind([' ', '*']).map_or(0, |i| i + 1);
        let params = statement[open + 1..statement.len() - 1]
            .split(',')
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        out.push((
            head[..name_at].trim().to_owned(),
            head[name_at..].to_owned(),
            params,
        ));
    }
    out
}

#[test]
fn every_call_returns_a_status_but_the_documented_exceptions() {
    // The rule: every call returns a status and, on error, a
    // message the caller frees with varve_free.
    let header = generate();
    let functions = declarations(&header);
    assert!(functions.len() > 50, "parsed only {functions:?}");
    let mut wrong = Vec::new();
    for (ret, name, params) in &functions {
        let status_call =
            ret == "varve_status" && params.last().is_some_and(|p| p == "char **errptr");
        if status_call == NO_STATUS.contains(&name.as_str()) {
            wrong.push(format!("{ret} {name}({})", params.join(", ")));
        }
    }
    assert!(
        wrong.is_empty(),
        "these calls break the rule (a varve_status and a trailing char **errptr), \
         or are listed in NO_STATUS but follow it: {wrong:#?}"
    );
    // Each exception is named, with its reason, in the ERRORS paragraph.
    let errors = header
        .split(" * ERRORS.")
        .nth(1)
        .and_then(|t| t.split(" * OWNERSHIP.").next())
        .expect("the header's ERRORS paragraph");
    let undocumented: Vec<&&str> = NO_STATUS.iter().filter(|f| !errors.contains(**f)).collect();
    assert!(
        undocumented.is_empty(),
        "the ERRORS paragraph (cbindgen.toml) does not name {undocumented:?}"
    );
}

fn rel(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
