//! The progress bar: on stderr, only when stderr is a terminal.
//!
//! Piped or redirected runs (scripts, CI) get no bar and no escape codes, so
//! their stderr carries only the tool's notes.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar for `name` expecting `total` operations (a spinner when unknown),
/// or `None` when stderr is not a terminal.
pub fn bar(name: &str, total: Option<u64>) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = match total {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let style = ProgressStyle::with_template(
        "{prefix:>16} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    pb.set_prefix(name.to_string());
    Some(pb)
}
