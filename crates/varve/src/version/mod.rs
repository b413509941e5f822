//! Version edits, the manifest and the version set. Filled by the SSTable work.
