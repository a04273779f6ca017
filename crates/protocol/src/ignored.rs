//! What is in a build directory but is nobody's artifact: a `.git/` folder (a checkout of the
//! REFINE inputs, with its `hooks/*.sample` saying "fix"), and the files editors keep beside the
//! file being edited. They are listed like everything else (the snapshot filters nothing), but no
//! glob of a check matches them, a change to one is no check's input, and the walk does not
//! descend into `.git`. Documented in docs/d10-pipeline.md.
//!
//! Editor files, by name:
//! - `.#name`: Emacs's lock (a symlink to `user@host.pid:…` that dangles by design);
//! - `#name#`: Emacs's auto-save;
//! - `name~`: the backup Emacs and Vim leave after a save;
//! - `.name.swp` (`.swo` … `.swa`, `.swx`): Vim's swap files;
//! - `4913` (and 5036, 5159, … : 4913 + 123·k): the file Vim creates and removes to test that it
//!   may write into the folder;
//! - `.name.kate-swp`: Kate's swap file;
//! - `name___jb_tmp___`, `name___jb_old___`: JetBrains' safe-write files.

/// Whether `rel` (a path relative to the build directory, `/`-separated) is no input to any
/// check: inside a `.git` folder, or an editor's lock, swap or backup file.
pub fn not_input(rel: &str) -> bool {
    if rel.contains(".git") && rel.split('/').any(|c| c == ".git") {
        return true;
    }
    listed_not_input(rel)
}

/// [`not_input`] for a path the walk listed: nothing inside a `.git` folder is listed, so only
/// the last name is looked at (a few byte comparisons, for each of 30,000 screenshots a glob
/// matches, instead of a search of the whole path).
pub fn listed_not_input(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == ".git" || editor_file(name)
}

/// Whether a file name is one an editor keeps beside the file it edits (see the module docs).
pub fn editor_file(name: &str) -> bool {
    if name.starts_with(".#") || name.ends_with('~') {
        return true;
    }
    if name.len() > 2 && name.starts_with('#') && name.ends_with('#') {
        return true;
    }
    if name.ends_with(".kate-swp")
        || name.ends_with("___jb_tmp___")
        || name.ends_with("___jb_old___")
    {
        return true;
    }
    if let Some(rest) = name.strip_prefix('.') {
        if let Some((_, ext)) = rest.rsplit_once('.') {
            let b = ext.as_bytes();
            if b.len() == 3 && &b[..2] == b"sw" && (matches!(b[2], b'a'..=b'p') || b[2] == b'x') {
                return true;
            }
        }
    }
    vim_write_test(name)
}

/// Vim's write test: it creates and removes `4913`, or, when that exists, 4913 + 123, and so on.
fn vim_write_test(name: &str) -> bool {
    if name.is_empty() || name.len() > 6 || !name.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    name.parse::<u32>()
        .is_ok_and(|n| n >= 4913 && (n - 4913) % 123 == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_files_and_git_folders_are_not_inputs() {
        for rel in [
            "refine-inputs/.#notes.md",
            "refine-inputs/#notes.md#",
            "EXECUTION-TRACKER.md~",
            ".EXECUTION-TRACKER.md.swp",
            "refine-inputs/.brief.md.swo",
            "refine-inputs/.brief.md.swx",
            "4913",
            "refine-inputs/5036",
            ".p3a-gate-results.json.kate-swp",
            "EXECUTION-TRACKER.md___jb_tmp___",
            "refine-inputs/.git",
            "refine-inputs/.git/hooks/pre-commit.sample",
            ".git/HEAD",
        ] {
            assert!(not_input(rel), "{rel}");
        }
        for rel in [
            "EXECUTION-TRACKER.md",
            "refine-inputs/notes.md",
            "refine-inputs/.hidden-notes.md",
            "refine-inputs/brief.swp",
            "4914",
            "123",
            "#",
            "##",
            "refine-inputs/.gitignore",
            "screenshots/1440/scroll-1.png",
            "git/HEAD",
        ] {
            assert!(!not_input(rel), "{rel}");
        }
    }
}
