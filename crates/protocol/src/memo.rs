//! A process-wide memo for compiled patterns. Compiling a regex or glob costs far more
//! than judging a build, and a protocol names the same pattern in many check instances
//! (and the daemon judges the same ones all day), so each distinct source is compiled
//! once per process.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// One memo per kind of compiled thing, keyed by its source text.
pub type Memo<T> = OnceLock<Mutex<HashMap<String, T>>>;

/// `build(key)`'s value, built at most once per key and process (two threads asking at
/// once may both build it; the first one stored wins). The lock is not held while
/// building, so a slow compilation never blocks lookups of other keys.
pub fn memo<T: Clone>(memo: &'static Memo<T>, key: &str, build: impl FnOnce() -> T) -> T {
    let map = memo.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = map.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
        return hit.clone();
    }
    let built = build();
    map.lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key.to_string())
        .or_insert(built)
        .clone()
}
