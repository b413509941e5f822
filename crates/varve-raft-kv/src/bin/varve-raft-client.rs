//! `varve-raft-client`: talks to a cluster of `varve-raft-server`s
//! (`docs/raft.md`): reads and writes, cluster membership, a load
//! benchmark and the fault test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use varve_raft_kv::api::{
    AddLearnerReq, ChangeMembershipReq, InitReq, NodeId, ReadReq, Reply, ScanReq, WriteReq,
};
use varve_raft_kv::client::Client;
use varve_raft_kv::fault::{FaultConfig, run as fault_test};

/// Client of a varve-raft-kv cluster: it finds the leader itself.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// The cluster's nodes, as ID=ADDR pairs separated by commas.
    #[arg(
        long,
        global = true,
        default_value = "1=127.0.0.1:21001,2=127.0.0.1:21002,3=127.0.0.1:21003"
    )]
    nodes: String,
    /// Give up a call after this many seconds (across retries).
    #[arg(long, global = true, default_value_t = 10)]
    timeout_secs: u64,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Makes the nodes of --nodes the first members of a new cluster.
    Init,
    /// Adds node ID at ADDR as a learner (it catches up, does not vote).
    AddLearner { id: NodeId, addr: String },
    /// Makes the voters exactly MEMBERS (comma-separated ids): promotes
    /// learners, removes nodes.
    ChangeMembership { members: String },
    /// Prints a node's Raft metrics (the first node of --nodes unless
    /// --node).
    Metrics {
        #[arg(long)]
        node: Option<NodeId>,
    },
    /// Prints a node's storage counters: batches written, WAL fdatasyncs.
    StorageStats {
        #[arg(long)]
        node: Option<NodeId>,
    },
    /// Sets KEY to VALUE (through the log).
    Put { key: String, value: String },
    /// Prints the value of KEY (linearizable unless --stale, which reads
    /// the first node's own state).
    Get {
        key: String,
        #[arg(long)]
        stale: bool,
    },
    /// Deletes KEY.
    Delete { key: String },
    /// Prints pairs with keys from START (to END), linearizable.
    Scan {
        #[arg(default_value = "")]
        start: String,
        end: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Writes unique keys from many clients for a while; prints writes/s
    /// and latency percentiles.
    Bench {
        #[arg(long, default_value_t = 16)]
        clients: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 100)]
        value_size: usize,
        /// Key prefix (distinct per run).
        #[arg(long, default_value = "bench")]
        prefix: String,
    },
    /// Starts a cluster, kills and pauses its nodes under load, and checks
    /// that no acknowledged write is lost and each client's register is
    /// linearizable. Exits non-zero if not.
    FaultTest {
        /// The varve-raft-server binary.
        #[arg(long)]
        server_bin: PathBuf,
        /// Directory for the nodes' data and logs.
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 3)]
        node_count: u64,
        /// Node i listens on 127.0.0.1:(base_port + i).
        #[arg(long, default_value_t = 22000)]
        base_port: u16,
        #[arg(long, default_value_t = 8)]
        clients: usize,
        #[arg(long, default_value_t = 50)]
        kills: u64,
        #[arg(long, default_value_t = 20)]
        pauses: u64,
        /// Stop injecting faults after this many seconds in any case.
        #[arg(long, default_value_t = 600)]
        max_secs: u64,
        /// Mean time between faults, ms.
        #[arg(long, default_value_t = 2000)]
        interval_ms: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn parse_nodes(s: &str) -> anyhow::Result<BTreeMap<NodeId, String>> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (id, addr) = p.split_once('=').context("--nodes wants ID=ADDR pairs")?;
            Ok((id.parse().context("node id")?, addr.to_string()))
        })
        .collect()
}

fn print(v: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let nodes = parse_nodes(&cli.nodes)?;
    let first = nodes.values().next().context("--nodes is empty")?.clone();
    let client = Client::new(
        nodes.clone(),
        Duration::from_secs(cli.timeout_secs.clamp(1, 5)),
        Duration::from_secs(cli.timeout_secs),
    );
    let unwrap = |r: Result<Reply, String>| -> anyhow::Result<serde_json::Value> {
        match r.map_err(anyhow::Error::msg)? {
            Reply::Ok(v) => Ok(v),
            other => bail!("{other:?}"),
        }
    };
    match cli.cmd {
        Cmd::Init => {
            let init = InitReq { nodes };
            unwrap(client.call_node(&first, "cluster/init", &init).await)?;
            println!("initialized");
        }
        Cmd::AddLearner { id, addr } => {
            print(
                &client
                    .call("cluster/add-learner", &AddLearnerReq { id, addr })
                    .await?,
            )?;
        }
        Cmd::ChangeMembership { members } => {
            let members: BTreeSet<NodeId> = members
                .split(',')
                .map(|m| m.trim().parse().context("member id"))
                .collect::<anyhow::Result<_>>()?;
            print(
                &client
                    .call(
                        "cluster/change-membership",
                        &ChangeMembershipReq { members },
                    )
                    .await?,
            )?;
        }
        Cmd::Metrics { node } => {
            let addr = match node {
                Some(id) => nodes.get(&id).context("no such node in --nodes")?.clone(),
                None => first,
            };
            print(&unwrap(client.get_node(&addr, "cluster/metrics").await)?)?;
        }
        Cmd::StorageStats { node } => {
            let addr = match node {
                Some(id) => nodes.get(&id).context("no such node in --nodes")?.clone(),
                None => first,
            };
            print(&unwrap(client.get_node(&addr, "storage/stats").await)?)?;
        }
        Cmd::Put { key, value } => {
            let w = WriteReq {
                key,
                value: Some(value),
            };
            print(&client.call("kv/write", &w).await?)?;
        }
        Cmd::Get { key, stale } => {
            let r = ReadReq {
                key,
                linearizable: !stale,
            };
            let v = if stale {
                unwrap(client.call_node(&first, "kv/read", &r).await)?
            } else {
                client.call("kv/read", &r).await?
            };
            print(&v)?;
        }
        Cmd::Delete { key } => {
            print(
                &client
                    .call("kv/write", &WriteReq { key, value: None })
                    .await?,
            )?;
        }
        Cmd::Scan { start, end, limit } => {
            let s = ScanReq {
                start,
                end,
                limit,
                linearizable: true,
            };
            print(&client.call("kv/scan", &s).await?)?;
        }
        Cmd::Bench {
            clients,
            seconds,
            value_size,
            prefix,
        } => {
            let r = varve_raft_kv::bench::run(
                &client,
                clients,
                Duration::from_secs(seconds),
                value_size,
                &prefix,
            )
            .await?;
            println!(
                "bench: {clients} clients, {value_size}-byte values, {:.1} s: {} writes, {:.0} \
                 writes/s, p50 {} us, p99 {} us, p99.9 {} us, {} failed",
                r.seconds,
                r.writes,
                r.writes_per_sec(),
                r.p50_us,
                r.p99_us,
                r.p999_us,
                r.failed
            );
        }
        Cmd::FaultTest {
            server_bin,
            dir,
            node_count,
            base_port,
            clients,
            kills,
            pauses,
            max_secs,
            interval_ms,
            seed,
        } => {
            let report = fault_test(&FaultConfig {
                server_bin,
                dir,
                nodes: node_count,
                base_port,
                clients,
                kills,
                pauses,
                max_time: Duration::from_secs(max_secs),
                interval: Duration::from_millis(interval_ms),
                seed,
            })
            .await?;
            println!("{report}");
            if report.lost > 0 || report.bad_reads > 0 || !report.linearizable {
                bail!("the fault test failed");
            }
            if report.kills < kills || report.pauses < pauses {
                bail!(
                    "the time limit came first: {} of {kills} kills, {} of {pauses} pauses",
                    report.kills,
                    report.pauses
                );
            }
        }
    }
    Ok(())
}
