//! An in-memory file system, so the file-level targets run without disk IO.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A read-only in-memory file for `Table::open`.
#[derive(Debug)]
pub(super) struct MemFile {
    pub(super) data: Vec<u8>,
    pub(super) path: PathBuf,
}

impl RandomAccessFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        Ok(read_from(&self.data, buf, offset))
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

/// `pread` over `data`: the bytes at `offset` (fewer only at the end).
pub(super) fn read_from(data: &[u8], buf: &mut [u8], offset: u64) -> usize {
    let start = usize::try_from(offset).map_or(data.len(), |o| o.min(data.len()));
    let n = buf.len().min(data.len() - start);
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

/// A minimal in-memory file system: enough to read WALs and manifests and
/// to write the seeds. Directories are implicit; locks always succeed.
#[derive(Debug, Default)]
pub struct MemFs {
    files: Mutex<HashMap<PathBuf, Arc<Mutex<Vec<u8>>>>>,
}

impl MemFs {
    /// Stores `data` as the file `path` and returns the path.
    pub fn put(&self, path: &str, data: Vec<u8>) -> PathBuf {
        let path = PathBuf::from(path);
        self.files
            .lock()
            .insert(path.clone(), Arc::new(Mutex::new(data)));
        path
    }

    /// The contents of `path`, if it exists.
    pub fn get(&self, path: &Path) -> Option<Vec<u8>> {
        self.files.lock().get(path).map(|f| f.lock().clone())
    }

    fn file(&self, path: &Path) -> Result<Arc<Mutex<Vec<u8>>>> {
        self.files
            .lock()
            .get(path)
            .cloned()
            .ok_or_else(|| Error::NotFound(path.to_path_buf()))
    }
}

#[derive(Debug)]
pub(super) struct MemSequential {
    pub(super) data: Arc<Mutex<Vec<u8>>>,
    pub(super) pos: u64,
    pub(super) path: PathBuf,
}

impl SequentialFile for MemSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = read_from(&self.data.lock(), buf, self.pos);
        self.pos += n as u64;
        Ok(n)
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
pub(super) struct MemRandom {
    pub(super) data: Arc<Mutex<Vec<u8>>>,
    pub(super) path: PathBuf,
}

impl RandomAccessFile for MemRandom {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        Ok(read_from(&self.data.lock(), buf, offset))
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
pub(super) struct MemWritable {
    pub(super) data: Arc<Mutex<Vec<u8>>>,
    pub(super) path: PathBuf,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.data.lock().extend_from_slice(data);
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().len() as u64
    }
    fn path(&self) -> &Path {
        &self.path
    }
}

#[derive(Debug)]
pub(super) struct MemLock;

impl FileLock for MemLock {}

impl FileSystem for MemFs {
    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.files.lock().contains_key(path))
    }
    fn is_dir(&self, path: &Path) -> Result<bool> {
        Ok(self.files.lock().keys().any(|p| p.parent() == Some(path)))
    }
    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let data = Arc::new(Mutex::new(Vec::new()));
        self.files
            .lock()
            .insert(path.to_path_buf(), Arc::clone(&data));
        Ok(Box::new(MemWritable {
            data,
            path: path.to_path_buf(),
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        Ok(Box::new(MemSequential {
            data: self.file(path)?,
            pos: 0,
            path: path.to_path_buf(),
        }))
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(MemRandom {
            data: self.file(path)?,
            path: path.to_path_buf(),
        }))
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.file(path)?.lock().len() as u64)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.files
            .lock()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| Error::NotFound(path.to_path_buf()))
    }
    fn remove_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut files = self.files.lock();
        let f = files
            .remove(from)
            .ok_or_else(|| Error::NotFound(from.to_path_buf()))?;
        files.insert(to.to_path_buf(), f);
        Ok(())
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let f = self.file(path)?;
        let mut data = f.lock();
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(data.len());
        data.truncate(len);
        Ok(())
    }
    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn try_lock(&self, _path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        Ok(Some(Box::new(MemLock)))
    }
}
