//! A replicated key-value service on openraft and varve-raft
//! (`docs/raft.md`): the server ([`server`]), a client that follows the
//! leader ([`client`]), the load generator ([`bench`]) and the fault test
//! ([`fault`]). The server's code reaches its storage only through
//! `backend` (`backend_varve.rs` here): the peer build in `rocksstore-peer/`
//! compiles the same `api`, `network` and `server` files with
//! `backend_rocks.rs` (openraft-rocksstore) instead. It is a package of its
//! own, outside the workspace, because openraft-rocksstore 0.9 needs
//! RocksDB 8 (rocksdb 0.22) while varve-bench links RocksDB 11.8, and a
//! build graph may link one RocksDB only.

pub mod api;
pub mod bench;
pub mod client;
pub mod fault;
pub mod network;
pub mod server;

#[path = "backend_varve.rs"]
pub mod backend;
