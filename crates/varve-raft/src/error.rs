//! Errors: [`OpenError`] for opening a store, and the mapping of varve
//! errors and undecodable bytes to openraft's `StorageError`, naming what
//! was being read or written.

use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};

use crate::types::NodeId;

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The database or one of its keyspaces could not be opened.
    #[error("varve-raft: {0}")]
    Db(#[from] varve::Error),
    /// Stored state could not be decoded.
    #[error("varve-raft: {0}")]
    Decode(String),
}

/// A storage error for `verb` on `subject` caused by `e`.
pub(crate) fn io(
    subject: ErrorSubject<NodeId>,
    verb: ErrorVerb,
    e: impl std::fmt::Display,
) -> StorageError<NodeId> {
    StorageIOError::new(subject, verb, AnyError::error(e.to_string())).into()
}

pub(crate) fn read_logs(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::Logs, ErrorVerb::Read, e)
}

pub(crate) fn write_logs(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::Logs, ErrorVerb::Write, e)
}

pub(crate) fn read_vote(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::Vote, ErrorVerb::Read, e)
}

pub(crate) fn write_vote(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::Vote, ErrorVerb::Write, e)
}

pub(crate) fn read_sm(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::StateMachine, ErrorVerb::Read, e)
}

pub(crate) fn write_sm(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::StateMachine, ErrorVerb::Write, e)
}

pub(crate) fn read_snapshot(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::Snapshot(None), ErrorVerb::Read, e)
}

pub(crate) fn write_snapshot(e: impl std::fmt::Display) -> StorageError<NodeId> {
    io(ErrorSubject::Snapshot(None), ErrorVerb::Write, e)
}
