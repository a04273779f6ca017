//! JSON, TOML and YAML, parsed natively. Each parser only validates (no value is kept). JSON is
//! skipped over as `IgnoredAny`, which `serde_json` does with an explicit stack: any depth is
//! checked, without recursion. TOML and YAML stop at their parsers' own nesting limits (an error).

use serde::de::IgnoredAny;

use super::{offset_of, position, utf8, Outcome};

const JSON: &str = "JSON (serde_json)";
const TOML: &str = "TOML (toml)";
const YAML: &str = "YAML (saphyr-parser)";

pub(super) fn json(bytes: &[u8]) -> Outcome {
    let text = match utf8(bytes, JSON) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    match serde_json::from_str::<IgnoredAny>(text) {
        Ok(_) => Outcome::Parsed { how: JSON.into() },
        Err(e) => {
            let bytes = text.as_bytes();
            // An unexpected end is reported at the end, not at the last character read.
            let at = if e.classify() == serde_json::error::Category::Eof {
                bytes.len()
            } else {
                offset_of(bytes, e.line(), e.column())
            };
            let (line, column) = position(bytes, at);
            // serde_json's message ends with its own " at line L column C" (bytes): drop it.
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m)
                .to_owned();
            Outcome::Invalid {
                line,
                column,
                message,
                how: JSON.into(),
            }
        }
    }
}

pub(super) fn toml(bytes: &[u8]) -> Outcome {
    let text = match utf8(bytes, TOML) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    match toml::from_str::<toml::Table>(text) {
        Ok(_) => Outcome::Parsed { how: TOML.into() },
        Err(e) => {
            let (line, column) = e
                .span()
                .map_or((0, 0), |span| position(text.as_bytes(), span.start));
            Outcome::Invalid {
                line,
                column,
                message: e.message().trim_end().to_owned(),
                how: TOML.into(),
            }
        }
    }
}

pub(super) fn yaml(bytes: &[u8]) -> Outcome {
    let text = match utf8(bytes, YAML) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    for event in saphyr_parser::Parser::new_from_str(text) {
        if let Err(e) = event {
            let mark = e.marker();
            return Outcome::Invalid {
                line: mark.line(),
                column: mark.col() + 1,
                message: e.info().to_owned(),
                how: YAML.into(),
            };
        }
    }
    Outcome::Parsed { how: YAML.into() }
}
