//! cargo-fuzz target `sst_table`: feeds libFuzzer's input to
//! `varve::fuzzing::sst_table` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::sst_table(data);
});
