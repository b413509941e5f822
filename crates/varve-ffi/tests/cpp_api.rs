//! The C++ wrapper (`include/varve.hpp`): compiles
//! `tests/cpp/test_varve.cpp` with `-std=c++17 -Wall -Wextra -Werror`
//! against the static library cargo built for this test run (found as
//! `tests/c_api.rs` finds it), runs it, then does the same under
//! AddressSanitizer + UBSan (leak checking on). Also checks that the
//! wrapper reaches every function of `include/varve.h` but the few it
//! deliberately leaves out.
//!
//! A missing C++ compiler or sanitizer runtime fails the test with a
//! message saying what to install: it never skips. `CXX` picks the
//! compiler (default `g++`).

#[path = "cpp/support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{cxx, repo_root, show, static_lib};

/// Compiles the C++ test with `extra` flags into `exe`.
fn compile(exe: &Path, extra: &[&str]) -> Result<(), String> {
    let cxx = cxx();
    let root = repo_root();
    let lib = static_lib();
    eprintln!(
        "compiling the C++ test with {cxx} {extra:?}, linking {}",
        lib.display()
    );
    let mut cmd = Command::new(&cxx);
    cmd.args(["-std=c++17", "-g", "-O1", "-Wall", "-Wextra", "-Werror"])
        .args(["-Wpedantic", "-pthread"])
        .args(extra)
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("crates/varve-ffi/tests/cpp/test_varve.cpp"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(exe);
    let out = cmd.output().map_err(|e| {
        format!("cannot run the C++ compiler `{cxx}` ({e}): install g++ (Debian: apt-get install g++), or set CXX")
    })?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed\n{}", show(&out)));
    }
    Ok(())
}

/// Runs the compiled test; its output on failure.
fn run(exe: &Path, envs: &[(&str, &str)]) {
    let out = Command::new(exe)
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

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cpp-api")
}

#[test]
fn cpp_test_passes() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve_cpp");
    if let Err(e) = compile(&exe, &[]) {
        panic!("compiling the C++ test failed:\n{e}");
    }
    run(&exe, &[]);
}

#[test]
fn cpp_test_passes_under_asan_and_ubsan() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve_cpp_asan");
    let flags = [
        "-fsanitize=address,undefined",
        "-fno-omit-frame-pointer",
        "-fno-sanitize-recover=undefined",
    ];
    if let Err(e) = compile(&exe, &flags) {
        panic!(
            "compiling the C++ test with -fsanitize=address,undefined failed: is g++ \
             installed, with the sanitizer runtimes? (Debian: apt-get install g++ \
             libasan8 libubsan1, or the versions matching your g++)\n{e}"
        );
    }
    run(
        &exe,
        &[
            (
                "ASAN_OPTIONS",
                "detect_leaks=1:abort_on_error=0:exitcode=23",
            ),
            ("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1"),
        ],
    );
}

/// Functions of `varve.h` the wrapper leaves out on purpose:
/// `varve_get` (the wrapper reads through `varve_get_pinned`, one copy
/// fewer) and the test hook `varve_test_panic`.
const NOT_WRAPPED: &[&str] = &["varve_get", "varve_test_panic"];

#[test]
fn cpp_wrapper_calls_every_function_of_the_header() {
    let root = repo_root();
    let header = std::fs::read_to_string(root.join("include/varve.h")).expect("include/varve.h");
    let wrapper =
        std::fs::read_to_string(root.join("include/varve.hpp")).expect("include/varve.hpp");
    // Declarations: `... varve_name(` on a line that is not a comment.
    let mut functions: Vec<&str> = header
        .lines()
        .filter(|l| !l.trim_start().starts_with('*') && !l.trim_start().starts_with("/*"))
        .filter_map(|l| {
            let before = &l[..l.find('(')?];
            let name = before.rsplit([' ', '*']).next()?;
            name.starts_with("varve_").then_some(name)
        })
        .collect();
    functions.sort_unstable();
    functions.dedup();
    assert!(functions.len() > 50, "parsed only {functions:?}");
    let missing: Vec<&&str> = functions
        .iter()
        .filter(|f| !NOT_WRAPPED.contains(f) && !wrapper.contains(&format!("{f}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "include/varve.hpp never calls {missing:?}: wrap them, or list them in NOT_WRAPPED"
    );
}
