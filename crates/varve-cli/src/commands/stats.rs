//! `stats` and `anchors`: the shape of the tree and the engine's counters.

use anyhow::Result;
use serde_json::json;
use varve::KeyRange;

use super::print_json;
use crate::Outcome;
use crate::args::Cli;
use crate::bytes::{parse, show};
use crate::open::{keyspace, open_read_only};

/// `stats`.
pub fn stats(cli: &Cli) -> Result<Outcome> {
    let db = open_read_only(cli)?;
    let s = db.stats();
    let tables = db.debug().live_tables();
    let latest = db.debug().latest_sequence();
    db.close()?;
    if cli.json {
        let levels: Vec<_> = s
            .levels
            .iter()
            .enumerate()
            .map(|(l, lv)| {
                json!({
                    "level": l,
                    "files": lv.files,
                    "bytes": lv.bytes,
                    "score": lv.score,
                    "tables": tables.get(l).map(|t| t.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
                })
            })
            .collect();
        let total: u64 = s.levels.iter().map(|l| l.bytes).sum();
        let memory = json!({
            "budget": s.memory.budget,
            "used": s.memory.used(),
            "memtables": s.memory.memtables,
            "memtables_limit": s.memory.memtables_limit,
            "block_cache": s.memory.block_cache,
            "block_cache_limit": s.memory.block_cache_limit,
            "pinned_blob_tables": s.memory.pinned_blob_tables,
            "pinned_blob_tables_limit": s.memory.pinned_blob_tables_limit,
            "table_metadata": s.memory.table_metadata,
            "table_metadata_limit": s.memory.table_metadata_limit,
            "readahead": s.memory.readahead,
            "readahead_limit": s.memory.readahead_limit,
            "readahead_peak": s.memory.readahead_peak,
            "readahead_refused": s.memory.readahead_refused,
            "shared_scan": s.memory.shared_scan,
            "shared_scan_limit": s.memory.shared_scan_limit,
            "blob_staging": s.memory.blob_staging,
            "blob_staging_limit": s.memory.blob_staging_limit,
            "blob_staging_refused": s.memory.blob_staging_refused,
            "reserve": s.memory.reserve,
        });
        let keyspaces: Vec<_> = s
            .keyspaces
            .iter()
            .map(|k| {
                json!({
                    "name": k.name,
                    "id": k.id,
                    "files_per_level": k.levels.iter().map(|l| l.files).collect::<Vec<_>>(),
                    "bytes_per_level": k.levels.iter().map(|l| l.bytes).collect::<Vec<_>>(),
                    "memtable_bytes": k.memtable_bytes,
                    "range_tombstones": k.range_tombstones,
                })
            })
            .collect();
        print_json(&json!({
            "levels": levels,
            "keyspaces": keyspaces,
            "total_table_bytes": total,
            "latest_sequence": latest,
            "user_writes": s.user_writes,
            "user_bytes": s.user_bytes,
            "wal_bytes": s.wal_bytes,
            "wal_syncs": s.wal_syncs,
            "flushes": s.flushes,
            "flush_bytes": s.flush_bytes,
            "compactions": s.compactions,
            "trivial_moves": s.trivial_moves,
            "ttl_tables_dropped": s.ttl_tables_dropped,
            "compaction_bytes_read": s.compaction_bytes_read,
            "compaction_bytes_written": s.compaction_bytes_written,
            "write_amplification": s.write_amplification,
            "space_amplification": space_amp(&s),
            "stall_slowdowns_l0": s.stall_slowdowns_l0,
            "stall_slowdowns_memtables": s.stall_slowdowns_memtables,
            "stall_stops_memtables": s.stall_stops_memtables,
            "stall_stops_l0": s.stall_stops_l0,
            "stall_stops_blob_garbage": s.stall_stops_blob_garbage,
            "stall_micros": s.stall_micros,
            "block_cache_hits": s.block_cache_hits,
            "block_cache_misses": s.block_cache_misses,
            "block_cache_usage": s.block_cache_usage,
            "block_cache_capacity": s.block_cache_capacity,
            "open_tables": s.open_tables,
            "pinned_table_memory": s.pinned_table_memory,
            "memtable_bytes": s.memtable_bytes,
            "immutable_memtables": s.immutable_memtables,
            "range_tombstones": s.range_tombstones,
            "memtable_range_tombstones": s.memtable_range_tombstones,
            "shared_scan_budget": s.shared_scan_budget,
            "shared_scan_bytes": s.shared_scan_bytes,
            "shared_scan_loads": s.shared_scan_loads,
            "shared_scan_hits": s.shared_scan_hits,
            "shared_scan_no_room": s.shared_scan_no_room,
            "shared_scan_reloads": s.shared_scan_reloads,
            "shared_scan_paced": s.shared_scan_paced,
            "shared_passes": s.shared_passes,
            "shared_pass_joins": s.shared_pass_joins,
            "shared_pass_segments": s.shared_pass_segments,
            "shared_pass_behind": s.shared_pass_behind,
            "shared_pass_paced": s.shared_pass_paced,
            "shared_pass_refused": s.shared_pass_refused,
            "shared_pass_bytes": s.shared_pass_bytes,
            "open_micros": s.open_times.total.as_micros() as u64,
            "open_manifest_micros": s.open_times.manifest.as_micros() as u64,
            "open_blob_staging_micros": s.open_times.blob_staging.as_micros() as u64,
            "open_wal_replay_micros": s.open_times.wal_replay.as_micros() as u64,
            "open_recovery_tables_micros": s.open_times.recovery_tables.as_micros() as u64,
            "open_records_replayed": s.open_records_replayed,
            "memory": memory,
        }));
    } else {
        print!("{}", s.report());
        println!(
            "Total table size: {:.1} MiB; space amplification {:.2}; latest sequence {latest}",
            s.levels.iter().map(|l| l.bytes).sum::<u64>() as f64 / 1048576.0,
            space_amp(&s)
        );
    }
    Ok(Outcome::Ok)
}

/// Total table bytes over the bytes of the last non-empty level (1.0 for
/// a tree in one level), RocksDB's usual estimate.
fn space_amp(s: &varve::DbStats) -> f64 {
    let total: u64 = s.levels.iter().map(|l| l.bytes).sum();
    match s.levels.iter().rev().find(|l| l.bytes > 0) {
        Some(last) => total as f64 / last.bytes as f64,
        None => 0.0,
    }
}

/// `anchors --parts N [--from K] [--to K]`: the sub-ranges of
/// `Db::split_range`, i.e. the N-1 keys that cut the range into parts of
/// about equal bytes.
pub fn anchors(cli: &Cli, parts: usize, from: Option<&str>, to: Option<&str>) -> Result<Outcome> {
    let range = KeyRange::from_bounds(from.map(parse).transpose()?, to.map(parse).transpose()?);
    let db = open_read_only(cli)?;
    let ranges = keyspace(cli, &db, false)?.split_range(&range, parts)?;
    db.close()?;
    let bound = |b: &Option<Vec<u8>>| b.as_deref().map(|k| show(k, cli.hex));
    let cuts: Vec<String> = ranges
        .iter()
        .skip(1)
        .filter_map(|r| bound(&r.start))
        .collect();
    if cli.json {
        let parts: Vec<_> = ranges
            .iter()
            .map(|r| json!({"start": bound(&r.start), "end": bound(&r.end)}))
            .collect();
        print_json(&json!({"anchors": cuts, "parts": parts}));
    } else {
        for r in &ranges {
            println!(
                "[{} .. {})",
                bound(&r.start).unwrap_or_else(|| "-inf".into()),
                bound(&r.end).unwrap_or_else(|| "+inf".into())
            );
        }
    }
    Ok(Outcome::Ok)
}
