//! The predicate language: the generic building blocks a protocol composes into checks,
//! triggers and deadlines. This module only *describes* predicates; judging them against a
//! build directory is `checks`' job.
//!
//! Every string may contain `${var}` references, resolved per variant at load time by
//! `protocol::vars`. Globs and patterns are validated as soon as they hold no reference (so a
//! bad one is reported at its own line and column) and compiled on first use (`glob`,
//! `pattern`).
//!
//! The [`Predicate`] enum is here; its variants' bodies are in `build_dir` (predicates over a
//! directory of artifacts) and `workspace` (a task record's predicates against the baseline).

use std::fmt;

use serde::{Deserialize, Serialize};

mod build_dir;
#[cfg(test)]
mod tests;
mod workspace;

pub use super::glob::Glob;
pub use super::pattern::Pattern;
pub use build_dir::*;
pub use workspace::*;

/// One value or a list of them (`exists = "a"` or `exists = ["a", "b"]`).
#[derive(Debug, Clone)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Serialize> Serialize for OneOrMany<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            OneOrMany::One(t) => t.serialize(s),
            OneOrMany::Many(v) => v.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IntoDeserializer};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                T::deserialize(s.to_string().into_deserializer()).map(OneOrMany::One)
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                T::deserialize(s.into_deserializer()).map(OneOrMany::One)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(OneOrMany::Many)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<T> OneOrMany<T> {
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(t) => std::slice::from_ref(t),
            OneOrMany::Many(v) => v,
        }
    }
}

/// A predicate: judged to PASS, FAIL, *missing* (not there yet) or *inconclusive*.
///
/// Used as a condition (trigger, deadline, `when`, `if`) it holds exactly when it PASSes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Predicate {
    /// Every part must pass. The worst part decides: FAIL, then missing, then inconclusive.
    All(Vec<Predicate>),
    /// At least one part must pass; otherwise the mildest part decides.
    Any(Vec<Predicate>),
    /// Passes when the inner predicate does not pass (for conditions).
    Not(Box<Predicate>),
    /// `{ cond, then, else }`: `then` when `cond` passes, else `else` (default: pass).
    If(Box<IfThen>),
    /// Something missing inside counts as FAIL at once ("present and wrong").
    FailIfMissing(Box<Predicate>),
    /// `true` always passes; `false` never does.
    Always(bool),
    /// The pipeline is complete (its latest verdict is a completing one).
    Complete(bool),
    /// A verdict of the run is one of these (`is`), or the verdict in `files` can be read.
    Verdict(VerdictIs),
    /// Every glob matches at least one file or directory.
    Exists(OneOrMany<Glob>),
    /// The number of regular files matching `glob` is within bounds.
    Count(Count),
    /// Files matching `glob` carry exactly the expected keys, each once.
    FileSet(FileSet),
    /// Every listed tracker field is present and non-empty.
    Filled(OneOrMany<String>),
    /// Every field row of a tracker section is non-empty.
    SectionFilled(Section),
    /// Tracker field values match a pattern (any or all of them).
    FieldMatches(FieldMatches),
    /// Every filled cell of a tracker table column matches a pattern.
    Column(ColumnMatches),
    /// A time reference resolves to at least one recorded time.
    HasTime(TimeRef),
    /// Times are in order, optionally with a minimum gap.
    TimeOrder(TimeOrder),
    /// Tracker field values are pairwise different.
    Distinct(Vec<String>),
    /// Two files are not near-identical: FAIL when the similarity ratio of their words (as read,
    /// however wrapped) is `>= threshold`.
    Dissimilar(Dissimilar),
    /// Text content rules over files and/or tracker fields.
    Text(Text),
    /// Every matching file has a heading (optionally as its last heading of that level).
    Heading(Heading),
    /// A value in every JSON file matching `file`, found by a JSON pointer, compared
    /// (`json = { file = "results.json", path = "/score", ">=" = 0.8 }`).
    Json(Json),
    /// The tracker's fill rate (non-empty field rows / all field rows) is at least `min`.
    FillRate(FillRate),
    /// Gate results contain an entry (with an optional required result).
    Gate(Gate),
    /// At least `min_files` gate-results files exist and every one parses.
    GateFiles(GateFiles),
    /// At least `min` gate entries exist across all gate-results files.
    GateCount(GateCount),
    /// No gate entry has a forbidden source.
    GateSources(GateSources),
    /// Every path listed in a tracker table column exists.
    PathsListed(PathsListed),
    // ---- workspace predicates: judged in a pass instance of one task record (`for_each`) ----
    /// The pass's task record parses and has the protocol's required fields.
    TaskRecord(bool),
    /// No path matching the globs is added, modified or removed against the baseline.
    Unchanged(Unchanged),
    /// Every change in the task's scope is listed in its record, and every listed change
    /// happened (as listed).
    ChangesListed(bool),
    /// The record's `pre_hashes` match the baseline and its `post_hashes` the files now.
    HashesMatch(bool),
    /// No file removed unless listed in `removed`, and no changed file emptied.
    NoLoss(bool),
    /// Every added or modified file in the task's scope parses: `parses = true`, or
    /// `parses = { commands = [...] }` to add command rules (CC-05, `crate::syntax`). With
    /// `files`, every file matching those globs parses, in any protocol.
    Parses(Parses),
    /// Every added or modified file in the task's scope is within its size limit.
    SizeLimit(SizeLimit),
    /// No added line matches a forbidden pattern.
    AddedLines(AddedLines),
    /// A task record field matches a pattern.
    RecordField(RecordField),
    /// Changed text files end with a newline and add no trailing whitespace.
    Style(Style),
    /// No test removed or skipped, no assertion removed, no coverage, lint, type-check or CI
    /// gate relaxed against the baseline, unless the record gives a reason for the path
    /// (`weakened = true`; judged in `checks::weakened`).
    Weakened(bool),
}

impl Predicate {
    /// Calls `f` on this predicate and on every predicate inside it (those of `all`, `any`,
    /// `not`, `fail_if_missing`, `if`).
    pub fn each(&self, f: &mut dyn FnMut(&Predicate)) {
        use Predicate as P;
        f(self);
        match self {
            P::All(v) | P::Any(v) => v.iter().for_each(|p| p.each(f)),
            P::Not(inner) | P::FailIfMissing(inner) => inner.each(f),
            P::If(i) => {
                i.cond.each(f);
                i.then.each(f);
                if let Some(o) = &i.otherwise {
                    o.each(f);
                }
            }
            _ => {}
        }
    }
}

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

/// An option that chooses between two named behaviours, written in a protocol as `false` (the
/// first, the default) or `true` (the second): the enum gives the code each behaviour's name,
/// the protocol file keeps its `true`/`false` (anything else is the same load error as for any
/// boolean).
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(#[$off_meta:meta])* $off:ident = false,
            $(#[$on_meta:meta])* $on:ident = true $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
        #[serde(from = "bool", into = "bool")]
        pub enum $name {
            $(#[$off_meta])*
            #[default]
            $off,
            $(#[$on_meta])*
            $on,
        }

        impl From<bool> for $name {
            fn from(b: bool) -> Self {
                if b {
                    $name::$on
                } else {
                    $name::$off
                }
            }
        }

        impl From<$name> for bool {
            fn from(c: $name) -> bool {
                c == $name::$on
            }
        }
    };
}
use choice;
