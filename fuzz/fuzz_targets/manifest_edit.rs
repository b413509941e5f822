//! cargo-fuzz target `manifest_edit`: feeds libFuzzer's input to
//! `varve::fuzzing::manifest_edit` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::manifest_edit(data);
});
