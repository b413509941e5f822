//! `varve-raft-server`: one node of the replicated key-value service
//! (`docs/raft.md`), its log and state machine in varve. Listens on a
//! loopback address only; `--help` lists the options.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    varve_raft_kv::server::main_from_args().await
}
