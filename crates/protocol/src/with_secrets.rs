//! A protocol with other secret rules (`--secrets FILE`): putting the rules in place of every
//! `added_lines` predicate's, folding them into the protocol's hash, and listing the rule files
//! a protocol reads. The rules themselves are [`super::secrets`]; the predicates,
//! [`super::predicate`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::predicate::{AddedLines, Predicate};
use super::secrets::{Rules, SecretRules};
use super::{Protocol, ProtocolError};

impl Protocol {
    /// Loads a protocol (`Protocol::load`), its secret rules replaced by the file `secrets`
    /// when given (`--secrets FILE`).
    pub fn load_with_secrets(
        spec: &str,
        secrets: Option<&Path>,
    ) -> Result<Protocol, ProtocolError> {
        let mut p = Protocol::load(spec)?;
        if let Some(file) = secrets {
            if !file.is_absolute() {
                return Err(ProtocolError::SecretsSpec(file.display().to_string()));
            }
            let loaded = Rules::load_file(file)?;
            // The rules are part of what the referee runs: the protocol's hash covers them, so
            // `status --expect-protocol` tells a referee started with other rules.
            p.sha256 = crate::sha256_hex(
                format!("{}\n--secrets {}", p.sha256, loaded.sha256()).as_bytes(),
            );
            let rules = SecretRules::new(file.display().to_string(), Arc::new(loaded));
            if !p.use_secrets(&rules) {
                return Err(ProtocolError::Invalid {
                    origin: p.origin.clone(),
                    line: 1,
                    column: 1,
                    message: "`--secrets` needs a check with `added_lines = { secrets = ... }`"
                        .into(),
                });
            }
        }
        Ok(p)
    }

    /// Puts `rules` in place of the secret rules of every `added_lines` predicate that has
    /// some; `false` when none has.
    pub fn use_secrets(&mut self, rules: &SecretRules) -> bool {
        let mut used = false;
        for c in self.passes.iter_mut().flat_map(|p| p.checks.iter_mut()) {
            each_added_lines(&mut c.predicate, &mut |a| {
                if a.secrets.is_some() {
                    a.secrets = Some(rules.clone());
                    used = true;
                }
            });
        }
        used
    }

    /// The rule files (not the embedded rules) its checks read.
    pub fn secret_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for c in self.passes.iter().flat_map(|p| p.checks.iter()) {
            let mut predicate = c.predicate.clone();
            each_added_lines(&mut predicate, &mut |a| {
                if let Some(path) = a.secrets.as_ref().and_then(|s| s.rules().path()) {
                    files.push(path.to_path_buf());
                }
            });
        }
        files.sort();
        files.dedup();
        files
    }
}

fn each_added_lines(p: &mut Predicate, f: &mut dyn FnMut(&mut AddedLines)) {
    use Predicate as P;
    match p {
        P::AddedLines(a) => f(a),
        P::All(v) | P::Any(v) => v.iter_mut().for_each(|p| each_added_lines(p, f)),
        P::Not(inner) | P::FailIfMissing(inner) => each_added_lines(inner, f),
        P::If(i) => {
            each_added_lines(&mut i.cond, f);
            each_added_lines(&mut i.then, f);
            if let Some(o) = &mut i.otherwise {
                each_added_lines(o, f);
            }
        }
        _ => {}
    }
}
