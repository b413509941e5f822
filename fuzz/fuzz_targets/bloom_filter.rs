//! cargo-fuzz target `bloom_filter`: feeds libFuzzer's input to
//! `varve::fuzzing::bloom_filter` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::bloom_filter(data);
});
