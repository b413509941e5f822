//! The C API from C: compiles `tests/c/test_varve.c` against
//! `include/varve.h` and the static library cargo built for this test run
//! (`libvarve_ffi.a`, in the `deps/` directory of the test executable),
//! runs it, then does the same under AddressSanitizer + UBSan (leak
//! checking on).
//!
//! A missing C compiler or sanitizer runtime fails the test with a message
//! saying what to install: it never skips silently. `CC` picks the
//! compiler (default `cc`). The same by hand, with a release build:
//! `scripts/test-c-api.sh`.

mod support;

use std::path::{Path, PathBuf};

use support::{SANITIZE, SANITIZER_ENV, compile, header_functions, repo_root, run};

/// Compiles the C test with `extra` flags into `exe`.
fn compile_c(exe: &Path, extra: &[&str]) -> Result<(), String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    compile(
        &cc,
        &["-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror"],
        "crates/varve-ffi/tests/c/test_varve.c",
        exe,
        extra,
        "install gcc (or set CC)",
    )
}

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-api")
}

#[test]
fn c_test_passes() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve");
    if let Err(e) = compile_c(&exe, &[]) {
        panic!("compiling the C test failed:\n{e}");
    }
    run(&exe, &[]);
}

#[test]
fn c_test_passes_under_asan_and_ubsan() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve_asan");
    if let Err(e) = compile_c(&exe, &SANITIZE) {
        panic!(
            "compiling the C test with -fsanitize=address,undefined failed: the \
             sanitizer runtimes are missing (Debian: apt-get install gcc libasan8 \
             libubsan1, or the versions matching your gcc)\n{e}"
        );
    }
    run(&exe, &SANITIZER_ENV);
}

#[test]
fn c_test_calls_every_function_of_the_header() {
    let root = repo_root();
    let header = std::fs::read_to_string(root.join("include/varve.h")).expect("include/varve.h");
    let test = std::fs::read_to_string(root.join("crates/varve-ffi/tests/c/test_varve.c"))
        .expect("test_varve.c");
    let functions = header_functions(&header);
    let missing: Vec<&&str> = functions
        .iter()
        .filter(|f| !test.contains(&format!("{f}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "tests/c/test_varve.c never calls {missing:?}"
    );
}
