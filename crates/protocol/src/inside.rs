//! Whether a file the referee is told to believe (its variables, secret rules or waivers) lies
//! inside the directory it watches, where the watched side could edit it (nothing from
//! the watched directory is believed).
//!
//! Inside means: the path as given, or the file it resolves to, or the file's resolved folder
//! with its name, is under the watched directory as given or as resolved. So a symlink inside
//! the directory that points out of it is inside too: the watched side could point it
//! elsewhere later, and `watch` reads its waivers again at every heartbeat.

use std::path::{Path, PathBuf};

/// Whether `file` lies inside `dir` (see the module doc); paths that do not exist are compared
/// as given.
pub fn lies_inside(file: &Path, dir: &Path) -> bool {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let resolved = |p: &Path| std::fs::canonicalize(p).ok();
    let dirs: Vec<PathBuf> = [Some(absolute(dir)), resolved(dir)]
        .into_iter()
        .flatten()
        .collect();
    let through_folder = file.file_name().and_then(|name| {
        let parent = absolute(file).parent()?.to_path_buf();
        Some(resolved(&parent)?.join(name))
    });
    [Some(absolute(file)), resolved(file), through_folder]
        .into_iter()
        .flatten()
        .any(|f| dirs.iter().any(|d| f.starts_with(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_as_given_as_resolved_and_through_links() {
        let tmp = tempfile::tempdir().unwrap();
        let watched = tmp.path().join("build");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&watched).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("w.toml"), "").unwrap();
        std::fs::write(watched.join("w.toml"), "").unwrap();
        assert!(lies_inside(&watched.join("w.toml"), &watched));
        assert!(
            lies_inside(&watched.join("missing.toml"), &watched),
            "a file not there yet"
        );
        assert!(!lies_inside(&outside.join("w.toml"), &watched));
        // A link inside pointing out: the watched side could repoint it.
        std::os::unix::fs::symlink(outside.join("w.toml"), watched.join("link.toml")).unwrap();
        assert!(lies_inside(&watched.join("link.toml"), &watched));
        // A link outside pointing in: the file itself is the watched side's.
        std::os::unix::fs::symlink(watched.join("w.toml"), outside.join("in.toml")).unwrap();
        assert!(lies_inside(&outside.join("in.toml"), &watched));
        // A folder outside that is a link into the watched directory.
        std::os::unix::fs::symlink(&watched, tmp.path().join("alias")).unwrap();
        assert!(lies_inside(&tmp.path().join("alias/w.toml"), &watched));
        // The watched directory named through a link.
        assert!(lies_inside(
            &watched.join("w.toml"),
            &tmp.path().join("alias")
        ));
        // A relative path.
        let cwd = std::env::current_dir().unwrap();
        assert!(!lies_inside(Path::new("x.toml"), &watched) || cwd.starts_with(&watched));
    }
}
