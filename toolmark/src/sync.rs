//! Small synchronization helpers shared across the crate. A leaf.

use std::sync::Mutex;

/// Lock a mutex, ignoring poisoning: every critical section in this crate leaves its
/// data consistent before anything that can panic, so a poisoned lock is still sound.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
