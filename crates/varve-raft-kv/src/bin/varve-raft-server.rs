//! `varve-raft-server`: one node of the replicated key-value service
//! (`docs/raft.md`). Listens on a loopback address only.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use varve_raft_kv::server::{NodeConfig, serve};

/// One node of a replicated key-value store: openraft over HTTP, its log
/// and state machine in varve (or in RocksDB, in the peer build).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// This node's id (unique in the cluster, > 0).
    #[arg(long)]
    id: u64,
    /// Address to listen on and that other nodes reach it at; loopback
    /// only (e.g. 127.0.0.1:21001).
    #[arg(long)]
    addr: SocketAddr,
    /// Directory of the node's database (created if missing).
    #[arg(long)]
    dir: PathBuf,
    /// Leader heartbeat interval, ms.
    #[arg(long, default_value_t = 100)]
    heartbeat_ms: u64,
    /// Election timeout range, ms (a follower that hears no leader for a
    /// random time in this range starts an election).
    #[arg(long, default_value_t = 500)]
    election_min_ms: u64,
    #[arg(long, default_value_t = 1000)]
    election_max_ms: u64,
    /// Snapshot (and purge the log) every this many entries.
    #[arg(long, default_value_t = 20_000)]
    snapshot_every: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    serve(
        NodeConfig {
            id: a.id,
            addr: a.addr,
            heartbeat_ms: a.heartbeat_ms,
            election_min_ms: a.election_min_ms,
            election_max_ms: a.election_max_ms,
            snapshot_every: a.snapshot_every,
        },
        &a.dir,
    )
    .await
}
