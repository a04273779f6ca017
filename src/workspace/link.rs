//! A symbolic link in a workspace, judged as git records it: its content is its target, the
//! text it holds, never what it leads to.
//!
//! On the work tree's side a link is read only when it resolves inside the workspace (every
//! link on its way followed by the kernel, the result compared with the canonical root): one
//! that leads out of the workspace, or nowhere (dangling, so where it will lead cannot be
//! known), is `Unknown`, which blocks (fail closed). A link the worker added inside the
//! workspace (`ln -s app appx`, `ln -s util.py util2.py`) is a change like a file's: listed,
//! hashed and diffed as its target text. What a reader meets at its path (a parser, a test
//! runner) is [`super::Workspace::followed`].

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use super::{name, Content, Unknowable};
use crate::artifacts::fsread::FileData;
use crate::artifacts::fsread::IoCause;

/// The work tree's link at `path` (known as `rel`, under the canonical `root`): its target,
/// when it resolves inside `root`; else `Unknown`, saying where it leads.
pub(super) fn in_work_tree(root: &Path, rel: &str, path: &Path) -> Content {
    let target = match std::fs::read_link(path) {
        Ok(t) => t,
        Err(e) => {
            return Content::Unknown(Unknowable::Link {
                rel: rel.to_string(),
                source: IoCause::new(e),
            })
        }
    };
    let to = name::display(&name::from_os(target.as_os_str()));
    let leads = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Content::Unknown(Unknowable::LinkDangles {
                rel: rel.to_string(),
                to,
            })
        }
        Err(e) => {
            return Content::Unknown(Unknowable::LinkUnresolved {
                rel: rel.to_string(),
                to,
                source: IoCause::new(e),
            })
        }
    };
    if !leads.starts_with(root) {
        return Content::Unknown(Unknowable::LinkOut {
            rel: rel.to_string(),
            to,
            leads,
        });
    }
    // Read twice around the resolution: a link swapped in between is not judged by halves.
    match std::fs::read_link(path) {
        Ok(again) if again == target => stored(rel, target.as_os_str().as_bytes()),
        _ => Content::Unknown(Unknowable::LinkChanged {
            rel: rel.to_string(),
        }),
    }
}

/// A link as stored at `path` (a baseline folder's own copy), not resolved.
pub(super) fn as_stored(rel: &str, path: &Path) -> Content {
    match std::fs::read_link(path) {
        Ok(t) => stored(rel, t.as_os_str().as_bytes()),
        Err(e) => Content::Unknown(Unknowable::Link {
            rel: rel.to_string(),
            source: IoCause::new(e),
        }),
    }
}

/// A link whose target is `target` (git's content of a link: the target's bytes).
pub(super) fn stored(rel: &str, target: &[u8]) -> Content {
    Content::Link(Arc::new(FileData::from_bytes(rel, target.to_vec(), None)))
}

/// Where the link `rel` (an [`name::encode`]d path) with target `target` leads, as a path of
/// the same tree (`None` when it is absolute or climbs out of the tree, or names the tree's
/// root): resolved by its text, as inside a commit. The one reading of a link's text: the
/// veto's ways to a protected file, the judgment's reader and `accept --commit` share it.
pub fn resolve(rel: &str, target: &[u8]) -> Option<String> {
    let target = name::encode(target);
    if target.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    for piece in target.split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    (!joined.is_empty()).then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn a_target_is_resolved_from_the_links_folder_and_never_out_of_the_tree() {
        assert_eq!(resolve("util2.py", b"util.py").as_deref(), Some("util.py"));
        assert_eq!(resolve("a/b/c.py", b"../d.py").as_deref(), Some("a/d.py"));
        assert_eq!(
            resolve("a/b/c.py", b"./x//y.py").as_deref(),
            Some("a/b/x/y.py")
        );
        assert_eq!(resolve("a/c.py", b"../../etc/passwd"), None);
        assert_eq!(resolve("c.py", b"/etc/passwd"), None);
        assert_eq!(resolve("a/c.py", b".."), None);
        // A name that is no UTF-8 is the encoded name the tree lists.
        assert_eq!(
            resolve("a/c.py", b"x\xff.py").as_deref(),
            Some(super::name::encode(b"a/x\xff.py").as_str())
        );
    }
}
