//! File names the version set reasons about: which numbered file a directory
//! entry is. Mirrors the parser in `db/filenames.rs` (private to `db`), kept
//! to the kinds this module needs. Pure functions; thread-safe.

/// Kinds of directory entries that [`super::VersionSet::obsolete_files`] considers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    /// `nnnnnn.log`.
    Wal(u64),
    /// `nnnnnn.sst`.
    Table(u64),
    /// `nnnnnn.blob`.
    Blob(u64),
    /// `MANIFEST-nnnnnn`.
    Manifest(u64),
    /// `*.tmp`.
    Temp,
}

/// Recognises `name`; `None` for `CURRENT`, `LOCK`, `LOG*` and foreign files.
pub(crate) fn parse(name: &str) -> Option<Name> {
    if name.ends_with(".tmp") {
        return Some(Name::Temp);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return number(n).map(Name::Manifest);
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let n = number(stem)?;
    match ext {
        "log" => Some(Name::Wal(n)),
        "sst" => Some(Name::Table(n)),
        "blob" => Some(Name::Blob(n)),
        _ => None,
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(parse("000012.log"), Some(Name::Wal(12)));
        assert_eq!(parse("000007.sst"), Some(Name::Table(7)));
        assert_eq!(parse("000007.blob"), Some(Name::Blob(7)));
        assert_eq!(parse("MANIFEST-000003"), Some(Name::Manifest(3)));
        assert_eq!(parse("CURRENT.000003.tmp"), Some(Name::Temp));
        for foreign in [
            "CURRENT",
            "LOCK",
            "LOG",
            "LOG.old",
            "x.log",
            "MANIFEST-",
            "MANIFEST-1a",
            "-1.sst",
        ] {
            assert_eq!(parse(foreign), None, "{foreign}");
        }
    }
}
