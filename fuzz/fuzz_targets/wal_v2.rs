//! cargo-fuzz target `wal_v2`: feeds libFuzzer's input to
//! `varve::fuzzing::wal_v2` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::wal_v2(data);
});
