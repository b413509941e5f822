//! cargo-fuzz target `wal_v1`: feeds libFuzzer's input to
//! `varve::fuzzing::wal_v1` (what it drives: docs/fuzzing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    varve::fuzzing::wal_v1(data);
});
