//! The C++ wrapper (`include/varve.hpp`): compiles
//! `tests/cpp/test_varve.cpp` with `-std=c++17 -Wall -Wextra -Werror`
//! against the static library cargo built for this test run (found as
//! `tests/c_api.rs` finds it), runs it, then does the same under
//! AddressSanitizer + UBSan (leak checking on). Also checks that the
//! wrapper reaches every function of `include/varve.h` (a call, or a
//! function pointer handed to the helper that calls it) but the few it
//! deliberately leaves out.
//!
//! A missing C++ compiler or sanitizer runtime fails the test with a
//! message saying what to install: it never skips. `CXX` picks the
//! compiler (default `g++`).

mod support;

use std::path::{Path, PathBuf};

use support::{SANITIZE, SANITIZER_ENV, compile, cxx, header_functions, repo_root, run};

/// Compiles the C++ test with `extra` flags into `exe`.
fn compile_cpp(exe: &Path, extra: &[&str]) -> Result<(), String> {
    compile(
        &cxx(),
        &[
            "-std=c++17",
            "-g",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wpedantic",
            "-pthread",
        ],
        "crates/varve-ffi/tests/cpp/test_varve.cpp",
        exe,
        extra,
        "install g++ (Debian: apt-get install g++), or set CXX",
    )
}

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cpp-api")
}

#[test]
fn cpp_test_passes() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve_cpp");
    if let Err(e) = compile_cpp(&exe, &[]) {
        panic!("compiling the C++ test failed:\n{e}");
    }
    run(&exe, &[]);
}

#[test]
fn cpp_test_passes_under_asan_and_ubsan() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve_cpp_asan");
    if let Err(e) = compile_cpp(&exe, &SANITIZE) {
        panic!(
            "compiling the C++ test with -fsanitize=address,undefined failed: is g++ \
             installed, with the sanitizer runtimes? (Debian: apt-get install g++ \
             libasan8 libubsan1, or the versions matching your g++)\n{e}"
        );
    }
    run(&exe, &SANITIZER_ENV);
}

/// Functions of `varve.h` the wrapper leaves out on purpose:
/// `varve_get` (the wrapper reads through `varve_get_pinned`, one copy
/// fewer) and the test hook `varve_test_panic`.
const NOT_WRAPPED: &[&str] = &["varve_get", "varve_test_panic"];

/// `code` without its `/* */` and `//` comments.
fn without_comments(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("comments are closed");
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `code` calls `f`, or passes it to a helper that calls it (`f(`, `f,`
/// or `f)`: `detail::call(varve_iter_next, h_)`).
fn uses(code: &str, f: &str) -> bool {
    ["(", ",", ")"]
        .iter()
        .any(|after| code.contains(&format!("{f}{after}")))
}

#[test]
fn cpp_wrapper_calls_every_function_of_the_header() {
    let root = repo_root();
    let header = std::fs::read_to_string(root.join("include/varve.h")).expect("include/varve.h");
    let wrapper =
        std::fs::read_to_string(root.join("include/varve.hpp")).expect("include/varve.hpp");
    let code = without_comments(&wrapper);
    let functions = header_functions(&header);
    let missing: Vec<&&str> = functions
        .iter()
        .filter(|f| !NOT_WRAPPED.contains(f) && !uses(&code, f))
        .collect();
    assert!(
        missing.is_empty(),
        "include/varve.hpp never calls {missing:?}: wrap them, or list them in NOT_WRAPPED"
    );
}
