//! A sparse checkout's set (`git sparse-checkout`): which paths of a commit the work tree
//! holds. A path outside it is absent from the work tree by design, not removed.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use gix::bstr::BStr;

/// The patterns of `info/sparse-checkout` (gitignore syntax; cone mode writes them too), read
/// as git reads them.
#[derive(Debug, Clone, Default)]
pub struct Sparse {
    search: gix::ignore::Search,
    /// The patterns' text, as kept in the pin.
    pub text: String,
}

impl Sparse {
    /// The set the patterns `text` describe.
    pub fn from_patterns(text: &str) -> Sparse {
        let parse = gix::ignore::search::Ignore::default();
        let patterns = gix::glob::search::Pattern::bytes_to_patterns(
            &parse,
            text.as_bytes(),
            Path::new(OsStr::from_bytes(b"info/sparse-checkout")),
        );
        let mut search = gix::ignore::Search::default();
        search.patterns.push(gix::glob::search::pattern::List {
            patterns,
            source: None,
            base: None,
        });
        Sparse {
            search,
            text: text.to_string(),
        }
    }

    /// Whether the file `path` (relative, `/`-separated) is in the set, as git decides it: the
    /// last pattern matching the path itself, else the last one matching its directory, then
    /// each directory above; a negative pattern leaves it out, and a path no pattern decides is
    /// out.
    pub fn contains(&self, path: &[u8]) -> bool {
        let mut end = path.len();
        let mut is_dir = false;
        loop {
            let p = &path[..end];
            let found = self.search.pattern_matching_relative_path(
                BStr::new(p),
                Some(is_dir),
                gix::glob::pattern::Case::Sensitive,
            );
            if let Some(m) = found {
                return !m.pattern.is_negative();
            }
            match p.iter().rposition(|&b| b == b'/') {
                Some(i) => {
                    end = i;
                    is_dir = true;
                }
                None => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cone_patterns_keep_top_files_and_the_listed_folders() {
        let s = Sparse::from_patterns("/*\n!/*/\n/src/\n!/src/*/\n/src/app/\n");
        for p in ["README.md", "src/z.py", "src/app/x.py", "src/app/deep/y.py"] {
            assert!(s.contains(p.as_bytes()), "{p} is in");
        }
        for p in ["docs/a.md", "src/other/y.py", "lib/x/z.py"] {
            assert!(!s.contains(p.as_bytes()), "{p} is out");
        }
    }

    /// As `git sparse-checkout set --no-cone '*.py' '!tests/'` checks out: a file's own match
    /// decides before its folder's (`tests/c.py` is in, `README.md` out).
    #[test]
    fn non_cone_patterns_decide_by_the_path_first_then_its_folders() {
        let s = Sparse::from_patterns("*.py\n!tests/\n");
        assert!(s.contains(b"a.py"));
        assert!(s.contains(b"pkg/b.py"));
        assert!(s.contains(b"tests/c.py"));
        assert!(!s.contains(b"README.md"));
        assert!(!s.contains(b"tests/data.txt"), "its folder is left out");
    }
}
