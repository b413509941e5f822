//! [`verify_table`]: read a whole table once, so that every block's
//! checksum is verified, for `varve check` and repair ([`verify_table_with`]
//! also shows each entry to the caller in the same pass). Stateless.

use std::sync::Arc;

use super::table::{Table, TableReadOptions};
use crate::error::{Error, Result};
use crate::internal_iter::InternalIterator;

/// Opens the table at `path` and reads every entry (so every block's
/// checksum is verified), checking that the count matches its properties.
/// Returns the open table. Used by `varve check` and repair.
pub(crate) fn verify_table(
    fs: &dyn crate::io::FileSystem,
    path: &std::path::Path,
) -> Result<Arc<Table>> {
    verify_table_with(fs, path, |_, _| Ok(()))
}

/// [`verify_table`], handing every entry (internal key, value) to `visit`
/// on the way; the first error of `visit` ends the walk and is returned.
pub(crate) fn verify_table_with(
    fs: &dyn crate::io::FileSystem,
    path: &std::path::Path,
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<Arc<Table>> {
    let size = fs.file_size(path)?;
    let file = fs.open_random_access(path)?;
    let table = Table::open(file, size, TableReadOptions::default())?;
    let mut it = table.iter();
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() {
        visit(it.key(), it.value())?;
        n += 1;
        it.next();
    }
    it.status()?;
    let want = table.properties().num_entries;
    if n != want {
        return Err(Error::corruption(
            path,
            0,
            format!("table holds {n} entries, its properties say {want}"),
        ));
    }
    Ok(table)
}
