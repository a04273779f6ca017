//! `${var}` substitution: how one check definition becomes an instance per variant (the
//! D10 REFINE repeats are the pass-2/3/4 checks with the `refine` variables). Only strings
//! can hold a reference, so substitution walks a predicate's string-bearing fields
//! (`Substitute`); every other field is copied. It never judges anything.

use std::collections::BTreeMap;

use super::glob::GlobError;
use super::pattern::PatternError;
use super::predicate::*;

/// Why a substitution or a variable was refused; shown inside a protocol error that is
/// located at the check (or the `[vars]` table), so each message carries its own reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    #[error("undefined variable `${{{name}}}`")]
    Undefined { name: String },
    #[error("unterminated variable reference in `{text}`")]
    Unterminated { text: String },
    #[error("variable `${{{name}}}` is a list: it can only stand alone as an element of a list")]
    ListInText { name: String },
    #[error("variable `{name}` must be a string or an array of strings")]
    NotStrings { name: String },
    #[error("variable `{name}` refers to another variable; values are substituted once")]
    Nested { name: String },
    /// A substituted glob, pattern or size that does not read as one.
    #[error(transparent)]
    Glob(#[from] GlobError),
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error(transparent)]
    Size(#[from] crate::size::SizeError),
}

/// The variables of one variant: each a string or an array of strings.
pub type Vars = BTreeMap<String, toml::Value>;

/// A copy of `value` with every `${name}` substituted; globs and patterns that held a
/// reference are validated anew. A string that is exactly `${name}` takes the variable's
/// value as is; a list variable standing alone as a list element is spliced into that list
/// (`fields = ["${phase_chain}"]`), or makes a one-or-many value many; elsewhere the
/// variable must be a string.
pub fn instantiate<T: Substitute>(value: &T, vars: &Vars) -> Result<T, VarError> {
    value.substitute(vars)
}

/// A value whose strings may hold `${var}` references.
pub trait Substitute: Sized {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError>;
}

/// A string-like value: the unit a list variable is spliced in as.
pub trait Scalar: Sized + Clone {
    fn source(&self) -> &str;
    fn from_source(source: String) -> Result<Self, VarError>;
}

impl Scalar for String {
    fn source(&self) -> &str {
        self
    }
    fn from_source(source: String) -> Result<Self, VarError> {
        Ok(source)
    }
}

impl Scalar for Glob {
    fn source(&self) -> &str {
        self.as_str()
    }
    fn from_source(source: String) -> Result<Self, VarError> {
        Ok(Glob::try_from(source)?)
    }
}

impl Scalar for Size {
    fn source(&self) -> &str {
        self.as_str()
    }
    fn from_source(source: String) -> Result<Self, VarError> {
        Ok(Size::try_from(source)?)
    }
}

impl Substitute for Size {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        scalar(self, vars)
    }
}

impl Substitute for Vec<ExtLimit> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        self.iter().map(|e| e.substitute(vars)).collect()
    }
}

impl Scalar for Pattern {
    fn source(&self) -> &str {
        self.as_str()
    }
    fn from_source(source: String) -> Result<Self, VarError> {
        Ok(Pattern::try_from(source)?)
    }
}

/// A scalar with its references replaced (each must name a string variable).
fn scalar<T: Scalar>(value: &T, vars: &Vars) -> Result<T, VarError> {
    let s = value.source();
    if !s.contains("${") {
        return Ok(value.clone());
    }
    T::from_source(interpolate(s, vars)?)
}

/// The values a list element stands for: a list variable's items when it is exactly
/// `${list}`, else the element with its references replaced.
fn spliced<T: Scalar>(item: &T, vars: &Vars, out: &mut Vec<T>) -> Result<(), VarError> {
    if let Some(name) = standalone(item.source()) {
        if let toml::Value::Array(items) = lookup(name, vars)? {
            for v in items {
                out.push(T::from_source(v.as_str().unwrap_or_default().to_string())?);
            }
            return Ok(());
        }
    }
    out.push(scalar(item, vars)?);
    Ok(())
}

/// The name in a string that is exactly `${name}`.
fn standalone(s: &str) -> Option<&str> {
    s.strip_prefix("${")?
        .strip_suffix('}')
        .filter(|name| !name.contains(['$', '{', '}']))
}

/// `s` with every `${name}` replaced by `render(name, value)` of its variable.
fn substitute(
    s: &str,
    vars: &Vars,
    render: impl Fn(&str, &toml::Value) -> Result<String, VarError>,
) -> Result<String, VarError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| VarError::Unterminated {
            text: s.to_string(),
        })?;
        let name = &after[..end];
        out.push_str(&render(name, lookup(name, vars)?)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `s` with every `${name}` replaced by its (string) variable.
fn interpolate(s: &str, vars: &Vars) -> Result<String, VarError> {
    substitute(s, vars, |name, v| match v {
        toml::Value::String(v) => Ok(v.clone()),
        _ => Err(VarError::ListInText {
            name: name.to_string(),
        }),
    })
}

/// Prose (a check's description) with every `${name}` replaced: a string variable by its value,
/// a list variable by its items joined with `, ` (`${protected}` in CC-01's description lists
/// the protected globs). An undefined variable is an error, as in a predicate.
pub fn prose(s: &str, vars: &Vars) -> Result<String, VarError> {
    substitute(s, vars, |_, v| {
        Ok(match v {
            toml::Value::Array(items) => items
                .iter()
                .filter_map(toml::Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            v => v.as_str().unwrap_or_default().to_string(),
        })
    })
}

macro_rules! scalars {
    ($($ty:ty),*) => {$(
        impl Substitute for $ty {
            fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
                scalar(self, vars)
            }
        }
        impl Substitute for Vec<$ty> {
            fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
                let mut out = Vec::with_capacity(self.len());
                for item in self {
                    spliced(item, vars, &mut out)?;
                }
                Ok(out)
            }
        }
    )*};
}
scalars!(String, Glob, Pattern);

impl<T: Substitute> Substitute for Option<T> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        self.as_ref().map(|v| v.substitute(vars)).transpose()
    }
}

impl<T: Substitute> Substitute for Box<T> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        Ok(Box::new((**self).substitute(vars)?))
    }
}

impl<T: Scalar> Substitute for OneOrMany<T> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        let mut out = Vec::new();
        match self {
            OneOrMany::One(one) => {
                let name = standalone(one.source());
                match name.map(|n| lookup(n, vars)).transpose()? {
                    Some(toml::Value::Array(_)) => {
                        spliced(one, vars, &mut out)?;
                        Ok(OneOrMany::Many(out))
                    }
                    _ => Ok(OneOrMany::One(scalar(one, vars)?)),
                }
            }
            OneOrMany::Many(many) => {
                for item in many {
                    spliced(item, vars, &mut out)?;
                }
                Ok(OneOrMany::Many(out))
            }
        }
    }
}

impl Substitute for [Glob; 2] {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        Ok([scalar(&self[0], vars)?, scalar(&self[1], vars)?])
    }
}

impl Substitute for Vec<Predicate> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        self.iter().map(|p| p.substitute(vars)).collect()
    }
}

impl Substitute for Vec<TimeRef> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        self.iter().map(|t| t.substitute(vars)).collect()
    }
}

/// `Substitute` for a struct: the fields that may hold references, then those copied as
/// they are. Every field is named, so a new field does not compile until it is placed.
macro_rules! fields {
    ($ty:ident { $($sub:ident),* $(; $($keep:ident),*)? }) => {
        impl Substitute for $ty {
            fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
                let $ty { $($sub,)* $($($keep,)*)? } = self;
                Ok($ty {
                    $($sub: $sub.substitute(vars)?,)*
                    $($($keep: $keep.clone(),)*)?
                })
            }
        }
    };
}

fields!(IfThen {
    cond,
    then,
    otherwise
});
fields!(Count { glob; min, max, signature });
fields!(VerdictIs { files, is });
fields!(FileSet { glob, key, expect; ignore_case });
fields!(Section { section; exact });
fields!(FieldMatches { fields, pattern; any });
fields!(ColumnMatches {
    section,
    column,
    pattern
});
fields!(ColumnRef { section, column });
fields!(TimeOrder { chain, fields; min_gap_seconds, absent, min_present });
fields!(Dissimilar { files; threshold, if_absent });
fields!(Text { files, fields, extract, forbid, forbid_terms, require; min_chars });
fields!(Require { patterns, terms; at_least });
fields!(Heading { files, text; level, last });
fields!(Gate { files, id, result; require_result });
fields!(GateFiles { files; min_files });
fields!(GateCount { files; min });
fields!(GateSources {
    files,
    forbid_contains,
    forbid_equals
});
fields!(PathsListed {
    section,
    column,
    skip
});

fields!(Unchanged { globs, shadows });
fields!(Shadow { paths; ext, stem });
fields!(AddedLines { forbid, forbid_patterns; secrets });
fields!(SizeLimit {
    by_extension,
    default
});
fields!(ExtLimit { max; ext });
fields!(Forbid { pattern; name });
fields!(RecordField { field, pattern });
fields!(Parses { files, commands });
fields!(Json { file, path, matches; exists, ge, le, gt, lt, eq, ne, one_of });
fields!(SyntaxCommand { ext, argv; timeout_seconds, replaces_builtin });

impl Substitute for Vec<SyntaxCommand> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        self.iter().map(|c| c.substitute(vars)).collect()
    }
}

impl Substitute for Vec<Shadow> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        self.iter().map(|s| s.substitute(vars)).collect()
    }
}

impl Substitute for Vec<Forbid> {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        self.iter().map(|f| f.substitute(vars)).collect()
    }
}

impl Substitute for TimeRef {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        Ok(match self {
            TimeRef::Field(f) => TimeRef::Field(f.substitute(vars)?),
            TimeRef::FieldTime(f) => TimeRef::FieldTime(f.substitute(vars)?),
            TimeRef::Column(c) => TimeRef::Column(c.substitute(vars)?),
            TimeRef::Mtime(g) => TimeRef::Mtime(g.substitute(vars)?),
            TimeRef::FirstOf(v) => TimeRef::FirstOf(v.substitute(vars)?),
            TimeRef::Earliest(t) => TimeRef::Earliest(t.substitute(vars)?),
            TimeRef::Latest(t) => TimeRef::Latest(t.substitute(vars)?),
        })
    }
}

impl Substitute for Predicate {
    fn substitute(&self, vars: &Vars) -> Result<Self, VarError> {
        use Predicate as P;
        Ok(match self {
            P::All(v) => P::All(v.substitute(vars)?),
            P::Any(v) => P::Any(v.substitute(vars)?),
            P::Not(p) => P::Not(p.substitute(vars)?),
            P::If(i) => P::If(i.substitute(vars)?),
            P::FailIfMissing(p) => P::FailIfMissing(p.substitute(vars)?),
            P::Always(b) => P::Always(*b),
            P::Complete(b) => P::Complete(*b),
            P::Verdict(v) => P::Verdict(v.substitute(vars)?),
            P::Exists(g) => P::Exists(g.substitute(vars)?),
            P::Count(c) => P::Count(c.substitute(vars)?),
            P::FileSet(f) => P::FileSet(f.substitute(vars)?),
            P::Filled(f) => P::Filled(f.substitute(vars)?),
            P::SectionFilled(s) => P::SectionFilled(s.substitute(vars)?),
            P::FieldMatches(f) => P::FieldMatches(f.substitute(vars)?),
            P::Column(c) => P::Column(c.substitute(vars)?),
            P::HasTime(t) => P::HasTime(t.substitute(vars)?),
            P::TimeOrder(t) => P::TimeOrder(t.substitute(vars)?),
            P::Distinct(v) => P::Distinct(v.substitute(vars)?),
            P::Dissimilar(d) => P::Dissimilar(d.substitute(vars)?),
            P::Text(t) => P::Text(t.substitute(vars)?),
            P::Heading(h) => P::Heading(h.substitute(vars)?),
            P::Json(j) => P::Json(j.substitute(vars)?),
            P::FillRate(f) => P::FillRate(f.clone()),
            P::Gate(g) => P::Gate(g.substitute(vars)?),
            P::GateFiles(g) => P::GateFiles(g.substitute(vars)?),
            P::GateCount(g) => P::GateCount(g.substitute(vars)?),
            P::GateSources(g) => P::GateSources(g.substitute(vars)?),
            P::PathsListed(p) => P::PathsListed(p.substitute(vars)?),
            P::TaskRecord(b) => P::TaskRecord(*b),
            P::Unchanged(u) => P::Unchanged(u.substitute(vars)?),
            P::ChangesListed(b) => P::ChangesListed(*b),
            P::HashesMatch(b) => P::HashesMatch(*b),
            P::NoLoss(b) => P::NoLoss(*b),
            P::Parses(p) => P::Parses(p.substitute(vars)?),
            P::SizeLimit(s) => P::SizeLimit(s.substitute(vars)?),
            P::AddedLines(a) => P::AddedLines(a.substitute(vars)?),
            P::RecordField(r) => P::RecordField(r.substitute(vars)?),
            P::Style(s) => P::Style(s.clone()),
            P::Weakened(b) => P::Weakened(*b),
        })
    }
}

fn lookup<'v>(name: &str, vars: &'v Vars) -> Result<&'v toml::Value, VarError> {
    vars.get(name).ok_or_else(|| VarError::Undefined {
        name: name.to_string(),
    })
}

/// Checks that every variable is a string or an array of strings.
pub fn validate(vars: &Vars) -> Result<(), VarError> {
    for (name, value) in vars {
        let strings = match value {
            toml::Value::String(s) => vec![s.as_str()],
            toml::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str())
                .collect::<Option<_>>()
                .ok_or_else(|| VarError::NotStrings { name: name.clone() })?,
            _ => return Err(VarError::NotStrings { name: name.clone() }),
        };
        if strings.iter().any(|s| s.contains("${")) {
            return Err(VarError::Nested { name: name.clone() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, toml::Value)]) -> Vars {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn interpolates_and_replaces_whole_values() {
        let p: Predicate = toml::from_str::<toml::Table>(
            "p = { time_order = { fields = [\"X\", \"${chain}\"] } }",
        )
        .unwrap()["p"]
            .clone()
            .try_into()
            .unwrap();
        let v = vars(&[(
            "chain",
            toml::Value::Array(vec!["A_REFINE".into(), "B_REFINE".into()]),
        )]);
        let out = instantiate(&p, &v).unwrap();
        let Predicate::TimeOrder(t) = out else {
            panic!("wrong predicate")
        };
        assert_eq!(t.fields, vec!["X", "A_REFINE", "B_REFINE"]);
    }

    #[test]
    fn undefined_variables_are_errors() {
        let p = Predicate::Filled(crate::predicate::OneOrMany::One("P3A_START${sfx}".into()));
        assert_eq!(
            instantiate(&p, &Vars::new()).unwrap_err(),
            VarError::Undefined { name: "sfx".into() }
        );
        let err = instantiate(&p, &Vars::new()).unwrap_err().to_string();
        assert!(err.contains("undefined variable `${sfx}`"), "{err}");
        let ok = instantiate(&p, &vars(&[("sfx", "_REFINE".into())])).unwrap();
        assert!(format!("{ok:?}").contains("P3A_START_REFINE"));
    }

    #[test]
    fn list_variables_splice_or_make_many_and_nothing_else() {
        let list = toml::Value::Array(vec!["a.md".into(), "b.md".into()]);
        let v = vars(&[("files", list), ("one", "c.md".into())]);
        let exists = |g: &str| Predicate::Exists(OneOrMany::One(g.to_string().try_into().unwrap()));
        let globs = |p: Predicate| match p {
            Predicate::Exists(OneOrMany::Many(g)) => {
                g.iter().map(|g| g.as_str().to_string()).collect()
            }
            Predicate::Exists(OneOrMany::One(g)) => vec![format!("one:{}", g.as_str())],
            other => panic!("{other:?}"),
        };
        assert_eq!(
            globs(instantiate(&exists("${files}"), &v).unwrap()),
            ["a.md", "b.md"]
        );
        assert_eq!(
            globs(instantiate(&exists("${one}"), &v).unwrap()),
            ["one:c.md"]
        );
        assert_eq!(
            globs(instantiate(&exists("x/${one}"), &v).unwrap()),
            ["one:x/c.md"]
        );
        let err = instantiate(&exists("x/${files}"), &v)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a list"), "{err}");
        let count = Predicate::Count(Count {
            glob: "${files}".to_string().try_into().unwrap(),
            min: None,
            max: None,
            signature: None,
        });
        let err = instantiate(&count, &v).unwrap_err().to_string();
        assert!(err.contains("is a list"), "{err}");
    }

    #[test]
    fn variable_values_are_strings_without_references() {
        assert!(validate(&vars(&[("a", "x".into())])).is_ok());
        assert!(validate(&vars(&[("a", toml::Value::Integer(1))])).is_err());
        let err = validate(&vars(&[("a", "${b}".into())]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("refers to another variable"), "{err}");
    }

    #[test]
    fn patterns_are_compiled_after_substitution() {
        let p: Predicate = toml::Value::try_from(toml::toml! { exists = "${g}" })
            .unwrap()
            .try_into()
            .unwrap();
        let err = instantiate(&p, &vars(&[("g", "[".into())]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid glob"), "{err}");
    }

    /// The one `${name}` scanner behind a predicate's strings and a description's prose: a
    /// list variable joins in prose and is refused inside a predicate's string; an undefined
    /// or unterminated reference is an error in both.
    #[test]
    fn strings_and_prose_substitute_alike_but_for_lists() {
        let vars: Vars = [
            ("s".to_string(), toml::Value::String("x".into())),
            (
                "l".to_string(),
                toml::Value::Array(vec!["a".into(), "b".into()]),
            ),
        ]
        .into();
        assert_eq!(interpolate("p-${s}-q", &vars).unwrap(), "p-x-q");
        assert_eq!(prose("p-${s}-q", &vars).unwrap(), "p-x-q");
        assert_eq!(prose("globs: ${l}.", &vars).unwrap(), "globs: a, b.");
        assert_eq!(
            interpolate("globs: ${l}", &vars).unwrap_err(),
            VarError::ListInText { name: "l".into() }
        );
        for bad in ["${nope}", "x ${s"] {
            assert!(interpolate(bad, &vars).is_err(), "{bad}");
            assert!(prose(bad, &vars).is_err(), "{bad}");
        }
    }
}
