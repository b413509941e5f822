//! [`OpenArgs`]: the keyword options of `varve.Db(...)`, turned into
//! `varve::Options`.
//!
//! Plain data built by `Db.__new__` while attached to the interpreter.
//! Only the spelling of enum-like options is checked here (`compression`,
//! `io_engine`, refused with the engine's `InvalidArgument`); sizes and counts go to the engine as given, and
//! `Options::validate` at open rejects nonsense with `InvalidArgumentError`.

use varve::Error;

/// The options `varve.Db` accepts; `None` keeps the engine's default.
pub(crate) struct OpenArgs {
    pub create_if_missing: bool,
    pub error_if_exists: bool,
    pub write_buffer_size: Option<usize>,
    pub cache_size: Option<usize>,
    pub memory_budget: Option<usize>,
    /// `None`: every value inline.
    pub min_blob_size: Option<usize>,
    pub blob_file_size: Option<u64>,
    pub bloom_bits_per_key: Option<u32>,
    pub compression: Option<String>,
    pub block_size: Option<usize>,
    pub max_open_files: Option<usize>,
    pub use_direct_reads: bool,
    pub io_engine: Option<String>,
    /// Time to live in seconds (`Options::ttl`).
    pub ttl: Option<f64>,
}

impl OpenArgs {
    /// The engine's options.
    pub(crate) fn into_options(self) -> varve::Result<varve::Options> {
        let mut o = varve::Options {
            create_if_missing: self.create_if_missing,
            error_if_exists: self.error_if_exists,
            min_blob_size: self.min_blob_size,
            memory_budget: self.memory_budget,
            use_direct_reads: self.use_direct_reads,
            ..varve::Options::default()
        };
        if let Some(v) = self.write_buffer_size {
            o.write_buffer_size = v;
        }
        if let Some(v) = self.cache_size {
            o.cache_size = v;
        }
        if let Some(v) = self.blob_file_size {
            o.blob_file_size = v;
        }
        if let Some(v) = self.bloom_bits_per_key {
            o.bloom_bits_per_key = v;
        }
        if let Some(v) = self.block_size {
            o.block_size = v;
        }
        if let Some(v) = self.max_open_files {
            o.max_open_files = v;
        }
        if let Some(c) = self.compression.as_deref() {
            o.compression = compression(c)?;
        }
        if let Some(e) = self.io_engine.as_deref() {
            o.io_engine = io_engine(e)?;
        }
        if let Some(secs) = self.ttl {
            o.ttl = Some(std::time::Duration::try_from_secs_f64(secs).map_err(|_| {
                Error::InvalidArgument(format!(
                    "ttl must be a number of seconds of at least 0.001, not {secs}"
                ))
            })?);
        }
        Ok(o)
    }
}

fn compression(name: &str) -> varve::Result<varve::Compression> {
    match name.to_ascii_lowercase().as_str() {
        "none" => Ok(varve::Compression::None),
        "lz4" => Ok(varve::Compression::Lz4),
        _ => Err(Error::InvalidArgument(format!(
            "compression must be None, 'none' or 'lz4', not {name:?}"
        ))),
    }
}

fn io_engine(name: &str) -> varve::Result<varve::IoEngine> {
    match name.to_ascii_lowercase().as_str() {
        "io_uring" | "uring" => Ok(varve::IoEngine::IoUring),
        "sync" => Ok(varve::IoEngine::Sync),
        _ => Err(Error::InvalidArgument(format!(
            "io_engine must be 'io_uring' or 'sync', not {name:?}"
        ))),
    }
}
