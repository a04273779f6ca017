//! The baseline's paths as one sorted table: laid out once, looked up by binary search, walked
//! in order beside the work tree's (no map built, no key copied, per `verify`).

use super::BaseEntry;

/// Every baseline path (encoded, see [`super::name`]) with its entry, sorted by the key's
/// bytes, each path once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BaseEntries(Vec<(String, BaseEntry)>);

impl BaseEntries {
    /// The table of `rows` in any order; of two rows with one key, the later one is kept (as a
    /// map built from them would).
    pub fn from_rows(mut rows: Vec<(String, BaseEntry)>) -> BaseEntries {
        // A listing is kept sorted, and valid UTF-8 keys sort as their bytes: one look over it.
        if rows.windows(2).all(|w| w[0].0 < w[1].0) {
            return BaseEntries(rows);
        }
        // Stable: rows of one key stay in their order, and the last of them is kept.
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, BaseEntry)> = Vec::with_capacity(rows.len());
        for row in rows {
            match out.last_mut() {
                Some(last) if last.0 == row.0 => *last = row,
                _ => out.push(row),
            }
        }
        BaseEntries(out)
    }

    fn index(&self, rel: &str) -> Option<usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(rel)).ok()
    }

    /// Whether `rel` is a key, searched outward from `hint` (galloping: 1, 2, 4 … keys away,
    /// then a binary search between the last two probes), and `hint` left where `rel` is or
    /// would be. A walk asks in nearly the table's order, so each look-up touches a few
    /// neighbouring keys instead of a binary search's cold ones across the whole table.
    pub fn contains_near(&self, rel: &str, hint: &std::sync::atomic::AtomicUsize) -> bool {
        use std::cmp::Ordering::{Equal, Less};
        use std::sync::atomic::Ordering::Relaxed;
        let key = |i: usize| self.0[i].0.as_str().cmp(rel);
        let len = self.0.len();
        let h = hint.load(Relaxed).min(len);
        // The range [lo, hi) that holds `rel` or the place it would go.
        let (lo, hi) = match (h < len).then(|| key(h)) {
            Some(Equal) => return true,
            Some(Less) => {
                let (mut lo, mut step) = (h + 1, 1);
                loop {
                    let probe = lo + step - 1;
                    if probe >= len {
                        break (lo, len);
                    }
                    if key(probe) != Less {
                        break (lo, probe + 1);
                    }
                    lo = probe + 1;
                    step *= 2;
                }
            }
            // `rel` is before the key at `h` (or `h` is the end).
            _ => {
                let (mut hi, mut step) = (h, 1);
                loop {
                    if hi < step {
                        break (0, hi);
                    }
                    let probe = hi - step;
                    if key(probe) == Less {
                        break (probe + 1, hi);
                    }
                    hi = probe;
                    step *= 2;
                    if key(hi) == Equal {
                        hint.store(hi, Relaxed);
                        return true;
                    }
                }
            }
        };
        let found = self.0[lo..hi].binary_search_by(|(k, _)| k.as_str().cmp(rel));
        let (Ok(i) | Err(i)) = found;
        hint.store(lo + i, Relaxed);
        found.is_ok()
    }

    /// The entry of `rel`.
    pub fn get(&self, rel: &str) -> Option<&BaseEntry> {
        self.index(rel).map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, rel: &str) -> bool {
        self.index(rel).is_some()
    }

    /// Whether some path lies under the directory `dir` (`dir/…`): the first key not before
    /// `dir/` tells.
    pub fn has_under(&self, dir: &str) -> bool {
        let dir = dir.as_bytes();
        let i = self
            .0
            .partition_point(|(k, _)| before_dir(k.as_bytes(), dir));
        self.0.get(i).is_some_and(|(k, _)| {
            let k = k.as_bytes();
            k.len() > dir.len() && k.starts_with(dir) && k[dir.len()] == b'/'
        })
    }

    /// The rows in order.
    pub fn as_slice(&self) -> &[(String, BaseEntry)] {
        &self.0
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &BaseEntry)> {
        self.0.iter().map(|(k, e)| (k, e))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether `key` sorts before `dir` followed by `/` (without building that string).
fn before_dir(key: &[u8], dir: &[u8]) -> bool {
    let n = key.len().min(dir.len());
    match key[..n].cmp(&dir[..n]) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        // `key` is a prefix of `dir/` up to its length: before it when shorter, else by the
        // byte where `/` stands.
        std::cmp::Ordering::Equal => key.len() <= dir.len() || key[dir.len()] < b'/',
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    use proptest::prelude::*;

    use super::*;
    use crate::workspace::baseline::BaseKind;

    fn table(keys: &[String]) -> BaseEntries {
        let entry = BaseEntry {
            kind: BaseKind::File { exec: false },
            oid: gix::ObjectId::null(gix::hash::Kind::Sha1),
        };
        BaseEntries::from_rows(keys.iter().map(|k| (k.clone(), entry.clone())).collect())
    }

    proptest! {
        /// Searched from any hint, in any order of questions, the answer is the binary
        /// search's, and the hint is left at the key or where it would go.
        #[test]
        fn a_search_from_a_hint_agrees_with_the_binary_search(
            keys in proptest::collection::vec("[a-c/.-]{0,4}", 0..40),
            asks in proptest::collection::vec(("[a-c/.-]{0,4}", 0usize..50), 0..40),
        ) {
            let t = table(&keys);
            let hint = AtomicUsize::new(0);
            for (ask, jump) in asks {
                if jump % 3 == 0 {
                    hint.store(jump, Relaxed);
                }
                prop_assert_eq!(t.contains_near(&ask, &hint), t.contains_key(&ask), "{}", ask);
                let at = hint.load(Relaxed);
                let want = t.0.partition_point(|(k, _)| k.as_str() < ask.as_str());
                prop_assert_eq!(at, want, "{}", ask);
            }
        }
    }

    #[test]
    fn a_walk_in_order_finds_every_key_and_no_other() {
        let keys: Vec<String> = (0..1000).map(|i| format!("d{}/f{i:04}", i / 100)).collect();
        let t = table(&keys);
        let hint = AtomicUsize::new(0);
        for k in &keys {
            assert!(t.contains_near(k, &hint), "{k}");
            assert!(!t.contains_near(&format!("{k}x"), &hint), "{k}x");
        }
        assert!(!t.contains_near("", &hint));
        assert!(!t.contains_near("zzz", &hint));
        assert!(t.contains_near("d0/f0000", &hint), "back to the start");
    }
}
