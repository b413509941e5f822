//! The fault test (`varve-raft-client fault-test`, `scripts/raft-cluster.sh`,
//! `docs/raft.md`, "The fault test"): it starts a cluster of server
//! processes on loopback, runs client tasks against it while it `SIGKILL`s
//! and restarts nodes (the leader or a follower) and `SIGSTOP`s and
//! resumes others (a partition of that node), then checks:
//!
//! - every write a client saw acknowledged is on every node, with its value;
//! - every read of a key the client itself wrote and saw acknowledged
//!   returns that write's value;
//! - the history of each client's register (its writes and linearizable
//!   reads, each with when it was invoked and when it returned) is
//!   linearizable, by `stateright`'s `LinearizabilityTester`. A write whose
//!   outcome is unknown stays in flight in the history forever (it may
//!   have taken effect at any later point), and the client goes on as a
//!   new thread of the history; a read that failed leaves it. A client
//!   moves to a fresh register every `OPS_PER_REGISTER` operations, so
//!   every history checked is short (the tester copies the rest of the
//!   history at every step of its search: a long one takes quadratic
//!   memory).
//!
//! Bounded: it stops after the kills and pauses asked for, or at the time
//! limit, whichever comes first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use stateright::semantics::register::{Register, RegisterOp, RegisterRet};
use stateright::semantics::{ConsistencyTester, LinearizabilityTester};
use tokio::sync::Mutex;

use crate::api::{InitReq, NodeId, ReadReq, Reply, ScanReq, WriteReq};
use crate::client::Client;

/// What the fault test runs.
#[derive(Debug, Clone)]
pub struct FaultConfig {
    pub server_bin: PathBuf,
    pub dir: PathBuf,
    pub nodes: u64,
    pub base_port: u16,
    pub clients: usize,
    pub kills: u64,
    pub pauses: u64,
    pub max_time: Duration,
    /// Mean time between two faults.
    pub interval: Duration,
    pub seed: u64,
}

/// What it found.
#[derive(Debug, Clone, Default)]
pub struct FaultReport {
    pub kills: u64,
    pub pauses: u64,
    pub leader_changes: u64,
    pub operations: u64,
    pub acked_writes: u64,
    pub unknown_outcomes: u64,
    pub lost: u64,
    pub bad_reads: u64,
    pub registers: usize,
    pub register_ops: u64,
    pub linearizable: bool,
    pub seconds: f64,
}

impl std::fmt::Display for FaultReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fault test: {:.0} s, {} kills, {} pauses, {} leader changes; {} operations, {} \
             acknowledged writes, {} with unknown outcome; lost {}, wrong reads {}; {} registers \
             ({} operations) {}",
            self.seconds,
            self.kills,
            self.pauses,
            self.leader_changes,
            self.operations,
            self.acked_writes,
            self.unknown_outcomes,
            self.lost,
            self.bad_reads,
            self.registers,
            self.register_ops,
            if self.linearizable {
                "linearizable"
            } else {
                "NOT linearizable"
            }
        )
    }
}

/// A small deterministic generator (xorshift) for the fault schedule.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// One server process.
struct Node {
    id: NodeId,
    addr: String,
    dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn start(&mut self, bin: &Path) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("open {}", self.log.display()))?;
        let child = Command::new(bin)
            .args(["--id", &self.id.to_string(), "--addr", &self.addr, "--dir"])
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", bin.display()))?;
        self.child = Some(child);
        Ok(())
    }

    fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut c) = self.child.take() {
            c.kill()?; // SIGKILL
            c.wait()?;
        }
        Ok(())
    }

    fn signal(&self, sig: &str) -> anyhow::Result<()> {
        if let Some(c) = &self.child {
            let st = Command::new("kill")
                .args([sig, &c.id().to_string()])
                .status()?;
            if !st.success() {
                bail!("kill {sig} of node {} failed", self.id);
            }
        }
        Ok(())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.signal("-CONT");
        let _ = self.kill();
    }
}

/// One event of a register's history, in real-time order.
enum Event {
    Invoke(u64, RegisterOp<String>),
    Return(u64, RegisterRet<String>),
}

/// What the client tasks share.
struct Shared {
    stop: AtomicBool,
    acked: Mutex<Vec<(String, String)>>,
    operations: AtomicU64,
    unknown: AtomicU64,
    bad_reads: AtomicU64,
    /// Per client: the histories of its registers, by register number.
    histories: Vec<Mutex<BTreeMap<u64, Vec<Event>>>>,
}

/// Operations on one register before the client moves on to a fresh one
/// (Jepsen's "independent keys"): the checker's search copies the rest of
/// the history at every step, so it stays fast only on short histories.
const OPS_PER_REGISTER: u64 = 40;

async fn client_task(c: usize, client: Client, shared: Arc<Shared>) {
    // The client's thread id in its register's history: a new one after
    // every call whose outcome is unknown (that call stays in flight).
    let mut thread = 0u64;
    let mut i = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        i += 1;
        // A unique key, then read it back.
        let (key, value) = (format!("u-{c:03}-{i:08}"), format!("{c}-{i}"));
        shared.operations.fetch_add(1, Ordering::Relaxed);
        let w = WriteReq {
            key: key.clone(),
            value: Some(value.clone()),
        };
        if client.call("kv/write", &w).await.is_ok() {
            shared.acked.lock().await.push((key.clone(), value.clone()));
            shared.operations.fetch_add(1, Ordering::Relaxed);
            let r = ReadReq {
                key,
                linearizable: true,
            };
            if let Ok(v) = client.call("kv/read", &r).await
                && v.as_str() != Some(value.as_str())
            {
                eprintln!("fault test: read back {v} for {} (wrote {value})", r.key);
                shared.bad_reads.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            shared.unknown.fetch_add(1, Ordering::Relaxed);
        }
        // The register: a write or a linearizable read.
        shared.operations.fetch_add(1, Ordering::Relaxed);
        let n = i / OPS_PER_REGISTER;
        let reg = format!("reg-{c:03}-{n:06}");
        let record = |e: Event| async {
            shared.histories[c]
                .lock()
                .await
                .entry(n)
                .or_default()
                .push(e);
        };
        if i.is_multiple_of(2) {
            let v = format!("{c}-{i}");
            record(Event::Invoke(thread, RegisterOp::Write(v.clone()))).await;
            let w = WriteReq {
                key: reg,
                value: Some(v),
            };
            match client.call("kv/write", &w).await {
                Ok(_) => record(Event::Return(thread, RegisterRet::WriteOk)).await,
                Err(_) => {
                    // It may take effect later: it stays in flight, and the
                    // client goes on as a new thread.
                    shared.unknown.fetch_add(1, Ordering::Relaxed);
                    thread += 1;
                }
            }
        } else {
            record(Event::Invoke(thread, RegisterOp::Read)).await;
            let r = ReadReq {
                key: reg,
                linearizable: true,
            };
            match client.call("kv/read", &r).await {
                Ok(v) => {
                    let v = v.as_str().unwrap_or("").to_string();
                    record(Event::Return(thread, RegisterRet::ReadOk(v))).await;
                }
                Err(_) => {
                    // A read that failed changed nothing: it leaves the
                    // history.
                    if let Some(h) = shared.histories[c].lock().await.get_mut(&n) {
                        h.pop();
                    }
                }
            }
        }
    }
}

/// Whether `history` (of one register, initially `""`) is linearizable,
/// by stateright's tester; an error if it is not a well-formed history.
fn is_linearizable(history: &[Event]) -> anyhow::Result<bool> {
    let mut t = LinearizabilityTester::new(Register(String::new()));
    for e in history {
        match e {
            Event::Invoke(thread, op) => t.on_invoke(*thread, op.clone()).map(|_| ()),
            Event::Return(thread, ret) => t.on_return(*thread, ret.clone()).map(|_| ()),
        }
        .map_err(|e| anyhow::anyhow!("bad history: {e}"))?;
    }
    Ok(t.serialized_history().is_some())
}

/// Checks every register's history, on a thread of its own: the tester's
/// search recurses once per operation, deeper than a default stack.
fn check_all(histories: Vec<Vec<Event>>) -> anyhow::Result<bool> {
    std::thread::Builder::new()
        .name("linearizability".into())
        .stack_size(1 << 30)
        .spawn(move || {
            let mut all = true;
            for (r, h) in histories.iter().enumerate() {
                if !is_linearizable(h).with_context(|| format!("register {r}"))? {
                    eprintln!("fault test: register {r} is not linearizable");
                    all = false;
                }
            }
            anyhow::Ok(all)
        })?
        .join()
        .map_err(|_| anyhow::anyhow!("the linearizability check panicked"))?
}

/// The leader node `client` sees, by asking every node's metrics.
async fn current_leader(client: &Client) -> Option<NodeId> {
    for addr in client.nodes().values() {
        if let Ok(Reply::Ok(m)) = client.get_node(addr, "cluster/metrics").await
            && let Some(l) = m.get("current_leader").and_then(|v| v.as_u64())
        {
            return Some(l);
        }
    }
    None
}

/// Waits until every node has applied the same last log entry.
async fn converge(client: &Client, limit: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        let mut applied = Vec::new();
        for addr in client.nodes().values() {
            let a = match client.get_node(addr, "cluster/metrics").await {
                Ok(Reply::Ok(m)) => m
                    .get("last_applied")
                    .and_then(|l| l.get("index"))
                    .and_then(|i| i.as_u64()),
                _ => None,
            };
            applied.push(a);
        }
        if applied.iter().all(|a| a.is_some() && *a == applied[0]) {
            return Ok(());
        }
        if start.elapsed() > limit {
            bail!("the nodes did not converge in {limit:?}: last applied {applied:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every pair of node `addr`'s own state with keys in `[start, end)`.
async fn node_pairs(
    client: &Client,
    addr: &str,
    start: &str,
    end: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let req = ScanReq {
        start: start.into(),
        end: Some(end.into()),
        limit: usize::MAX,
        linearizable: false,
    };
    match client.call_node(addr, "kv/scan", &req).await {
        Ok(Reply::Ok(v)) => {
            let pairs: Vec<(String, String)> = serde_json::from_value(v)?;
            Ok(pairs.into_iter().collect())
        }
        other => bail!("scan of {addr}: {other:?}"),
    }
}

/// Runs the fault test (see the module docs).
pub async fn run(cfg: &FaultConfig) -> anyhow::Result<FaultReport> {
    std::fs::create_dir_all(&cfg.dir)?;
    let mut nodes: Vec<Node> = (1..=cfg.nodes)
        .map(|id| Node {
            id,
            addr: format!("127.0.0.1:{}", cfg.base_port + id as u16),
            dir: cfg.dir.join(format!("node-{id}")),
            log: cfg.dir.join(format!("node-{id}.log")),
            child: None,
        })
        .collect();
    for n in &mut nodes {
        n.start(&cfg.server_bin)?;
    }
    let addrs: BTreeMap<NodeId, String> = nodes.iter().map(|n| (n.id, n.addr.clone())).collect();
    let client = Client::new(
        addrs.clone(),
        Duration::from_secs(2),
        Duration::from_secs(10),
    );
    // Initialize through node 1 once it listens.
    let start = Instant::now();
    loop {
        let init = InitReq {
            nodes: addrs.clone(),
        };
        match client.call_node(&addrs[&1], "cluster/init", &init).await {
            Ok(Reply::Ok(_)) => break,
            Ok(other) => bail!("init: {other:?}"),
            Err(_) if start.elapsed() < Duration::from_secs(20) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => bail!("init: node 1 does not answer: {e}"),
        }
    }
    while current_leader(&client).await.is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            bail!("no leader 30 s after init");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        acked: Mutex::new(Vec::new()),
        operations: AtomicU64::new(0),
        unknown: AtomicU64::new(0),
        bad_reads: AtomicU64::new(0),
        histories: (0..cfg.clients)
            .map(|_| Mutex::new(BTreeMap::new()))
            .collect(),
    });
    let tasks: Vec<_> = (0..cfg.clients)
        .map(|c| tokio::spawn(client_task(c, client.clone(), Arc::clone(&shared))))
        .collect();
    // Leader changes, seen every 100 ms.
    let leader_changes = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (client, shared, changes) = (
            client.clone(),
            Arc::clone(&shared),
            Arc::clone(&leader_changes),
        );
        tokio::spawn(async move {
            let mut last = None;
            while !shared.stop.load(Ordering::Relaxed) {
                if let Some(l) = current_leader(&client).await {
                    if last.is_some() && last != Some(l) {
                        changes.fetch_add(1, Ordering::Relaxed);
                    }
                    last = Some(l);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    // The faults.
    let mut rng = Rng(cfg.seed | 1);
    let (mut kills, mut pauses) = (0u64, 0u64);
    let begin = Instant::now();
    while (kills < cfg.kills || pauses < cfg.pauses) && begin.elapsed() < cfg.max_time {
        let half = cfg.interval.as_millis() as u64 / 2;
        tokio::time::sleep(Duration::from_millis(half + rng.below(half * 2 + 1))).await;
        let leader = current_leader(&client).await;
        // The leader half of the time, else a random node.
        let target = match leader {
            Some(l) if rng.below(2) == 0 => l,
            _ => 1 + rng.below(cfg.nodes),
        };
        let node = nodes
            .iter_mut()
            .find(|n| n.id == target)
            .context("no such node")?;
        let kill = kills < cfg.kills && (pauses >= cfg.pauses || rng.below(10) < 7);
        if kill {
            node.kill()?;
            kills += 1;
            tokio::time::sleep(Duration::from_millis(200 + rng.below(800))).await;
            node.start(&cfg.server_bin)?;
        } else {
            node.signal("-STOP")?;
            pauses += 1;
            tokio::time::sleep(Duration::from_millis(500 + rng.below(2500))).await;
            node.signal("-CONT")?;
        }
    }
    // Let the clients run on a healed cluster for a moment, then stop.
    tokio::time::sleep(Duration::from_secs(2)).await;
    shared.stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await?;
    }
    watcher.await?;

    // Every node has every acknowledged write.
    converge(&client, Duration::from_secs(60)).await?;
    let acked = shared.acked.lock().await;
    let mut lost = 0u64;
    for n in &nodes {
        let pairs = node_pairs(&client, &n.addr, "u-", "u.").await?;
        for (k, v) in acked.iter() {
            if pairs.get(k) != Some(v) {
                if lost < 5 {
                    eprintln!(
                        "fault test: node {} has {:?} for acknowledged {k} = {v}",
                        n.id,
                        pairs.get(k)
                    );
                }
                lost += 1;
            }
        }
    }

    // Each register's history is linearizable.
    let mut histories = Vec::new();
    for h in &shared.histories {
        histories.extend(std::mem::take(&mut *h.lock().await).into_values());
    }
    let register_ops = histories
        .iter()
        .flatten()
        .filter(|e| matches!(e, Event::Invoke(..)))
        .count() as u64;
    let register_count = histories.len();
    let linearizable = check_all(histories)?;
    Ok(FaultReport {
        kills,
        pauses,
        leader_changes: leader_changes.load(Ordering::Relaxed),
        operations: shared.operations.load(Ordering::Relaxed),
        acked_writes: acked.len() as u64,
        unknown_outcomes: shared.unknown.load(Ordering::Relaxed),
        lost,
        bad_reads: shared.bad_reads.load(Ordering::Relaxed),
        registers: register_count,
        register_ops,
        linearizable,
        seconds: begin.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t: u64, v: &str) -> [Event; 2] {
        [
            Event::Invoke(t, RegisterOp::Write(v.into())),
            Event::Return(t, RegisterRet::WriteOk),
        ]
    }

    fn r(t: u64, v: &str) -> [Event; 2] {
        [
            Event::Invoke(t, RegisterOp::Read),
            Event::Return(t, RegisterRet::ReadOk(v.into())),
        ]
    }

    #[test]
    fn the_checker_catches_a_stale_read() {
        let good: Vec<Event> = [w(0, "a"), r(0, "a"), w(0, "b"), r(0, "b")]
            .into_iter()
            .flatten()
            .collect();
        assert!(is_linearizable(&good).expect("well formed"));
        let stale: Vec<Event> = [w(0, "a"), w(0, "b"), r(0, "a")]
            .into_iter()
            .flatten()
            .collect();
        assert!(!is_linearizable(&stale).expect("well formed"));
    }

    #[test]
    fn a_write_of_unknown_outcome_may_land_later() {
        // Thread 0's write of "x" never returned; thread 1 (the same
        // client, after giving up) writes "y", then reads "x": the lost
        // write took effect after "y", which is allowed.
        let mut h = vec![Event::Invoke(0, RegisterOp::Write("x".into()))];
        h.extend(w(1, "y"));
        h.extend(r(1, "x"));
        assert!(is_linearizable(&h).expect("well formed"));
        // But a value nobody wrote is never readable.
        let mut h = vec![Event::Invoke(0, RegisterOp::Write("x".into()))];
        h.extend(r(1, "z"));
        assert!(!is_linearizable(&h).expect("well formed"));
    }
}
