//! The `--help` text that follows the flags: the workload list of
//! [`crate::flags`] followed by the YCSB workloads and the `chart`
//! subcommand, kept in their own modules so each documents itself.
//!
//! Pure function, no state.

/// `base` (the flags' after-help), then YCSB's and `chart`'s sections.
pub fn after_help(base: &str) -> String {
    format!(
        "{base}\n\n{}\n\n{}",
        crate::workloads::ycsb::HELP,
        crate::chart::HELP
    )
}
