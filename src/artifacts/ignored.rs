//! What is in a build directory but is nobody's artifact (a `.git` folder, editor files): the
//! names are the protocol crate's (`referee_protocol::ignored`, where no glob of a check matches
//! them), named here for the walk and the checks.
//!
//! [`holds_artifacts`] tells an emptied build directory (only the referee's own files, editor
//! files and `.git` left) from one a pipeline is writing: a new run starts on the first.

pub use crate::protocol::ignored::{editor_file, listed_not_input, not_input};

/// Whether the build directory `dir` holds anything of a pipeline's: an entry that is not the
/// referee's own (`OBSERVER-*`, `.OBSERVER-*`), not an editor's file and not `.git`. An emptied
/// directory holds none, and a referee started on it begins a new run.
pub fn holds_artifacts(dir: &std::path::Path) -> std::io::Result<bool> {
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        let own = name.starts_with("OBSERVER-") || name.starts_with(".OBSERVER-");
        if !own && name != ".git" && !editor_file(&name) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_directory_holds_no_artifact() {
        let d = tempfile::tempdir().unwrap();
        assert!(!holds_artifacts(d.path()).unwrap());
        for own in [
            "OBSERVER-REPORT.md",
            ".OBSERVER-STOP.md.tmp.1",
            "EXECUTION-TRACKER.md~",
        ] {
            std::fs::write(d.path().join(own), "x").unwrap();
        }
        std::fs::create_dir(d.path().join(".git")).unwrap();
        assert!(!holds_artifacts(d.path()).unwrap());
        std::fs::write(d.path().join("p0-content-map.md"), "x").unwrap();
        assert!(holds_artifacts(d.path()).unwrap());
    }
}
