//! One module per group of commands; each function runs one subcommand and
//! prints its result (text, or JSON with `--json`). Single-threaded.

pub mod admin;
pub mod check;
pub mod dump;
pub mod kv;
pub mod stats;

/// Prints `v` as one line of JSON.
pub fn print_json(v: &serde_json::Value) {
    println!("{v}");
}
