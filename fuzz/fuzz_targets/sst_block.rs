//! cargo-fuzz target `sst_block`: feeds libFuzzer's input to
//! `varve::fuzzing::sst_block` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::sst_block(data);
});
