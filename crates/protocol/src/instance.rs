//! One check instance made from its definition, a variant's variables and its pass: every
//! predicate instantiated and validated (the rules serde cannot express), with errors located
//! at the offending value in the protocol text.

use std::ops::Range;
use std::sync::Arc;

use toml::Spanned;

use super::predicate::{JsonPredicateError, Predicate, SyntaxCommandError, TimeRef};
use super::raw::RawCheck;
use super::vars::{self, Vars};
use super::{inputs, CheckDef, CheckInstance, ProtocolError, MAIN_VARIANT};

#[allow(
    clippy::too_many_arguments,
    reason = "one check instance is made of this many independent parts of the protocol"
)]
pub(super) fn instance(
    text: &str,
    def: &Arc<CheckDef>,
    raw: &Spanned<RawCheck>,
    (vars, variant): (&Vars, &str),
    (pass_deadline, tracker): (Option<&Predicate>, &str),
    err_at: &dyn Fn(Option<Range<usize>>, String) -> ProtocolError,
) -> Result<CheckInstance, ProtocolError> {
    let c = raw.get_ref();
    let located = |m: String| {
        // Point at the offending value when it can be found inside the check, else at the check.
        // The check's text runs from its header to the next array-of-tables header.
        let span = raw.span();
        let end = text[span.start + 1..]
            .find("\n[[")
            .map_or(text.len(), |i| span.start + 1 + i)
            .max(span.end);
        let pos = quoted_value(&m)
            .and_then(|needle| {
                text[span.start..end]
                    .find(needle.as_str())
                    .map(|i| span.start + i)
            })
            .map(|p| p..p);
        let suffix = if variant == MAIN_VARIANT {
            String::new()
        } else {
            format!(" (variant `{variant}`)")
        };
        err_at(
            pos.or(Some(span)),
            format!("in check `{}`{suffix}: {m}", def.id),
        )
    };
    let invalid = |e: PredicateError| located(e.to_string());
    let predicate = instantiate_checked(&c.predicate, vars).map_err(invalid)?;
    let description = vars::prose(&def.description, vars)
        .map_err(|m| located(format!("in `description`: {m}")))?;
    // The pass's deadline comes instantiated for this variant already.
    let deadline = match &c.deadline {
        Some(d) => Some(instantiate_checked(d, vars).map_err(invalid)?),
        None => pass_deadline.cloned(),
    };
    let when = c
        .when
        .as_ref()
        .map(|w| instantiate_checked(w, vars))
        .transpose()
        .map_err(invalid)?;
    let mut parts = vec![&predicate];
    parts.extend(deadline.as_ref());
    parts.extend(when.as_ref());
    let inputs = inputs::Inputs::of(&parts, tracker);
    Ok(CheckInstance {
        def: def.clone(),
        variant: variant.to_string(),
        description,
        predicate,
        deadline,
        when,
        inputs,
    })
}

/// Where a load error points: toml gives the span of the value being read when a check failed
/// (for a rule in an array, the whole array); when the message starts with the offending value
/// in backticks and that value occurs inside the span, its first occurrence there.
pub(super) fn within(
    text: &str,
    span: Option<Range<usize>>,
    message: &str,
) -> Option<Range<usize>> {
    let span = span?;
    let found = message
        .starts_with('`')
        .then(|| quoted_value(message))
        .flatten()
        .and_then(|needle| text.get(span.clone())?.find(needle.as_str()))
        .map(|i| span.start + i);
    Some(found.map_or(span, |p| p..p))
}

/// The first backticked value of an error message (`invalid regex `(`: …` → `(`).
pub(super) fn quoted_value(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let end = message[start..].find('`')? + start;
    let v = &message[start..end];
    (!v.is_empty()).then(|| v.to_string())
}

/// Why a predicate was refused after its variables were substituted: a variable, or a rule
/// serde cannot express. Shown inside a protocol error located at the check or pass, so each
/// message carries its own reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum PredicateError {
    #[error(transparent)]
    Var(#[from] vars::VarError),
    #[error("`all` / `any` need at least one predicate")]
    EmptyGroup,
    #[error("`file_set.key` `{key}` needs a capture group for the key")]
    KeyWithoutGroup { key: String },
    #[error("`time_order` takes `chain` or `fields`, not both")]
    ChainAndFields,
    #[error("`time_order` needs at least two elements")]
    OneTime,
    #[error("`text` needs `files` or `fields`")]
    TextReadsNothing,
    #[error(
        "`require.at_least` `{at_least}` must be between 1 and the number of patterns and terms ({count})"
    )]
    AtLeast { at_least: usize, count: usize },
    #[error("`text` needs at least one of `require`, `forbid`, `min_chars`, `extract`")]
    TextAsksNothing,
    #[error("`threshold` `{0}` must be between 0 and 1")]
    Threshold(f64),
    #[error("`fill_rate.min` `{0}` must be between 0 and 1")]
    FillRate(f64),
    #[error("heading level `{0}` must be 1 to 6")]
    HeadingLevel(u8),
    #[error("`distinct` needs at least two fields")]
    OneField,
    #[error(transparent)]
    Command(#[from] SyntaxCommandError),
    #[error(transparent)]
    Json(#[from] JsonPredicateError),
    #[error("`first_of` needs at least one reference")]
    FirstOfNothing,
}

pub(super) fn instantiate_checked(p: &Predicate, vars: &Vars) -> Result<Predicate, PredicateError> {
    let p = vars::instantiate(p, vars)?;
    validate(&p)?;
    Ok(p)
}

/// Whether any leaf of `p` (inside `all`, `any`, `not`, `if`, `fail_if_missing`) satisfies `f`.
pub(super) fn any_leaf(p: &Predicate, f: &dyn Fn(&Predicate) -> bool) -> bool {
    use Predicate as P;
    match p {
        P::All(v) | P::Any(v) => v.iter().any(|q| any_leaf(q, f)),
        P::Not(q) | P::FailIfMissing(q) => any_leaf(q, f),
        P::If(i) => {
            any_leaf(&i.cond, f)
                || any_leaf(&i.then, f)
                || i.otherwise.as_ref().is_some_and(|e| any_leaf(e, f))
        }
        leaf => f(leaf),
    }
}

/// Semantic rules serde cannot express.
fn validate(p: &Predicate) -> Result<(), PredicateError> {
    use Predicate as P;
    match p {
        P::All(v) | P::Any(v) => {
            if v.is_empty() {
                return Err(PredicateError::EmptyGroup);
            }
            v.iter().try_for_each(validate)
        }
        P::Not(inner) | P::FailIfMissing(inner) => validate(inner),
        P::If(i) => {
            validate(&i.cond)?;
            validate(&i.then)?;
            i.otherwise.as_ref().map_or(Ok(()), validate)
        }
        P::FileSet(f) => {
            if f.key.captures_len() < 2 {
                return Err(PredicateError::KeyWithoutGroup {
                    key: f.key.as_str().to_string(),
                });
            }
            Ok(())
        }
        P::TimeOrder(t) => {
            let n = t.chain.len() + t.fields.len();
            if !t.chain.is_empty() && !t.fields.is_empty() {
                return Err(PredicateError::ChainAndFields);
            }
            if n < 2 {
                return Err(PredicateError::OneTime);
            }
            t.chain.iter().try_for_each(validate_time)
        }
        P::HasTime(t) => validate_time(t),
        P::Text(t) => {
            if t.files.is_empty() && t.fields.is_empty() {
                return Err(PredicateError::TextReadsNothing);
            }
            if let Some(r) = &t.require {
                let n = r.patterns.len() + r.terms.len();
                if n == 0 || r.at_least == 0 || r.at_least > n {
                    return Err(PredicateError::AtLeast {
                        at_least: r.at_least,
                        count: n,
                    });
                }
            }
            if t.require.is_none()
                && t.forbid.is_empty()
                && t.forbid_terms.is_empty()
                && t.min_chars.is_none()
                && t.extract.is_none()
            {
                return Err(PredicateError::TextAsksNothing);
            }
            Ok(())
        }
        P::Dissimilar(d) if !(0.0..=1.0).contains(&d.threshold) => {
            Err(PredicateError::Threshold(d.threshold))
        }
        P::FillRate(f) if !(0.0..=1.0).contains(&f.min) => Err(PredicateError::FillRate(f.min)),
        P::Heading(h) if !(1..=6).contains(&h.level) => Err(PredicateError::HeadingLevel(h.level)),
        P::Distinct(v) if v.len() < 2 => Err(PredicateError::OneField),
        P::Parses(p) => Ok(p.commands.iter().try_for_each(|c| c.validate())?),
        P::Json(j) => Ok(j.validate()?),
        _ => Ok(()),
    }
}

fn validate_time(t: &TimeRef) -> Result<(), PredicateError> {
    match t {
        TimeRef::FirstOf(v) if v.is_empty() => Err(PredicateError::FirstOfNothing),
        TimeRef::FirstOf(v) => v.iter().try_for_each(validate_time),
        TimeRef::Earliest(i) | TimeRef::Latest(i) => validate_time(i),
        _ => Ok(()),
    }
}
