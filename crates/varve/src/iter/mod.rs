//! Iterators that combine other iterators: [`merging`] (one sorted cursor
//! over many sources) and [`level`] (the files of one level, opened as the
//! cursor reaches them). The cursor interface itself is
//! [`InternalIterator`](crate::internal_iter::InternalIterator); the
//! user-facing iterator is in `db/read/`.

pub(crate) mod level;
pub(crate) mod merging;
