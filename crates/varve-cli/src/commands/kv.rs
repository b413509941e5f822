//! `get`, `put`, `delete`, `scan`: reading and writing keys.

use anyhow::Result;
use serde_json::json;
use varve::{ReadOptions, WriteOptions};

use super::print_json;
use crate::Outcome;
use crate::args::{Cli, ScanArgs};
use crate::bytes::{parse, show};
use crate::open::{db_path, keyspace, open_at, open_existing, open_read_only};

/// `get KEY`.
pub fn get(cli: &Cli, key: &str) -> Result<Outcome> {
    let k = parse(key)?;
    let db = open_read_only(cli)?;
    let v = keyspace(cli, &db, false)?.get(&k)?;
    db.close()?;
    if cli.json {
        print_json(&json!({
            "key": show(&k, cli.hex),
            "found": v.is_some(),
            "value": v.as_deref().map(|v| show(v, cli.hex)),
        }));
    } else if let Some(v) = &v {
        println!("{}", show(v, cli.hex));
    } else {
        eprintln!("varve: key {} not found", show(&k, cli.hex));
    }
    Ok(if v.is_some() {
        Outcome::Ok
    } else {
        Outcome::NotFound
    })
}

/// `put KEY VALUE` (creates the database if missing).
pub fn put(cli: &Cli, key: &str, value: &str, sync: bool) -> Result<Outcome> {
    let (k, v) = (parse(key)?, parse(value)?);
    let db = open_at(db_path(cli)?, true)?;
    keyspace(cli, &db, true)?.put_opt(
        &k,
        &v,
        &WriteOptions {
            sync,
            ..WriteOptions::default()
        },
    )?;
    db.close()?;
    if cli.json {
        print_json(&json!({"ok": true, "key": show(&k, cli.hex)}));
    }
    Ok(Outcome::Ok)
}

/// `delete KEY`.
pub fn delete(cli: &Cli, key: &str) -> Result<Outcome> {
    let k = parse(key)?;
    let db = open_existing(cli)?;
    keyspace(cli, &db, false)?.delete(&k)?;
    db.close()?;
    if cli.json {
        print_json(&json!({"ok": true, "key": show(&k, cli.hex)}));
    }
    Ok(Outcome::Ok)
}

/// `delete-range`.
pub fn delete_range(cli: &Cli, from: &str, to: &str) -> Result<Outcome> {
    let (a, b) = (parse(from)?, parse(to)?);
    let db = open_existing(cli)?;
    keyspace(cli, &db, false)?.delete_range(a.as_slice()..b.as_slice())?;
    db.close()?;
    if cli.json {
        print_json(&json!({"ok": true, "from": show(&a, cli.hex), "to": show(&b, cli.hex)}));
    }
    Ok(Outcome::Ok)
}

/// `scan`.
pub fn scan(cli: &Cli, a: &ScanArgs) -> Result<Outcome> {
    let opts = ReadOptions {
        iterate_lower_bound: a.from.as_deref().map(parse).transpose()?,
        iterate_upper_bound: a.to.as_deref().map(parse).transpose()?,
        ..ReadOptions::default()
    };
    let db = open_read_only(cli)?;
    let mut it = keyspace(cli, &db, false)?.iter_opt(&opts);
    if a.reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let limit = a.limit.unwrap_or(u64::MAX);
    let mut n = 0u64;
    let mut rows = Vec::new();
    while it.valid() && n < limit {
        if !a.count {
            let k = show(it.key(), cli.hex);
            // A value kept in a blob file is read here; if that fails the
            // iterator turns invalid and nothing of this entry is printed.
            let v = if a.keys_only {
                None
            } else {
                Some(show(it.value(), cli.hex))
            };
            if !it.valid() {
                break;
            }
            match (cli.json, v) {
                (true, None) => rows.push(json!({"key": k})),
                (true, Some(v)) => rows.push(json!({"key": k, "value": v})),
                (false, None) => println!("{k}"),
                (false, Some(v)) => println!("{k} => {v}"),
            }
        }
        n += 1;
        if a.reverse {
            it.move_prev();
        } else {
            it.move_next();
        }
    }
    it.status()?;
    drop(it);
    db.close()?;
    if a.count {
        if cli.json {
            print_json(&json!({ "count": n }));
        } else {
            println!("{n}");
        }
    } else if cli.json {
        print_json(&serde_json::Value::Array(rows));
    }
    Ok(Outcome::Ok)
}
