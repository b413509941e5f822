//! cargo-fuzz target `manifest`: feeds libFuzzer's input to
//! `varve::fuzzing::manifest` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::manifest(data);
});
