//! Errors as one line of text, for the few places that must write an error down (a `status`
//! answer, a line the demo narrates, an MCP tool's refusal) instead of handing it to `anyhow`,
//! whose `{:#}` prints the chain itself. This only reads errors.
//!
//! The library's errors are `thiserror` enums, one per module or concept: a variant about a
//! file carries its `PathBuf`, an io (or parse) failure is its `#[source]` and is not repeated
//! in the variant's own message, and the message names the value in backticks with what to do
//! (`fsevents::WatchError`, `protocol::overrides::OverrideError`, `replay::StepError`). A
//! validation reason that only ever becomes the text of a located protocol or timeline error
//! (`line:column: …`) stays in the message itself.

use std::error::Error;

/// An error and its causes, `outer: cause: cause`; the causes lowercased (io errors start with a
/// capital: `No such file or directory`).
pub(crate) fn chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string().to_lowercase());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read `{}`", path.display())]
    struct Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn the_cause_follows_the_error() {
        let e = Read {
            path: "x.md".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(chain(&e), "cannot read `x.md`: entity not found");
        assert_eq!(
            chain(&std::io::Error::other("Plain")),
            "Plain",
            "an error without a cause is left as it is"
        );
    }
}
