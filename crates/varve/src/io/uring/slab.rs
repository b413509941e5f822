//! A slab of values addressed by [`SlabKey`]: an index plus a generation.
//!
//! The reactor keeps one entry per read it has accepted and puts the key,
//! packed into a `u64`, in the read's `user_data`. A completion is matched
//! by looking the key up: a stale key (its slot freed and reused since)
//! has an older generation and finds nothing, so a completion can never be
//! delivered to the wrong read, and no raw pointer ever travels through the
//! kernel. Single-threaded (owned by one thread's reactor); no `unsafe`.

/// Address of a slab entry: slot index and the slot's generation at insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlabKey {
    index: u32,
    generation: u32,
}

impl SlabKey {
    /// The key packed into an io_uring `user_data`.
    pub(crate) fn to_user_data(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// The key a `user_data` was made from.
    pub(crate) fn from_user_data(data: u64) -> SlabKey {
        SlabKey {
            index: data as u32,
            generation: (data >> 32) as u32,
        }
    }
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Values stored under generation-checked keys; freed slots are reused.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Slab<T> {
    pub(crate) fn new() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Stores `value` and returns its key.
    pub(crate) fn insert(&mut self, value: T) -> SlabKey {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return SlabKey {
                index,
                generation: slot.generation,
            };
        }
        let index = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        assert!(index < u32::MAX, "more than 2^32 reads in flight");
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        SlabKey {
            index,
            generation: 0,
        }
    }

    /// The value under `key`, unless the key is stale or unknown.
    pub(crate) fn get_mut(&mut self, key: SlabKey) -> Option<&mut T> {
        self.slots
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)
            .and_then(|s| s.value.as_mut())
    }

    /// Removes and returns the value under `key`; bumps the slot's generation
    /// so the key (and any copy of it) goes stale.
    pub(crate) fn remove(&mut self, key: SlabKey) -> Option<T> {
        let slot = self
            .slots
            .get_mut(key.index as usize)
            .filter(|s| s.generation == key.generation)?;
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(key.index);
        self.len -= 1;
        Some(value)
    }

    /// Values stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_keys_find_nothing() {
        let mut slab = Slab::new();
        let a = slab.insert("a");
        assert_eq!(SlabKey::from_user_data(a.to_user_data()), a);
        assert_eq!(slab.remove(a), Some("a"));
        let b = slab.insert("b");
        assert_ne!(a, b, "a reused slot has a new generation");
        assert_eq!(slab.get_mut(a), None);
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.get_mut(b).copied(), Some("b"));
        assert_eq!(slab.len(), 1);
        assert_eq!(
            slab.get_mut(SlabKey::from_user_data(u64::MAX)),
            None,
            "an unknown index finds nothing"
        );
    }
}
