//! Shared by `tests/cpp_api.rs` and `tests/polar_race.rs` (included with
//! `#[path]`; cargo does not build it as a test of its own): where the
//! repository and this build's `libvarve_ffi.a` are, how to show a failed
//! command, and the C++ compiler to use.

use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// `libvarve_ffi.a` of this build, found as `tests/c_api.rs` finds it.
/// Cargo builds the library with all its crate types before the tests,
/// into the `deps/` directory that holds this test executable
/// (`deps/libvarve_ffi.a`; it copies it up to the profile directory only
/// for `cargo build`). Found there first; failing that, the newest
/// `libvarve_ffi*.a` of `deps/` or the profile directory.
pub fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("the test executable's directory");
    let fresh = deps.join("libvarve_ffi.a");
    if fresh.is_file() {
        return fresh;
    }
    let mut candidates: Vec<PathBuf> = [Some(deps), deps.parent()]
        .into_iter()
        .flatten()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libvarve_ffi") && n.ends_with(".a"))
        })
        .collect();
    candidates.sort_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
    candidates.pop().unwrap_or_else(|| {
        panic!(
            "libvarve_ffi.a not found in {} or its parent: cargo should build it with \
             the tests (crate-type staticlib in crates/varve-ffi/Cargo.toml); \
             try `cargo build -p varve-ffi`",
            deps.display()
        )
    })
}

/// The C++ compiler: `CXX`, default `g++`.
pub fn cxx() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned())
}

/// A command's exit status and output, for a failure message.
pub fn show(out: &Output) -> String {
    format!(
        "exit status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
