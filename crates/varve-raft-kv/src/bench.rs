//! The load generator (`varve-raft-client bench`): `clients` tasks write
//! unique keys with values of `value_size` bytes through the leader for a
//! fixed time; reports writes per second and latency percentiles.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::api::WriteReq;
use crate::client::Client;

/// What a load run measured.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub writes: u64,
    pub failed: u64,
    pub seconds: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
}

impl LoadReport {
    pub fn writes_per_sec(&self) -> f64 {
        self.writes as f64 / self.seconds.max(1e-9)
    }
}

/// Runs the load (see the module docs); keys start with `prefix`.
pub async fn run(
    client: &Client,
    clients: usize,
    duration: Duration,
    value_size: usize,
    prefix: &str,
) -> anyhow::Result<LoadReport> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = client.clone();
        let prefix = prefix.to_string();
        tasks.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
            let mut failed = 0u64;
            let mut i = 0u64;
            while start.elapsed() < duration {
                let key = format!("{prefix}-{c:03}-{i:09}");
                let mut value = format!("{c}-{i}-");
                value.extend(std::iter::repeat_n(
                    'v',
                    value_size.saturating_sub(value.len()),
                ));
                let t = Instant::now();
                match client
                    .call(
                        "kv/write",
                        &WriteReq {
                            key,
                            value: Some(value),
                        },
                    )
                    .await
                {
                    Ok(_) => h.record(t.elapsed().as_micros().max(1) as u64)?,
                    Err(_) => failed += 1,
                }
                i += 1;
            }
            anyhow::Ok((h, failed))
        }));
    }
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut failed = 0;
    for t in tasks {
        let (h, f) = t.await??;
        all.add(&h)?;
        failed += f;
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(LoadReport {
        writes: all.len(),
        failed,
        seconds,
        p50_us: all.value_at_quantile(0.50),
        p99_us: all.value_at_quantile(0.99),
        p999_us: all.value_at_quantile(0.999),
    })
}
