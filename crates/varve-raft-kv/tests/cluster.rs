//! The service end to end, with real server processes on loopback: a
//! short fault test (kills and pauses under load; no acknowledged write
//! lost, every register linearizable), and membership changes (a learner
//! added after the log was purged, so it is sent a snapshot, then promoted;
//! a voter removed). The long fault test is
//! `scripts/raft-cluster.sh`.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use varve_raft_kv::api::{
    AddLearnerReq, ChangeMembershipReq, InitReq, ReadReq, Reply, ScanReq, WriteReq,
};
use varve_raft_kv::client::Client;
use varve_raft_kv::fault::{FaultConfig, run};

const SERVER: &str = env!("CARGO_BIN_EXE_varve-raft-server");

/// A port range of this test process (two tests of this file run at once).
fn base_port(offset: u16) -> u16 {
    20000 + (std::process::id() % 500) as u16 * 20 + offset
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn short_fault_test_loses_nothing_and_stays_linearizable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let report = runtime()
        .block_on(run(&FaultConfig {
            server_bin: SERVER.into(),
            dir: dir.path().to_path_buf(),
            nodes: 3,
            base_port: base_port(0),
            clients: 4,
            kills: 4,
            pauses: 2,
            max_time: Duration::from_secs(120),
            interval: Duration::from_millis(800),
            seed: 7,
        }))
        .expect("fault test");
    eprintln!("{report}");
    assert_eq!((report.kills, report.pauses), (4, 2), "{report}");
    assert!(report.acked_writes > 0, "{report}");
    assert_eq!(report.lost, 0, "{report}");
    assert_eq!(report.bad_reads, 0, "{report}");
    assert!(report.linearizable, "{report}");
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn server(id: u64, addr: &str, dir: &std::path::Path) -> Server {
    Server(
        Command::new(SERVER)
            // Snapshots (and log purges) every 50 entries: a node that
            // joins late is sent a snapshot.
            .args([
                "--id",
                &id.to_string(),
                "--addr",
                addr,
                "--snapshot-every",
                "50",
                "--keep-logs",
                "0",
                "--dir",
            ])
            .arg(dir.join(format!("n{id}")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a server"),
    )
}

async fn value_on(client: &Client, addr: &str, key: &str) -> Option<String> {
    let r = ReadReq {
        key: key.into(),
        linearizable: false,
    };
    match client.call_node(addr, "kv/read", &r).await {
        Ok(Reply::Ok(v)) => v.as_str().map(str::to_string),
        _ => None,
    }
}

#[test]
fn a_learner_is_added_promoted_and_a_voter_removed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = base_port(10);
    let addr = |i: u16| format!("127.0.0.1:{}", port + i);
    let _servers: Vec<Server> = (1..=4)
        .map(|i| server(u64::from(i), &addr(i), dir.path()))
        .collect();
    runtime().block_on(async {
        let first: BTreeMap<u64, String> = (1..=3).map(|i| (u64::from(i), addr(i))).collect();
        let client = Client::new(
            first.clone(),
            Duration::from_secs(2),
            Duration::from_secs(20),
        );
        let start = Instant::now();
        loop {
            let init = InitReq {
                nodes: first.clone(),
            };
            match client.call_node(&addr(1), "cluster/init", &init).await {
                Ok(Reply::Ok(_)) => break,
                _ if start.elapsed() < Duration::from_secs(20) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                other => panic!("init: {other:?}"),
            }
        }
        let put = |k: &str| WriteReq {
            key: k.into(),
            value: Some(format!("v-{k}")),
        };
        // 10 KB values (blob files in the state machine): the snapshot,
        // 3 MB, travels in several chunks of more than axum's default
        // body limit.
        for i in 0..300 {
            let w = WriteReq {
                key: format!("early-{i:03}"),
                value: Some(format!("{i}-{}", "x".repeat(10_000))),
            };
            client.call("kv/write", &w).await.expect("write");
        }
        client
            .call("kv/write", &put("before"))
            .await
            .expect("write");
        // Node 4 joins as a learner and catches up: the entries before
        // the last snapshot are purged, so it is sent the snapshot.
        client
            .call(
                "cluster/add-learner",
                &AddLearnerReq {
                    id: 4,
                    addr: addr(4),
                },
            )
            .await
            .expect("add learner");
        let deadline = Instant::now() + Duration::from_secs(60);
        while value_on(&client, &addr(4), "before").await.as_deref() != Some("v-before") {
            assert!(Instant::now() < deadline, "the learner never caught up");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let scan = ScanReq {
            start: "early-".into(),
            end: Some("early.".into()),
            limit: 1000,
            linearizable: false,
        };
        match client.call_node(&addr(4), "kv/scan", &scan).await {
            Ok(Reply::Ok(v)) => {
                let pairs: Vec<(String, String)> = serde_json::from_value(v).expect("pairs");
                assert_eq!(pairs.len(), 300, "the learner has every early key");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    assert_eq!(k, &format!("early-{i:03}"));
                    assert_eq!(v, &format!("{i}-{}", "x".repeat(10_000)));
                }
            }
            other => panic!("scan of the learner: {other:?}"),
        }
        let purged = match client.get_node(&addr(1), "cluster/metrics").await {
            Ok(Reply::Ok(m)) => m["purged"]["index"].as_u64(),
            other => panic!("metrics: {other:?}"),
        };
        assert!(
            purged.is_some_and(|p| p > 0),
            "the leader purged its log: {purged:?}"
        );
        // Promoted, and node 3 removed.
        client
            .call(
                "cluster/change-membership",
                &ChangeMembershipReq {
                    members: [1, 2, 4].into(),
                },
            )
            .await
            .expect("change membership");
        client
            .call("kv/write", &put("after"))
            .await
            .expect("write after");
        let m = match client.get_node(&addr(1), "cluster/metrics").await {
            Ok(Reply::Ok(m)) => m,
            other => panic!("metrics: {other:?}"),
        };
        let configs = &m["membership_config"]["membership"]["configs"];
        assert_eq!(configs, &serde_json::json!([[1, 2, 4]]), "{m}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while value_on(&client, &addr(4), "after").await.as_deref() != Some("v-after") {
            assert!(
                Instant::now() < deadline,
                "the new voter never got the write"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}
