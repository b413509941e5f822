//! Sorted string tables (SST files). Filled by the SSTable work.
