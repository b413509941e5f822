//! Writes the seed corpus (`varve::fuzzing::seeds`, made with the real
//! writers) into `<dir>/<target>/seed-<name>`; `dir` defaults to
//! `fuzz/corpus`. Run from the repository root:
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --example write_seeds`.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("fuzz/corpus"), PathBuf::from);
    for (target, name, bytes) in varve::fuzzing::seeds() {
        let d = dir.join(target);
        std::fs::create_dir_all(&d)?;
        let path = d.join(format!("seed-{name}"));
        std::fs::write(&path, &bytes)?;
        println!("{} ({} bytes)", path.display(), bytes.len());
    }
    Ok(())
}
