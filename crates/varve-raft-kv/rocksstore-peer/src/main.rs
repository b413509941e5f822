//! `varve-raft-server-rocksstore`: `varve-raft-server` with
//! openraft-rocksstore under it instead of varve-raft (the same `api`,
//! `network` and `server` source files; `backend_rocks.rs` instead of
//! `backend_varve.rs`). For the throughput comparison only.

#[path = "../../src/api.rs"]
#[allow(dead_code)]
mod api;
#[path = "../../src/backend_rocks.rs"]
mod backend;
#[path = "../../src/network.rs"]
mod network;
#[path = "../../src/server.rs"]
#[allow(dead_code)]
mod server;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    server::main_from_args().await
}
