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
