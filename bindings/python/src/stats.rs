//! `Db.stats_dict()`: the engine's `DbStats` as a plain Python `dict`.
//!
//! Counters keep their Rust field names; `levels` is a list of dicts (L0
//! first), `memory` a dict of each part's bytes and limit, `open_times` a
//! dict of seconds. Pure conversion, attached to the interpreter; the
//! stats themselves are gathered with the GIL released by the caller.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Sets `dict[name] = s.name` for each listed field.
macro_rules! fields {
    ($dict:expr, $s:expr, $($f:ident),+ $(,)?) => {
        $( $dict.set_item(stringify!($f), $s.$f)?; )+
    };
}

/// `stats` as a dict.
pub(crate) fn to_dict<'py>(py: Python<'py>, s: &varve::DbStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    fields!(
        d,
        s,
        user_bytes,
        user_writes,
        wal_bytes,
        wal_syncs,
        flushes,
        flush_bytes,
        compactions,
        subcompactions,
        trivial_moves,
        compaction_bytes_read,
        compaction_bytes_written,
        write_amplification,
        stall_slowdowns_l0,
        stall_slowdowns_memtables,
        stall_stops_memtables,
        stall_stops_l0,
        stall_stops_blob_garbage,
        stall_micros,
        block_cache_hits,
        block_cache_misses,
        block_cache_usage,
        block_cache_capacity,
        open_tables,
        pinned_table_memory,
        pinned_blob_table_bytes,
        pinned_blob_table_budget,
        memtable_bytes,
        immutable_memtables,
        blob_files,
        blob_file_bytes,
        blob_value_bytes,
        blob_garbage_bytes,
        blob_values_written,
        blob_bytes_written,
        blob_garbage_found,
        blob_gc_bytes_relocated,
        blob_gc_files_written,
        blob_gc_compactions,
        shared_scan_budget,
        shared_scan_bytes,
        shared_scan_loads,
        shared_scan_hits,
        shared_scan_no_room,
        shared_passes,
        shared_pass_joins,
        shared_pass_segments,
        shared_pass_behind,
        shared_pass_paced,
        shared_pass_refused,
        shared_pass_bytes,
        open_records_replayed,
    );
    let levels = PyList::empty(py);
    for l in &s.levels {
        let ld = PyDict::new(py);
        fields!(ld, l, files, bytes, score);
        levels.append(ld)?;
    }
    d.set_item("levels", levels)?;
    let m = PyDict::new(py);
    fields!(
        m,
        s.memory,
        budget,
        memtables,
        memtables_limit,
        block_cache,
        block_cache_limit,
        pinned_blob_tables,
        pinned_blob_tables_limit,
        table_metadata,
        table_metadata_limit,
        readahead,
        readahead_limit,
        readahead_peak,
        readahead_refused,
        shared_scan,
        shared_scan_limit,
        blob_staging,
        blob_staging_limit,
        blob_staging_refused,
        reserve,
    );
    m.set_item("used", s.memory.used())?;
    d.set_item("memory", m)?;
    let t = PyDict::new(py);
    let o = &s.open_times;
    t.set_item("total", o.total.as_secs_f64())?;
    t.set_item("manifest", o.manifest.as_secs_f64())?;
    t.set_item("blob_staging", o.blob_staging.as_secs_f64())?;
    t.set_item("wal_replay", o.wal_replay.as_secs_f64())?;
    t.set_item("recovery_tables", o.recovery_tables.as_secs_f64())?;
    d.set_item("open_times", t)?;
    Ok(d)
}
