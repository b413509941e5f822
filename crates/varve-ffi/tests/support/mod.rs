//! Shared by the tests that compile C and C++ against the library
//! (`tests/c_api.rs`, `tests/cpp_api.rs`, `tests/polar_race.rs`; a
//! `support/` folder is not a test of its own): where the repository and
//! this build's `libvarve_ffi.a` are, compiling and running a test
//! program (plainly or under the sanitizers), the functions the header
//! declares, and how to show a failed command.

// Each test uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// `libvarve_ffi.a` of this build.
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

/// Compiles the test program `source` (relative to the repository) with
/// `compiler`, the `flags` given and `extra`, against `include/` and this
/// build's `libvarve_ffi.a`, into `exe`. The error says what failed and
/// what to install (`install`) when the compiler cannot be run.
pub fn compile(
    compiler: &str,
    flags: &[&str],
    source: &str,
    exe: &Path,
    extra: &[&str],
    install: &str,
) -> Result<(), String> {
    let root = repo_root();
    let lib = static_lib();
    eprintln!(
        "compiling {source} with {compiler} {extra:?}, linking {}",
        lib.display()
    );
    let mut cmd = std::process::Command::new(compiler);
    cmd.args(flags)
        .args(extra)
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join(source))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(exe);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run the compiler `{compiler}` ({e}): {install}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed\n{}", show(&out)));
    }
    Ok(())
}

/// Flags for a run under AddressSanitizer + UBSan.
pub const SANITIZE: [&str; 3] = [
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=undefined",
];

/// The sanitizers' run-time settings: leaks checked, any finding fails.
pub const SANITIZER_ENV: [(&str, &str); 2] = [
    (
        "ASAN_OPTIONS",
        "detect_leaks=1:abort_on_error=0:exitcode=23",
    ),
    ("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1"),
];

/// Runs a compiled test program, which must exit 0 and report
/// "N passed, 0 failed"; its output on failure.
pub fn run(exe: &Path, envs: &[(&str, &str)]) {
    let out = std::process::Command::new(exe)
        .envs(envs.iter().copied())
        // The deliberate panics print a line each; no backtraces.
        .env("RUST_BACKTRACE", "0")
        .env("TMPDIR", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "{} failed\n{}",
        exe.display(),
        show(&out)
    );
    eprint!("{}", stdout);
}

/// The functions `include/varve.h` declares (`varve_name(` on a line that
/// is not a comment), sorted, each once.
pub fn header_functions(header: &str) -> Vec<&str> {
    let mut functions: Vec<&str> = header
        .lines()
        .filter(|l| !l.trim_start().starts_with('*') && !l.trim_start().starts_with("/*"))
        .filter_map(|l| {
            // The identifier just before the first `(`.
            let before = &l[..l.find('(')?];
            let name = before.rsplit([' ', '*']).next()?;
            name.starts_with("varve_").then_some(name)
        })
        .collect();
    functions.sort_unstable();
    functions.dedup();
    assert!(functions.len() > 50, "parsed only {functions:?}");
    functions
}
