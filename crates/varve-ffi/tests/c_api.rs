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

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `libvarve_ffi.a` of this build. Cargo builds the library with all its
/// crate types before the tests, into the `deps/` directory that holds
/// this test executable (`deps/libvarve_ffi.a`; it copies it up to the
/// profile directory only for `cargo build`). Found there first; failing
/// that, the newest `libvarve_ffi*.a` of `deps/` or the profile directory.
fn static_lib() -> PathBuf {
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

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

fn show(out: &Output) -> String {
    format!(
        "exit status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Compiles the C test with `extra` flags into `exe`.
fn compile(exe: &Path, extra: &[&str]) -> Result<(), String> {
    let cc = compiler();
    let root = repo_root();
    let lib = static_lib();
    eprintln!(
        "compiling the C test with {cc} {extra:?}, linking {}",
        lib.display()
    );
    let mut cmd = Command::new(&cc);
    cmd.args(["-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("crates/varve-ffi/tests/c/test_varve.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(exe);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run the C compiler `{cc}` ({e}): install gcc (or set CC)"))?;
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
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-api")
}

#[test]
fn c_test_passes() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve");
    if let Err(e) = compile(&exe, &[]) {
        panic!("compiling the C test failed:\n{e}");
    }
    run(&exe, &[]);
}

#[test]
fn c_test_passes_under_asan_and_ubsan() {
    std::fs::create_dir_all(out_dir()).expect("out dir");
    let exe = out_dir().join("test_varve_asan");
    let flags = [
        "-fsanitize=address,undefined",
        "-fno-omit-frame-pointer",
        "-fno-sanitize-recover=undefined",
    ];
    if let Err(e) = compile(&exe, &flags) {
        panic!(
            "compiling the C test with -fsanitize=address,undefined failed: the \
             sanitizer runtimes are missing (Debian: apt-get install gcc libasan8 \
             libubsan1, or the versions matching your gcc)\n{e}"
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

#[test]
fn c_test_calls_every_function_of_the_header() {
    let root = repo_root();
    let header = std::fs::read_to_string(root.join("include/varve.h")).expect("include/varve.h");
    let test = std::fs::read_to_string(root.join("crates/varve-ffi/tests/c/test_varve.c"))
        .expect("test_varve.c");
    // Declarations: `... varve_name(` on a line that is not a comment.
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
    let missing: Vec<&&str> = functions
        .iter()
        .filter(|f| !test.contains(&format!("{f}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "tests/c/test_varve.c never calls {missing:?}"
    );
}
