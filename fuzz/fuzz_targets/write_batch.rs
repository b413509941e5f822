//! cargo-fuzz target `write_batch`: feeds libFuzzer's input to
//! `varve::fuzzing::write_batch` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::write_batch(data);
});
