//! Errors as one line of text, for the few places that must write an error down (a `status`
//! answer, a line the demo narrates) instead of handing it to `anyhow`, whose `{:#}` prints the
//! chain itself. The library's errors keep their causes as `#[source]`s; this only reads them.

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
    #[error("cannot read `{path}`")]
    struct Read {
        path: String,
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
