//! What in a repository's git config makes git run a command: the keys git itself executes
//! (git-config(1): hooks, editors and pagers, filter, diff and merge drivers, `!` aliases,
//! credential and signing programs, includes, remote helpers). Every other key is one git
//! reads as data or does not know, and ignores: a tool's own keys (`remote.origin.gh-resolved`,
//! `branch.main.vscode-merge-base`) run nothing.
//!
//! Read where no start dates a config (no state directory, or a start taken after the work):
//! a config that runs nothing needs no start to be harmless; one that runs a command may be
//! the worker's, and blocks (see `checks::change`).

/// What a config file makes git run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// The keys that run a command ([`running_keys`]); none: it runs nothing.
    Keys(Vec<String>),
    /// It cannot be read as git's config, and why: what it would run cannot be told.
    Unreadable(String),
}

/// Keys git executes, `section.key` or `section.*.key` (any subsection), lower case.
const RUNS: &[&str] = &[
    "core.hookspath",
    "core.sshcommand",
    "core.editor",
    "core.pager",
    "core.askpass",
    "core.gitproxy",
    "core.alternaterefscommand",
    "sequence.editor",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "difftool.*.cmd",
    "difftool.*.path",
    "mergetool.*.cmd",
    "mergetool.*.path",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "credential.helper",
    "credential.*.helper",
    "gpg.program",
    "gpg.*.program",
    "gpg.ssh.defaultkeycommand",
    "include.path",
    "includeif.*.path",
    "hook.*.command",
    "uploadpack.packobjectshook",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "remote.*.vcs",
    "protocol.allow",
    "protocol.*.allow",
    "interactive.difffilter",
    "web.browser",
    "browser.*.cmd",
    "browser.*.path",
    "man.*.cmd",
    "man.*.path",
    "guitool.*.cmd",
    "trailer.*.command",
    "trailer.*.cmd",
    "sendemail.sendmailcmd",
    "sendemail.tocmd",
    "sendemail.cccmd",
    "sendemail.smtpserver",
    "imap.tunnel",
];

/// The keys of the git config `bytes` that make git run a command, as `section.key` (the
/// subsection kept: `filter.lfs.smudge`), in the order written. An alias runs a command when
/// its value starts with `!`, as a submodule's `update` does; `core.fsmonitor` and `pager.CMD`
/// when they name a program rather than a boolean. [`Runs::Unreadable`] for bytes git's config
/// grammar does not read (gix's reader, no include followed): what they would run cannot be
/// told.
pub fn running_keys(bytes: &[u8]) -> Runs {
    let file = match gix::config::File::from_bytes_no_includes(
        bytes,
        gix::config::file::Metadata::api(),
        gix::config::file::init::Options::default(),
    ) {
        Ok(file) => file,
        Err(e) => return Runs::Unreadable(e.to_string()),
    };
    let mut out = Vec::new();
    for section in file.sections() {
        let header = section.header();
        let name = header.name().to_string().to_lowercase();
        let sub = header.subsection_name().map(|s| s.to_string());
        let keys: Vec<String> = section.value_names().collect();
        for key in keys {
            let values = section.values(&key);
            let key = key.to_lowercase();
            let value = |v: &[u8]| String::from_utf8_lossy(v).trim().to_string();
            let runs = match (name.as_str(), key.as_str()) {
                ("alias", _) => values.iter().any(|v| value(v).starts_with('!')),
                ("submodule", "update") => values.iter().any(|v| value(v).starts_with('!')),
                // A boolean, or a hook or pager to run.
                ("core", "fsmonitor") | ("pager", _) => values.iter().any(|v| {
                    let v = value(v).to_lowercase();
                    !matches!(
                        v.as_str(),
                        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
                    )
                }),
                _ => listed(&name, sub.as_deref(), &key),
            };
            if runs {
                out.push(match &sub {
                    Some(s) => format!("{name}.{s}.{key}"),
                    None => format!("{name}.{key}"),
                });
            }
        }
    }
    out.dedup();
    Runs::Keys(out)
}

/// Whether `section[.sub].key` is in [`RUNS`], or a Git LFS program (`[lfs
/// "customtransfer.NAME"] path`, `[lfs "extension.NAME"] clean|smudge`).
fn listed(section: &str, sub: Option<&str>, key: &str) -> bool {
    let lfs = match (section, sub) {
        ("lfs", Some(s)) if s.starts_with("customtransfer.") => key == "path",
        ("lfs", Some(s)) if s.starts_with("extension.") => matches!(key, "clean" | "smudge"),
        _ => false,
    };
    lfs || RUNS
        .iter()
        .any(|k| match k.split('.').collect::<Vec<_>>().as_slice() {
            [s, kk] => *s == section && sub.is_none() && *kk == key,
            [s, "*", kk] => *s == section && sub.is_some() && *kk == key,
            _ => false,
        })
}

/// Whether `rel` names a git config file git reads for this repository: `.git/config`,
/// `.git/config.worktree`, a linked work tree's `config.worktree`, a submodule's `config`.
pub fn is_git_config(rel: &str) -> bool {
    rel == ".git/config"
        || rel == ".git/config.worktree"
        || (rel.starts_with(".git/worktrees/") && rel.ends_with("/config.worktree"))
        || (rel.starts_with(".git/modules/") && rel.ends_with("/config"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_git_writes_and_tools_add_runs_nothing() {
        let config = b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
            \tlogallrefupdates = true\n\tfsmonitor = false\n[remote \"origin\"]\n\turl = git@github.com:o/r.git\n\
            \tfetch = +refs/heads/*:refs/remotes/origin/*\n\tgh-resolved = base\n[branch \"main\"]\n\
            \tremote = origin\n\tmerge = refs/heads/main\n\tvscode-merge-base = origin/main\n\
            [alias]\n\tst = status -sb\n[lfs]\n\trepositoryformatversion = 0\n";
        assert_eq!(running_keys(config), Runs::Keys(Vec::new()));
    }

    #[test]
    fn every_kind_of_command_is_named() {
        let config = b"[core]\n\thooksPath = tools/hooks\n\tfsmonitor = .git/fsmon.sh\n\
            [alias]\n\tci = !sh -c 'evil'\n[filter \"lfs\"]\n\tsmudge = git-lfs smudge -- %f\n\
            [diff \"img\"]\n\ttextconv = exiftool\n[include]\n\tpath = ../x.cfg\n\
            [hook \"lint\"]\n\tcommand = ./lint.sh\n\tevent = pre-commit\n\
            [submodule \"ext\"]\n\tupdate = !./evil\n\turl = ../ext\n\
            [lfs \"customtransfer.x\"]\n\tpath = ./agent\n[pager]\n\tlog = ./p\n";
        assert_eq!(
            running_keys(config),
            Runs::Keys(vec![
                "core.hookspath".to_string(),
                "core.fsmonitor".into(),
                "alias.ci".into(),
                "filter.lfs.smudge".into(),
                "diff.img.textconv".into(),
                "include.path".into(),
                "hook.lint.command".into(),
                "submodule.ext.update".into(),
                "lfs.customtransfer.x.path".into(),
                "pager.log".into(),
            ])
        );
    }

    #[test]
    fn a_config_git_cannot_read_is_an_error_and_case_does_not_hide_a_key() {
        assert!(matches!(
            running_keys(b"[core\n\thooksPath = x\n"),
            Runs::Unreadable(_)
        ));
        assert_eq!(
            running_keys(b"[CORE]\n\tHOOKSPATH = x\n"),
            Runs::Keys(vec!["core.hookspath".to_string()])
        );
    }

    #[test]
    fn the_config_files_git_reads() {
        for p in [
            ".git/config",
            ".git/config.worktree",
            ".git/worktrees/w1/config.worktree",
            ".git/modules/ext/config",
        ] {
            assert!(is_git_config(p), "{p}");
        }
        for p in [
            ".git/config.lock",
            ".git/hooks/config",
            "config",
            ".git/info/config",
        ] {
            assert!(!is_git_config(p), "{p}");
        }
    }
}
