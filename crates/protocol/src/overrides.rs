//! A project's own rules without forking the protocol: `--vars FILE`, `--set NAME=VALUE` and
//! `--protect GLOB` replace or extend a protocol's variables (`[vars.<variant>]`) before its
//! checks are instantiated. They are applied in that order (the file, then each `--set`, then
//! each `--protect`): a flag on the command line wins over the file.
//!
//! - `--set NAME=VALUE` replaces the variable in every variant that defines it. VALUE is TOML
//!   when it starts with `[`, `"` or `'` (`--set 'protected=["ci/**","Makefile"]'`), else a
//!   bare string. A name no variant defines is an error that lists the known ones.
//! - `--protect GLOB` appends GLOB to `protected` in every variant that defines it (once).
//! - `--vars FILE` is a TOML file of `NAME = VALUE` lines (strings or arrays of strings), each
//!   applied as `--set`. It must lie outside the watched directory (the worker must not be
//!   able to approve itself): [`refuse_inside`].
//!
//! The resolved values of every variable touched are kept on the protocol
//! ([`super::Protocol::overrides`]): they are folded into its SHA-256 (so `status
//! --expect-protocol` pins them) and shown in the start event, the heartbeat's run record and
//! the reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::glob::GlobError;
use super::vars::{VarError, Vars};
use super::{Protocol, ProtocolError};
use crate::safefs::FsError;
use crate::tomlfile::TomlError;

/// The variable `--protect` appends to.
pub const PROTECTED: &str = "protected";

/// The largest `--vars` file read.
const MAX_FILE: u64 = 1 << 20;

/// What the command line asks to change, in the order it is applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--vars FILE`, absolute once [`Overrides::resolve_paths`] ran.
    pub file: Option<PathBuf>,
    /// `--set NAME=VALUE`, each as given.
    pub set: Vec<String>,
    /// `--protect GLOB`.
    pub protect: Vec<String>,
}

/// One variable as the overrides left it: its name, its value (in the `main` variant, else
/// the first that defines it) and where the change came from (`--vars FILE`, `--set`,
/// `--protect`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Resolved {
    pub name: String,
    pub value: serde_json::Value,
    pub from: Vec<String>,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        self.file.is_none() && self.set.is_empty() && self.protect.is_empty()
    }

    /// `--vars`'s path made absolute (so the daemon reads the same file whatever its
    /// directory).
    pub fn resolve_paths(mut self) -> std::io::Result<Overrides> {
        if let Some(f) = &self.file {
            self.file = Some(std::path::absolute(f)?);
        }
        Ok(self)
    }

    /// Every change as (name, value, where from), in order: the file's, then `--set`'s.
    fn assignments(&self) -> Result<Vec<(String, toml::Value, String)>, OverrideError> {
        let mut out = Vec::new();
        if let Some(file) = &self.file {
            let from = format!("--vars {}", file.display());
            for (name, value) in read_file(file)? {
                out.push((name, value, from.clone()));
            }
        }
        for s in &self.set {
            let (name, value) = parse_set(s)?;
            out.push((name, value, "--set".to_string()));
        }
        Ok(out)
    }

    /// Applies the overrides to a protocol's variable tables; the variables touched, resolved.
    pub(super) fn apply(
        &self,
        vars: &mut BTreeMap<String, Spanned<Vars>>,
    ) -> Result<Vec<Resolved>, OverrideError> {
        let mut touched: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let known = {
            let mut names: Vec<&str> = vars
                .values()
                .flat_map(|v| v.get_ref().keys().map(String::as_str))
                .collect();
            names.sort_unstable();
            names.dedup();
            if names.is_empty() {
                "none: this protocol has no variables".to_string()
            } else {
                names.join(", ")
            }
        };
        for (name, mut value, from) in self.assignments()? {
            // Named for where it came from (the protocol's own check would point into the
            // protocol file).
            super::vars::validate(&Vars::from([(name.clone(), value.clone())])).map_err(|why| {
                OverrideError::Value {
                    from: from.clone(),
                    why,
                }
            })?;
            if !vars.values().any(|v| v.get_ref().contains_key(&name)) {
                return Err(OverrideError::Unknown { from, name, known });
            }
            if name == PROTECTED {
                value = globs(&value).map_err(|why| OverrideError::Value {
                    from: from.clone(),
                    why: VarError::Glob(why),
                })?;
            }
            for v in vars.values_mut() {
                if let Some(slot) = v.get_mut().get_mut(&name) {
                    *slot = value.clone();
                }
            }
            touched.entry(name).or_default().push(from);
        }
        if !self.protect.is_empty() {
            if !vars.values().any(|v| v.get_ref().contains_key(PROTECTED)) {
                return Err(OverrideError::NoProtected { known });
            }
            // Each as the paths it is matched against are written (`./ci/` is `ci/`).
            let mut protect = Vec::new();
            for glob in &self.protect {
                let g = super::predicate::Glob::try_from(glob.clone()).map_err(|why| {
                    OverrideError::Protect {
                        glob: glob.clone(),
                        why,
                    }
                })?;
                protect.push(g.as_str().to_string());
            }
            for v in vars.values_mut() {
                let Some(slot) = v.get_mut().get_mut(PROTECTED) else {
                    continue;
                };
                let toml::Value::Array(items) = slot else {
                    return Err(OverrideError::ProtectedNotList);
                };
                for glob in &protect {
                    let glob = toml::Value::String(glob.clone());
                    if !items.contains(&glob) {
                        items.push(glob);
                    }
                }
            }
            touched
                .entry(PROTECTED.to_string())
                .or_default()
                .push("--protect".to_string());
        }
        let value_of = |name: &str| {
            vars.get(super::MAIN_VARIANT)
                .and_then(|v| v.get_ref().get(name))
                .or_else(|| vars.values().find_map(|v| v.get_ref().get(name)))
                .map(json)
                .unwrap_or(serde_json::Value::Null)
        };
        Ok(touched
            .into_iter()
            .map(|(name, mut from)| {
                from.dedup();
                Resolved {
                    value: value_of(&name),
                    name,
                    from,
                }
            })
            .collect())
    }
}

/// A value of `protected` with each glob normalised as the protocol will read it (`./Makefile`
/// is `Makefile`), or why one cannot be a glob, named for the flag that gave it.
fn globs(value: &toml::Value) -> Result<toml::Value, GlobError> {
    let one = |s: &str| {
        super::predicate::Glob::try_from(s.to_string())
            .map(|g| toml::Value::String(g.as_str().to_string()))
    };
    match value {
        toml::Value::String(s) => one(s),
        toml::Value::Array(items) => items
            .iter()
            .map(|i| match i.as_str() {
                Some(s) => one(s),
                None => Ok(i.clone()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(toml::Value::Array),
        other => Ok(other.clone()),
    }
}

/// A TOML value as JSON (strings and arrays of strings are all a variable holds).
fn json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => serde_json::Value::String(s.clone()),
        toml::Value::Array(a) => serde_json::Value::Array(a.iter().map(json).collect()),
        other => serde_json::Value::String(other.to_string()),
    }
}

/// Why `--vars`, `--set` or `--protect` does not fit: each names the flag (or the file, with
/// its path and, for a read, the io error as its source) and what to give instead. Validation
/// reasons of a value or glob are shown inline (`why`), as the protocol's own errors are.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("--vars {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--vars {}: {why}", path.display())]
    NotAFile { path: PathBuf, why: &'static str },
    #[error("--vars {}:{line}:{column}: {why}", path.display())]
    Toml {
        path: PathBuf,
        line: usize,
        column: usize,
        why: String,
    },
    #[error("--set `{set}`: give NAME=VALUE")]
    SetSyntax { set: String },
    #[error("--set `{set}`: `{name}` is not a variable name (letters, digits, `_`)")]
    SetName { set: String, name: String },
    #[error("--set {name}: `{value}` is not a TOML string or array: {why}")]
    SetValue {
        name: String,
        value: String,
        why: String,
    },
    /// `from`: `--set` or `--vars FILE`.
    #[error("{from}: {why}")]
    Value { from: String, why: VarError },
    #[error("{from}: unknown variable `{name}` (this protocol's variables: {known})")]
    Unknown {
        from: String,
        name: String,
        known: String,
    },
    #[error("--protect: this protocol has no `{PROTECTED}` variable (its variables: {known}); --protect applies to the code-change protocol")]
    NoProtected { known: String },
    #[error("--protect `{glob}`: {why}")]
    Protect { glob: String, why: GlobError },
    #[error("--protect: `{PROTECTED}` is not a list of globs, cannot append to it")]
    ProtectedNotList,
    #[error("the variables file `{}` is inside the watched directory `{}`: the worker could edit the rules it is judged by; keep the file outside it", file.display(), dir.display())]
    Inside { file: PathBuf, dir: PathBuf },
}

/// `NAME=VALUE`: VALUE is TOML when it starts with `[`, `"` or `'`, else a bare string.
pub fn parse_set(s: &str) -> Result<(String, toml::Value), OverrideError> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| OverrideError::SetSyntax { set: s.to_string() })?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(OverrideError::SetName {
            set: s.to_string(),
            name: name.to_string(),
        });
    }
    let value = if value.trim_start().starts_with(['[', '"', '\'']) {
        let table: toml::Table =
            toml::from_str(&format!("v = {value}")).map_err(|e| OverrideError::SetValue {
                name: name.to_string(),
                value: value.to_string(),
                why: e.message().to_string(),
            })?;
        table
            .get("v")
            .cloned()
            .unwrap_or(toml::Value::Boolean(false))
    } else {
        toml::Value::String(value.to_string())
    };
    Ok((name.to_string(), value))
}

/// The `NAME = VALUE` pairs of a `--vars` file.
fn read_file(file: &Path) -> Result<Vec<(String, toml::Value)>, OverrideError> {
    let io = |source| OverrideError::Read {
        path: file.to_path_buf(),
        source,
    };
    let not_a_file = |why| OverrideError::NotAFile {
        path: file.to_path_buf(),
        why,
    };
    let text = match crate::tomlfile::read_text(file, MAX_FILE) {
        Ok(text) => text,
        Err(TomlError::Read(FsError::NotRegular { .. })) => {
            return Err(not_a_file("not a regular file"))
        }
        Err(TomlError::Read(FsError::TooLarge { .. })) => {
            return Err(not_a_file("larger than 1 MiB"))
        }
        Err(e) => return Err(io(e.into_io())),
    };
    let table: toml::Table = crate::tomlfile::parse(&text).map_err(|e| OverrideError::Toml {
        path: file.to_path_buf(),
        line: e.line,
        column: e.column,
        why: e.message,
    })?;
    Ok(table.into_iter().collect())
}

/// Refuses a `--vars` file inside `dir` (the watched directory or root; a symlink into it or
/// out of it counts as inside, [`crate::inside`]): the worker could rewrite its own rules.
pub fn refuse_inside(file: &Path, dir: &Path) -> Result<(), OverrideError> {
    if crate::inside::lies_inside(file, dir) {
        return Err(OverrideError::Inside {
            file: file.to_path_buf(),
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

impl Protocol {
    /// Loads a protocol (`Protocol::load_with_secrets`) with `overrides` applied to its
    /// variables; its SHA-256 covers the resolved values.
    pub fn load_with(
        spec: &str,
        secrets: Option<&Path>,
        overrides: &Overrides,
    ) -> Result<Protocol, ProtocolError> {
        if overrides.is_empty() {
            return Protocol::load_with_secrets(spec, secrets);
        }
        // The protocol is loaded as is first (its own mistakes are reported as its own), then
        // its text parsed again with the overrides in place.
        let base = Protocol::load_with_secrets(spec, secrets)?;
        let mut p = Protocol::parse_with(&base.text, &base.origin, overrides)?;
        if let Some(file) = secrets {
            // As `load_with_secrets` does: the same rules, the same folding into the hash.
            let rules = super::secrets::SecretRules::new(
                file.display().to_string(),
                std::sync::Arc::new(super::secrets::Rules::load_file(file)?),
            );
            p.use_secrets(&rules);
        }
        p.sha256 = fold(&base.sha256, &p.overrides);
        Ok(p)
    }
}

/// The hash of a protocol with its variables overridden: the loaded protocol's, then each
/// resolved variable as canonical JSON.
fn fold(sha256: &str, resolved: &[Resolved]) -> String {
    let mut text = sha256.to_string();
    for r in resolved {
        text.push_str(&format!("\n--var {}={}", r.name, r.value));
    }
    crate::sha256_hex(text.as_bytes())
}

/// The resolved overrides as one line each: `protected = ["a", "b"]  (--protect)`.
pub fn describe(resolved: &[Resolved]) -> Vec<String> {
    resolved
        .iter()
        .map(|r| format!("{} = {}  ({})", r.name, r.value, r.from.join(", ")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(o: &Overrides) -> Result<Protocol, ProtocolError> {
        Protocol::load_with("code-change", None, o)
    }

    #[test]
    fn protect_appends_and_changes_the_hash() {
        let base = Protocol::load("code-change").unwrap();
        let o = Overrides {
            protect: vec!["ci/**".into()],
            ..Default::default()
        };
        let p = cc(&o).unwrap();
        assert_ne!(p.sha256, base.sha256);
        let r = &p.overrides[0];
        assert_eq!(r.name, PROTECTED);
        let globs = r.value.as_array().unwrap();
        assert_eq!(globs.last().unwrap(), "ci/**");
        assert!(globs.len() > 1, "the protocol's own globs are kept");
        // CC-01's description lists the protected globs: the new one is there.
        let (_, cc01) = p.instances_of("CC-01")[0];
        assert!(cc01.description.contains("ci/**"), "{}", cc01.description);
        // The same overrides, the same hash; another glob, another.
        assert_eq!(cc(&o).unwrap().sha256, p.sha256);
        let other = Overrides {
            protect: vec!["cd/**".into()],
            ..Default::default()
        };
        assert_ne!(cc(&other).unwrap().sha256, p.sha256);
    }

    #[test]
    fn set_replaces_and_unknown_names_are_listed() {
        let o = Overrides {
            set: vec![r#"protected=["a/**","b"]"#.into()],
            ..Default::default()
        };
        let p = cc(&o).unwrap();
        assert_eq!(p.overrides[0].value, serde_json::json!(["a/**", "b"]));
        let bad = Overrides {
            set: vec!["nope=1".into()],
            ..Default::default()
        };
        let e = cc(&bad).unwrap_err().to_string();
        assert!(e.contains("unknown variable `nope`"), "{e}");
        assert!(e.contains("protected") && e.contains("shadow_py"), "{e}");
    }

    #[test]
    fn a_bare_value_is_a_string_and_bad_toml_is_an_error() {
        assert_eq!(
            parse_set("sfx=_X").unwrap(),
            ("sfx".into(), toml::Value::String("_X".into()))
        );
        assert_eq!(
            parse_set("sfx=1").unwrap().1,
            toml::Value::String("1".into())
        );
        assert!(parse_set("protected=[\"a\"").is_err());
        assert!(parse_set("noequals").is_err());
        assert!(parse_set("bad name=x").is_err());
    }

    #[test]
    fn a_value_that_is_no_variable_is_refused_where_the_protocol_would_be() {
        let o = Overrides {
            set: vec!["protected=[1, 2]".into()],
            ..Default::default()
        };
        let e = cc(&o).unwrap_err().to_string();
        assert!(
            e.starts_with("--set: variable `protected` must be a string or an array of strings"),
            "{e}"
        );
        // A glob that does not compile is refused at load, as in the protocol itself.
        let o = Overrides {
            protect: vec!["a/[".into()],
            ..Default::default()
        };
        let e = cc(&o).unwrap_err().to_string();
        assert!(e.starts_with("--protect `a/[`: "), "{e}");
    }

    #[test]
    fn globs_are_normalised_from_every_source_or_refused_with_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vars.toml");
        std::fs::write(&file, "protected = [\"./from/file/\"]\n").unwrap();
        let o = Overrides {
            file: Some(file.clone()),
            set: vec![],
            protect: vec!["./Makefile".into(), "./ci/**".into(), "ci//x".into()],
        };
        let p = cc(&o).unwrap();
        assert_eq!(
            p.overrides[0].value,
            serde_json::json!(["from/file/", "Makefile", "ci/**", "ci/x"])
        );
        let o = Overrides {
            set: vec![r#"protected=["./a", "b/./c"]"#.into()],
            ..Default::default()
        };
        assert_eq!(
            cc(&o).unwrap().overrides[0].value,
            serde_json::json!(["a", "b/c"])
        );
        for (o, start) in [
            (
                Overrides {
                    set: vec![r#"protected=["/repo/ci/**"]"#.into()],
                    ..Default::default()
                },
                "--set: invalid glob `/repo/ci/**`: globs are relative",
            ),
            (
                Overrides {
                    protect: vec!["./".into()],
                    ..Default::default()
                },
                "--protect `./`: invalid glob `./`: it names the directory itself",
            ),
        ] {
            let e = cc(&o).unwrap_err().to_string();
            assert!(e.starts_with(start), "{e}");
        }
    }

    #[test]
    fn protect_needs_a_protected_variable() {
        let o = Overrides {
            protect: vec!["ci/**".into()],
            ..Default::default()
        };
        let e = Protocol::load_with("d10", None, &o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `protected` variable"), "{e}");
    }

    #[test]
    fn the_file_comes_first_and_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vars.toml");
        std::fs::write(&file, "protected = [\"from/file\"]\n").unwrap();
        let o = Overrides {
            file: Some(file.clone()),
            protect: vec!["flag/**".into()],
            ..Default::default()
        };
        let p = cc(&o).unwrap();
        assert_eq!(
            p.overrides[0].value,
            serde_json::json!(["from/file", "flag/**"])
        );
        assert_eq!(p.overrides[0].from.len(), 2);
        std::fs::write(&file, "protected = [\n").unwrap();
        let e = cc(&o).unwrap_err().to_string();
        assert!(e.contains("vars.toml:"), "{e}");
    }

    #[test]
    fn refuse_inside_resolves_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("v.toml"), "").unwrap();
        std::os::unix::fs::symlink(ws.join("v.toml"), dir.path().join("link.toml")).unwrap();
        assert!(refuse_inside(&ws.join("v.toml"), &ws).is_err());
        assert!(refuse_inside(&dir.path().join("link.toml"), &ws).is_err());
        std::fs::write(dir.path().join("out.toml"), "").unwrap();
        assert!(refuse_inside(&dir.path().join("out.toml"), &ws).is_ok());
    }

    #[test]
    fn a_vars_file_that_cannot_be_read_keeps_its_path_and_cause() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.toml");
        let o = Overrides {
            file: Some(missing.clone()),
            ..Default::default()
        };
        let e = o.assignments().unwrap_err();
        assert!(
            matches!(&e, OverrideError::Read { path, source }
                if path == &missing && source.kind() == std::io::ErrorKind::NotFound),
            "{e:?}"
        );
        // The message names the file; the cause follows it as its source, not repeated in it.
        assert_eq!(e.to_string(), format!("--vars {}", missing.display()));
        let cause = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(
            cause.as_deref(),
            Some("No such file or directory (os error 2)")
        );
        // Through the protocol's error, the cause is still there for `{:#}` to print.
        let via = Protocol::load_with("code-change", None, &o).unwrap_err();
        let causes: Vec<String> =
            std::iter::successors(std::error::Error::source(&via), |c| c.source())
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            causes.last().map(String::as_str),
            Some("No such file or directory (os error 2)"),
            "{via}"
        );
        let o = Overrides {
            file: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        assert!(matches!(
            o.assignments().unwrap_err(),
            OverrideError::NotAFile {
                why: "not a regular file",
                ..
            }
        ));
    }
}
