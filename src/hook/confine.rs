//! Which workspace a hook call is about, judged by what was opened, not by a path.
//!
//! `referee serve --allow DIR` opens each DIR once, at start. A workspace is then opened
//! beneath one of them in one kernel step ([`crate::safefs::open_dir_within`]: `..` out of it,
//! an absolute link and a link out of it refused), and its path is read back from the
//! descriptor: that path is what is pinned, named and judged, never the name the payload gave.
//!
//! The judgment itself reads the workspace by path. A folder between the allowed root and the
//! workspace swapped for a link while it runs (and swapped back before it ends) would have part
//! of it read elsewhere; so the folders from the root down to the workspace are stamped when it
//! is opened (identity, and the change times of those above it: a rename or a link made in a
//! folder changes them) and compared after the judgment ([`Root::unchanged`]). A stamp taken
//! within a clock tick of the last change is taken again once the tick is over, so a change
//! made after it always moves the time.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The folders whose workspaces may be judged (`referee serve --allow`), each open: empty, any.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    roots: Arc<Vec<AllowedRoot>>,
}

#[derive(Debug)]
struct AllowedRoot {
    /// The folder's path, as read back from its descriptor.
    path: PathBuf,
    fd: OwnedFd,
}

impl Allowed {
    /// Opens each of `dirs` (following links: the operator names them).
    pub fn open(dirs: &[PathBuf]) -> Result<Allowed, ConfineError> {
        let mut roots = Vec::new();
        for d in dirs {
            let bad = |source| ConfineError::Allow {
                path: d.clone(),
                source,
            };
            let fd = crate::safefs::open_dir(crate::safefs::CWD, d, true).map_err(bad)?;
            let path = path_of(fd.as_fd()).map_err(bad)?;
            roots.push(AllowedRoot { path, fd });
        }
        Ok(Allowed {
            roots: Arc::new(roots),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The allowed folders' paths.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| r.path.clone()).collect()
    }
}

/// Why a workspace is not judged.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("cannot open `--allow {path}`")]
    Allow {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the workspace `{path}` cannot be opened")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the workspace `{path}` is outside the folders this referee judges (`referee serve --allow`)"
    )]
    Outside { path: PathBuf },
    #[error("the workspace `{path}` holds or lies in the referee's own state `{state}`; refused")]
    OwnState { path: PathBuf, state: PathBuf },
    #[error(
        "the workspace `{path}`, or a folder above it, was replaced or changed while it was \
         judged; nothing of that judgment is kept"
    )]
    Changed { path: PathBuf },
}

/// A workspace as opened: the descriptor of the directory found then, its path as the kernel
/// has it for that descriptor, and — under `--allow` — the stamps of the folders from the
/// allowed root down to it.
#[derive(Debug)]
pub struct Root {
    path: PathBuf,
    fd: OwnedFd,
    chain: Option<Chain>,
}

#[derive(Debug)]
struct Chain {
    root: Arc<Vec<AllowedRoot>>,
    index: usize,
    /// The workspace's path below the allowed root.
    rel: PathBuf,
    stamps: Vec<Stamp>,
}

/// A folder on the way: its identity, and — for those above the workspace — its change times.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    times: Option<[(i64, u64); 2]>,
}

impl std::ops::Deref for Root {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Root {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Root {
    /// The workspace's path, read back from its descriptor when it was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open directory.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Whether the path still names the directory opened, and — under `--allow` — no folder
    /// from the allowed root down to it was replaced or changed since it was opened (a link
    /// swapped in and out again while the workspace was judged by path).
    pub fn unchanged(&self) -> Result<(), ConfineError> {
        let changed = || ConfineError::Changed {
            path: self.path.clone(),
        };
        let held = rustix::fs::fstat(&self.fd).map_err(|_| changed())?;
        let now = rustix::fs::stat(&self.path).map_err(|_| changed())?;
        if (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino) {
            return Err(changed());
        }
        if let Some(c) = &self.chain {
            let root = &c.root[c.index];
            match stamps(root.fd.as_fd(), &c.rel) {
                Ok(s) if s == c.stamps => {}
                _ => return Err(changed()),
            }
        }
        Ok(())
    }
}

/// Opens the workspace `candidate` as a hook call names it: beneath one of `allow` when it is
/// not empty (else where it stands), never one that holds or lies in `state_base`.
pub fn confine(
    allow: &Allowed,
    state_base: Option<&Path>,
    candidate: &Path,
) -> Result<Root, ConfineError> {
    let opening = |source| ConfineError::Open {
        path: candidate.to_path_buf(),
        source,
    };
    let outside = || ConfineError::Outside {
        path: candidate.to_path_buf(),
    };
    let root = if allow.is_empty() {
        let fd = crate::safefs::open_dir(crate::safefs::CWD, candidate, true).map_err(opening)?;
        let path = path_of(fd.as_fd()).map_err(opening)?;
        Root {
            path,
            fd,
            chain: None,
        }
    } else {
        let mut found = None;
        for (index, r) in allow.roots.iter().enumerate() {
            // Another spelling of a place inside the root (through a link above it): only its
            // name is taken from there; it is opened beneath the root.
            let rel = match candidate.strip_prefix(&r.path) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => match std::fs::canonicalize(candidate)
                    .ok()
                    .and_then(|c| c.strip_prefix(&r.path).ok().map(Path::to_path_buf))
                {
                    Some(rel) => rel,
                    None => continue,
                },
            };
            found = Some((index, r, rel));
            break;
        }
        let (index, r, rel) = found.ok_or_else(outside)?;
        let fd = crate::safefs::open_dir_within(r.fd.as_fd(), rel.as_os_str().as_bytes()).map_err(
            |e| {
                if crate::safefs::is_replaced(&e) {
                    outside()
                } else {
                    opening(e)
                }
            },
        )?;
        let path = path_of(fd.as_fd()).map_err(opening)?;
        // Moved out of the root since it was opened.
        let rel = path
            .strip_prefix(&r.path)
            .map_err(|_| outside())?
            .to_path_buf();
        let stamps = settled_stamps(r.fd.as_fd(), &rel).map_err(|_| ConfineError::Changed {
            path: candidate.to_path_buf(),
        })?;
        let root = Root {
            path,
            fd,
            chain: Some(Chain {
                root: allow.roots.clone(),
                index,
                rel,
                stamps,
            }),
        };
        // The folders stamped are the ones opened.
        root.unchanged()?;
        root
    };
    if let Some(base) = state_base {
        let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        if root.path.starts_with(&base) || base.starts_with(&root.path) {
            return Err(ConfineError::OwnState {
                path: root.path.clone(),
                state: base,
            });
        }
    }
    Ok(root)
}

/// The path the kernel has for an open directory (symlink-free).
fn path_of(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Longer than a clock tick of the file times: a change made after a stamp taken this long
/// after the last one moves the time.
const TICK: Duration = Duration::from_millis(20);

/// [`stamps`], taken again (a few times at most) while the newest change is within a tick.
fn settled_stamps(root: BorrowedFd<'_>, rel: &Path) -> std::io::Result<Vec<Stamp>> {
    let mut s = stamps(root, rel)?;
    for _ in 0..10 {
        let newest = s
            .iter()
            .filter_map(|x| x.times)
            .flat_map(|t| t.into_iter())
            .max();
        let Some((sec, nsec)) = newest else { break };
        let changed = SystemTime::UNIX_EPOCH
            + Duration::from_secs(u64::try_from(sec).unwrap_or(0))
            + Duration::from_nanos(nsec);
        let since = SystemTime::now()
            .duration_since(changed)
            .unwrap_or(Duration::ZERO);
        if since >= TICK {
            break;
        }
        std::thread::sleep(TICK - since);
        s = stamps(root, rel)?;
    }
    Ok(s)
}

/// The folders from `root` down to `rel` beneath it, each opened without following a link:
/// identity for all, change times for those above the last.
fn stamps(root: BorrowedFd<'_>, rel: &Path) -> std::io::Result<Vec<Stamp>> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let stamp = |fd: BorrowedFd<'_>, last: bool| -> std::io::Result<Stamp> {
        let st = rustix::fs::fstat(fd)?;
        Ok(Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            times: (!last).then_some([
                (st.st_mtime, st.st_mtime_nsec),
                (st.st_ctime, st.st_ctime_nsec),
            ]),
        })
    };
    let mut out = vec![stamp(root, names.is_empty())?];
    let mut cur: Option<OwnedFd> = None;
    for (i, name) in names.iter().enumerate() {
        let at = cur.as_ref().map_or(root, |f| f.as_fd());
        let next = crate::safefs::open_dir(at, name, false)?;
        out.push(stamp(next.as_fd(), i + 1 == names.len())?);
        cur = Some(next);
    }
    Ok(out)
}
