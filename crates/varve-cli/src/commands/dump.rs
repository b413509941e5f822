//! `dump-wal`, `dump-sst`, `dump-blob`, `dump-manifest`: decode one file,
//! read-only.

use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};
use varve::fs::PosixFs;
use varve::tools::{
    BlockHandle, TailStatus, current_manifest, dump_blob, dump_manifest, dump_sst, dump_wal,
    parse_internal_key,
};

use super::print_json;
use crate::Outcome;
use crate::args::Cli;
use crate::bytes::show;
use crate::open::{db_path, with_path};

fn tail_json(t: &TailStatus) -> Value {
    match t {
        TailStatus::Clean => json!({"clean": true}),
        TailStatus::Truncated { offset, reason } => {
            json!({"clean": false, "offset": offset, "reason": reason})
        }
    }
}

fn tail_text(t: &TailStatus) -> String {
    match t {
        TailStatus::Clean => "clean".into(),
        TailStatus::Truncated { offset, reason } => {
            format!("damaged from offset {offset} (an open would cut it there): {reason}")
        }
    }
}

/// An internal key as `user_key @seq kind`.
fn ikey(k: &[u8], hex: bool) -> String {
    match parse_internal_key(k) {
        Some(p) => format!("{} @{} {:?}", show(p.user_key, hex), p.seq, p.kind),
        None => format!("(malformed {})", crate::bytes::hex(k)),
    }
}

/// `dump-wal FILE`.
pub fn wal(cli: &Cli, file: &Path) -> Result<Outcome> {
    let d = with_path(dump_wal(&PosixFs, file), "reading WAL", file)?;
    let h = cli.hex;
    if cli.json {
        let records: Vec<_> = d
            .records
            .iter()
            .map(|r| {
                let ops: Vec<_> = r
                    .ops
                    .iter()
                    .map(|o| {
                        let mut v = if o.put {
                            json!({"op": "put", "key": show(&o.key, h), "value": show(&o.value, h)})
                        } else if let Some(end) = &o.range_end {
                            json!({"op": "delete_range", "start": show(&o.key, h), "end": show(end, h)})
                        } else {
                            json!({"op": "delete", "key": show(&o.key, h)})
                        };
                        v["keyspace"] = json!(o.keyspace);
                        v
                    })
                    .collect();
                json!({"offset": r.offset, "sequence": r.sequence, "ops": ops})
            })
            .collect();
        print_json(&json!({
            "file": d.file.display().to_string(),
            "log_number": d.log_number,
            "records": records,
            "tail": tail_json(&d.tail),
        }));
    } else {
        println!("WAL {} (log number {})", d.file.display(), d.log_number);
        for r in &d.records {
            println!(
                "record @{} sequence {} ({} ops)",
                r.offset,
                r.sequence,
                r.ops.len()
            );
            for o in &r.ops {
                // Operations of a keyspace other than the default one say so.
                let ks = if o.keyspace == 0 {
                    String::new()
                } else {
                    format!("[keyspace {}] ", o.keyspace)
                };
                if o.put {
                    println!("  {ks}PUT {} => {}", show(&o.key, h), show(&o.value, h));
                } else if let Some(end) = &o.range_end {
                    println!("  {ks}DELRANGE {} .. {}", show(&o.key, h), show(end, h));
                } else {
                    println!("  {ks}DEL {}", show(&o.key, h));
                }
            }
        }
        println!("{} records; tail {}", d.records.len(), tail_text(&d.tail));
    }
    Ok(Outcome::Ok)
}

/// `dump-blob FILE`.
pub fn blob(cli: &Cli, file: &Path, limit: Option<usize>) -> Result<Outcome> {
    let d = with_path(dump_blob(&PosixFs, file), "reading blob file", file)?;
    let h = cli.hex;
    let limit = limit.unwrap_or(usize::MAX);
    let values: usize = d.chunks.iter().map(|c| c.entries.len()).sum();
    if cli.json {
        let chunks: Vec<_> = d
            .chunks
            .iter()
            .map(|c| json!({"offset": c.offset, "len": c.len, "values": c.entries.len()}))
            .collect();
        let entries: Vec<_> = d
            .chunks
            .iter()
            .flat_map(|c| c.entries.iter())
            .take(limit)
            .map(
                |e| json!({"key": show(&e.key, h), "offset": e.offset, "len": e.len, "crc": e.crc}),
            )
            .collect();
        print_json(&json!({
            "file": d.file.display().to_string(),
            "file_number": d.file_number,
            "creator": d.creator,
            "chunk_size": d.chunk_size,
            "chunks": chunks,
            "values": entries,
            "values_verified": values,
            "sealed": d.footer.is_some(),
            "footer": d.footer.map(|(n, b)| json!({"values": n, "value_bytes": b})),
            "tail_bytes": d.tail_bytes,
        }));
    } else {
        println!("Blob file {}", d.file.display());
        println!(
            "  number {}, written by {}, chunk size {}",
            d.file_number, d.creator, d.chunk_size
        );
        match d.footer {
            Some((n, b)) => println!("  sealed: {n} values, {b} value bytes"),
            None => println!(
                "  not sealed (being written, or cut by a crash): {} bytes after the last whole chunk",
                d.tail_bytes
            ),
        }
        println!(
            "  {} chunks, {values} values, every checksum verified",
            d.chunks.len()
        );
        for e in d.chunks.iter().flat_map(|c| c.entries.iter()).take(limit) {
            println!(
                "  {} @{} len {} crc {:08x}",
                show(&e.key, h),
                e.offset,
                e.len,
                e.crc
            );
        }
    }
    Ok(Outcome::Ok)
}

fn handle(b: BlockHandle) -> Value {
    json!({"offset": b.offset, "size": b.size})
}

/// `dump-sst FILE`.
pub fn sst(cli: &Cli, file: &Path, limit: Option<usize>) -> Result<Outcome> {
    let d = with_path(dump_sst(&PosixFs, file, limit), "reading table", file)?;
    let (p, h) = (&d.properties, cli.hex);
    if cli.json {
        let entries: Vec<_> = d
            .entries
            .iter()
            .map(|e| {
                json!({
                    "key": show(&e.key, h),
                    "seq": e.seq,
                    "kind": if e.put { "put" } else { "delete" },
                    "value": if e.put { Some(show(&e.value, h)) } else { None },
                })
            })
            .collect();
        print_json(&json!({
            "file": d.file.display().to_string(),
            "footer": {"filter": handle(d.footer.filter), "properties": handle(d.footer.properties), "index": handle(d.footer.index)},
            "properties": {
                "format_version": p.format_version,
                "file_size": p.file_size,
                "num_entries": p.num_entries,
                "num_deletions": p.num_deletions,
                "raw_key_bytes": p.raw_key_bytes,
                "raw_value_bytes": p.raw_value_bytes,
                "data_bytes": p.data_bytes,
                "index_bytes": p.index_bytes,
                "filter_bytes": p.filter_bytes,
                "num_data_blocks": p.num_data_blocks,
                "smallest_key": ikey(&p.smallest_key, h),
                "largest_key": ikey(&p.largest_key, h),
                "smallest_seq": p.smallest_seq,
                "largest_seq": p.largest_seq,
                "keyspace": p.keyspace,
            },
            "entries": entries,
            "entries_verified": d.entries_read,
        }));
    } else {
        println!("Table {}", d.file.display());
        println!(
            "footer: filter @{}+{}, properties @{}+{}, index @{}+{}",
            d.footer.filter.offset,
            d.footer.filter.size,
            d.footer.properties.offset,
            d.footer.properties.size,
            d.footer.index.offset,
            d.footer.index.size
        );
        println!(
            "format version {}, {} bytes, {} entries ({} deletions), {} data blocks, keyspace {}",
            p.format_version,
            p.file_size,
            p.num_entries,
            p.num_deletions,
            p.num_data_blocks,
            p.keyspace
        );
        println!(
            "keys {} .. {}, sequences {}..={}",
            ikey(&p.smallest_key, h),
            ikey(&p.largest_key, h),
            p.smallest_seq,
            p.largest_seq
        );
        println!(
            "raw keys {} bytes, raw values {} bytes; data {} / index {} / filter {} bytes",
            p.raw_key_bytes, p.raw_value_bytes, p.data_bytes, p.index_bytes, p.filter_bytes
        );
        for e in &d.entries {
            if e.put {
                println!(
                    "  {} @{} PUT => {}",
                    show(&e.key, h),
                    e.seq,
                    show(&e.value, h)
                );
            } else {
                println!("  {} @{} DEL", show(&e.key, h), e.seq);
            }
        }
        println!(
            "{} entries verified, {} printed",
            d.entries_read,
            d.entries.len()
        );
    }
    Ok(Outcome::Ok)
}

/// `dump-manifest [FILE]`.
pub fn manifest(cli: &Cli, file: Option<&Path>) -> Result<Outcome> {
    let path = match file {
        Some(f) => f.to_path_buf(),
        None => {
            let dir = db_path(cli)?;
            with_path(current_manifest(&PosixFs, dir), "reading CURRENT of", dir)?
        }
    };
    let d = with_path(dump_manifest(&PosixFs, &path), "reading manifest", &path)?;
    let h = cli.hex;
    if cli.json {
        let records: Vec<_> = d
            .records
            .iter()
            .map(|r| {
                let e = &r.edit;
                json!({
                    "offset": r.offset,
                    "keyspace": e.keyspace,
                    "created_keyspaces": e.created_keyspaces.iter().map(|(id, n)| json!({"id": id, "name": n})).collect::<Vec<_>>(),
                    "dropped_keyspaces": e.dropped_keyspaces,
                    "next_keyspace_id": e.next_keyspace_id,
                    "log_number": e.log_number,
                    "next_file_number": e.next_file_number,
                    "last_sequence": e.last_sequence,
                    "compact_pointers": e.compact_pointers.iter().map(|(l, k)| json!({"level": l, "key": ikey(k, h)})).collect::<Vec<_>>(),
                    "deleted_files": e.deleted_files.iter().map(|(l, n)| json!({"level": l, "number": n})).collect::<Vec<_>>(),
                    "new_files": e.new_files.iter().map(|(l, f)| json!({
                        "level": l, "number": f.number, "file_size": f.file_size,
                        "smallest": ikey(&f.smallest, h), "largest": ikey(&f.largest, h),
                        "smallest_seq": f.smallest_seq, "largest_seq": f.largest_seq,
                        "num_entries": f.num_entries, "oldest_blob_file": f.oldest_blob_file,
                        "range_cleared_seq": f.range_cleared_seq,
                    })).collect::<Vec<_>>(),
                    "range_tombstones": e.range_tombstones.iter().map(|t| json!({
                        "seq": t.seq, "start": show(&t.start, h), "end": show(&t.end, h),
                    })).collect::<Vec<_>>(),
                    "deleted_range_tombstones": e.deleted_range_tombstones,
                    "blob_files": e.blob_files.iter().map(|b| json!({
                        "number": b.number, "sealed": b.sealed, "size": b.size,
                        "value_count": b.value_count, "value_bytes": b.value_bytes,
                    })).collect::<Vec<_>>(),
                    "blob_garbage": e.blob_garbage.iter().map(|(n, c, b)| json!({"number": n, "values": c, "bytes": b})).collect::<Vec<_>>(),
                    "deleted_blob_files": e.deleted_blob_files,
                })
            })
            .collect();
        print_json(&json!({
            "file": d.file.display().to_string(),
            "records": records,
            "tail": tail_json(&d.tail),
        }));
    } else {
        println!("Manifest {}", d.file.display());
        for (i, r) in d.records.iter().enumerate() {
            let e = &r.edit;
            let what = if i == 0 { "snapshot edit" } else { "edit" };
            // The parts of one record (a group) share its offset.
            if e.keyspace == 0 {
                println!("{what} @{}", r.offset);
            } else {
                println!("{what} @{} keyspace {}", r.offset, e.keyspace);
            }
            for (id, name) in &e.created_keyspaces {
                println!("  create keyspace {id} {name:?}");
            }
            for id in &e.dropped_keyspaces {
                println!("  drop keyspace {id}");
            }
            if let Some(v) = e.next_keyspace_id {
                println!("  next_keyspace_id {v}");
            }
            if let Some(v) = e.log_number {
                println!("  log_number {v}");
            }
            if let Some(v) = e.next_file_number {
                println!("  next_file_number {v}");
            }
            if let Some(v) = e.last_sequence {
                println!("  last_sequence {v}");
            }
            for (l, k) in &e.compact_pointers {
                println!("  compact_pointer L{l} {}", ikey(k, h));
            }
            for (l, n) in &e.deleted_files {
                println!("  delete L{l} {n:06}.sst");
            }
            for (l, f) in &e.new_files {
                println!(
                    "  add L{l} {:06}.sst {} bytes, {} entries, {} .. {}, seq {}..={}",
                    f.number,
                    f.file_size,
                    f.num_entries,
                    ikey(&f.smallest, h),
                    ikey(&f.largest, h),
                    f.smallest_seq,
                    f.largest_seq
                );
                if f.oldest_blob_file != 0 {
                    println!(
                        "    points into blob files from {:06}.blob",
                        f.oldest_blob_file
                    );
                }
                if f.range_cleared_seq != 0 {
                    println!(
                        "    range tombstones up to seq {} applied",
                        f.range_cleared_seq
                    );
                }
            }
            for t in &e.range_tombstones {
                println!(
                    "  range tombstone @{}: {} .. {}",
                    t.seq,
                    show(&t.start, h),
                    show(&t.end, h)
                );
            }
            for seq in &e.deleted_range_tombstones {
                println!("  range tombstone @{seq} spent");
            }
            for b in &e.blob_files {
                if b.sealed {
                    println!(
                        "  blob {:06}.blob sealed: {} bytes, {} values, {} value bytes",
                        b.number, b.size, b.value_count, b.value_bytes
                    );
                } else {
                    println!("  blob {:06}.blob open", b.number);
                }
            }
            for (n, c, b) in &e.blob_garbage {
                println!("  blob {n:06}.blob garbage +{c} values, +{b} bytes");
            }
            for n in &e.deleted_blob_files {
                println!("  delete {n:06}.blob");
            }
        }
        println!("{} edits; tail {}", d.records.len(), tail_text(&d.tail));
    }
    Ok(Outcome::Ok)
}
