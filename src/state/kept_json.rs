//! A record the referee keeps as JSON in its state directory, read back: a regular file of a
//! sane size, parsed, and carrying the referee's schema. One reader for every such record (what
//! the referee saw of a build, an earlier run's leftovers); each names its own errors.

use std::io::{self, Read};
use std::path::Path;

use serde::de::DeserializeOwned;

/// Why a kept record cannot be read back.
#[derive(Debug)]
pub enum Unread {
    /// The file system would not give it.
    Io(io::Error),
    /// It is not the referee's record, and why.
    Invalid(String),
}

/// A record that says which schema it was written in.
pub trait Schema {
    fn schema(&self) -> &str;
}

/// The record at `path` (`Ok(None)` when there is no such file): a regular file of at most
/// `max` bytes, read through one descriptor, whose JSON parses as `T` of schema `schema`.
pub fn read<T: DeserializeOwned + Schema>(
    path: &Path,
    max: u64,
    schema: &str,
) -> Result<Option<T>, Unread> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unread::Io(e)),
    };
    let meta = file.metadata().map_err(Unread::Io)?;
    if !meta.is_file() || meta.len() > max {
        return Err(Unread::Invalid("not a regular file of a sane size".into()));
    }
    let mut text = String::new();
    file.take(max)
        .read_to_string(&mut text)
        .map_err(Unread::Io)?;
    let record: T = serde_json::from_str(&text).map_err(|e| Unread::Invalid(e.to_string()))?;
    if record.schema() != schema {
        return Err(Unread::Invalid(format!("schema `{}`", record.schema())));
    }
    Ok(Some(record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct R {
        schema: String,
    }
    impl Schema for R {
        fn schema(&self) -> &str {
            &self.schema
        }
    }

    #[test]
    fn absent_is_none_and_anything_else_is_said() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        assert!(matches!(read::<R>(&p, 100, "s/1"), Ok(None)));
        std::fs::write(&p, r#"{"schema":"s/1"}"#).unwrap();
        assert!(matches!(read::<R>(&p, 100, "s/1"), Ok(Some(_))));
        assert!(
            matches!(read::<R>(&p, 100, "s/2"), Err(Unread::Invalid(w)) if w == "schema `s/1`")
        );
        assert!(matches!(read::<R>(&p, 5, "s/1"), Err(Unread::Invalid(_))));
        std::fs::write(&p, "{").unwrap();
        assert!(matches!(read::<R>(&p, 100, "s/1"), Err(Unread::Invalid(_))));
        assert!(matches!(
            read::<R>(d.path(), 100, "s/1"),
            Err(Unread::Invalid(_))
        ));
    }
}
