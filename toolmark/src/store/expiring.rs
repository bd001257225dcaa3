//! Entries kept until a time, by id: forgetting what is past its time costs what
//! is forgotten, not what is kept.
//!
//! The used ids of the deferred flow and the tombstones of [`MemoryStore`] are
//! both pruned on every sweep, and a sweep follows every new confirmation: with a
//! plain map each sweep walked every entry kept (an hour of a busy app's
//! approvals), so a round trip grew slower as the store filled.
//!
//! [`MemoryStore`]: super::MemoryStore

use std::collections::{BTreeSet, HashMap};

/// Values by id, each kept until a time (ms by default), ordered by that time.
#[derive(Debug)]
pub(crate) struct Expiring<V, T = u64> {
    by_id: HashMap<String, (T, V)>,
    by_time: BTreeSet<(T, String)>,
}

impl<V, T> Default for Expiring<V, T> {
    fn default() -> Self {
        Expiring {
            by_id: HashMap::new(),
            by_time: BTreeSet::new(),
        }
    }
}

impl<V, T: Ord + Copy> Expiring<V, T> {
    /// Keep `value` under `id` until `until` (replacing what `id` held).
    pub(crate) fn insert(&mut self, id: &str, until: T, value: V) {
        if let Some((old, _)) = self.by_id.insert(id.to_owned(), (until, value)) {
            self.by_time.remove(&(old, id.to_owned()));
        }
        self.by_time.insert((until, id.to_owned()));
    }

    pub(crate) fn get(&self, id: &str) -> Option<&V> {
        self.by_id.get(id).map(|(_, v)| v)
    }

    /// The value under `id` and its time.
    #[cfg(feature = "mcp")]
    pub(crate) fn get_until(&self, id: &str) -> Option<(T, &V)> {
        self.by_id.get(id).map(|(t, v)| (*t, v))
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<V> {
        let (until, value) = self.by_id.remove(id)?;
        self.by_time.remove(&(until, id.to_owned()));
        Some(value)
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Forget every entry whose time is `now` or earlier (keep those after it).
    pub(crate) fn prune(&mut self, now: T) {
        while let Some((until, _)) = self.by_time.first() {
            if *until > now {
                break;
            }
            if let Some((_, id)) = self.by_time.pop_first() {
                self.by_id.remove(&id);
            }
        }
    }

    /// Forget the entry that would expire first.
    pub(crate) fn remove_oldest(&mut self) {
        if let Some((_, id)) = self.by_time.pop_first() {
            self.by_id.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Expiring;

    #[test]
    fn prune_forgets_what_is_due_and_keeps_the_rest() {
        let mut e = Expiring::default();
        e.insert("a", 10, 'a');
        e.insert("b", 20, 'b');
        e.insert("c", 15, 'c');
        // Replacing moves the entry to its new time.
        e.insert("a", 30, 'A');
        e.prune(15);
        assert!(!e.contains("c") && e.contains("b") && e.contains("a"));
        assert_eq!(e.get("a"), Some(&'A'));
        e.prune(20);
        assert_eq!((e.len(), e.get("b")), (1, None));
        e.remove_oldest();
        assert!(e.is_empty());
        e.insert("d", 5, 'd');
        assert_eq!(e.remove("d"), Some('d'));
        e.prune(u64::MAX);
        assert!(e.is_empty());
    }
}
