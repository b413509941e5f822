//! The contest binding (`bindings/polar_race`): runs
//! `make -C bindings/polar_race test`, a run of `run_contest.sh` in the
//! style of the PolarDB 2018 engine contest (64 threads, 20,000 keys of 8
//! bytes with 4 KiB values: write, `kill -9` after the last acknowledged
//! write, then read and range as separate processes, every value
//! checked), and asserts it passed.
//!
//! The library merged into `libengine.a` is the `libvarve_ffi.a` cargo
//! built for this test run (debug under `cargo test`, release under
//! `cargo test --release`), passed as `VARVE_FFI_LIB`, so make does not
//! run cargo again; the outputs go under this target's temporary directory,
//! not into `bindings/polar_race/`. A missing `make` or C++ compiler fails
//! the test with a message saying what to install: it never skips. `CXX`
//! picks the compiler (default `g++`).

mod support;

use std::path::PathBuf;
use std::process::Command;

use support::{cxx, repo_root, show, static_lib};

/// Fails with `install` unless `program --version` runs.
fn require(program: &str, install: &str) {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`{program}` is needed to build and run bindings/polar_race but cannot be run: {install}"
    );
}

#[test]
fn contest_run_passes() {
    require("make", "install GNU make (Debian: apt-get install make)");
    let cxx = cxx();
    require(
        &cxx,
        "install g++ (Debian: apt-get install g++), or set CXX to a C++17 compiler",
    );
    for tool in ["ar", "nm", "objdump"] {
        require(
            tool,
            "install GNU binutils (Debian: apt-get install binutils)",
        );
    }

    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("polar-race");
    std::fs::create_dir_all(&out_dir).expect("out dir");
    let lib = static_lib();
    eprintln!("bindings/polar_race: merging {}", lib.display());
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(repo_root().join("bindings/polar_race"))
        .arg("test")
        .arg(format!("VARVE_FFI_LIB={}", lib.display()))
        .arg(format!("LIBDIR={}", out_dir.join("lib").display()))
        .arg(format!("BUILDDIR={}", out_dir.join("build").display()))
        .arg(format!("CXX={cxx}"))
        .args(["NUM=20000", "THREADS=64"])
        .env("TMPDIR", env!("CARGO_TARGET_TMPDIR"))
        .env("RUST_BACKTRACE", "0");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("run_contest.sh: PASSED"),
        "{cmd:?} failed\n{}",
        show(&out)
    );
    // The phases' timings, for `cargo test -- --nocapture`.
    eprint!("{stdout}");
}
