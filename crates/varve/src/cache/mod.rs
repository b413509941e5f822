//! Block cache and table cache. Filled by the SSTable work.
