//! Sizes as a person types them on the command line: `64MiB`, `512KiB`, `1.5GiB`, `10MB`,
//! `64 MiB`, or plain bytes (`67108864`); and back to text.
//!
//! The grammar is `bytesize`'s (units in any case; `KiB`/`Ki` are powers of two, `KB`/`K`
//! powers of ten), with the referee's checks on top: a negative size and a size past
//! `u64::MAX` bytes are refused rather than saturated, and every error names the text and
//! shows what would be accepted. The bounds of a particular option belong to its caller.

use bytesize::ByteSize;

/// What an accepted size looks like, for error messages.
const EXAMPLES: &str = "e.g. `64MiB`, `512KiB`, `1.5GiB`, `10MB`, or bytes: `1048576`";

/// The binary units, largest first, for [`human`].
const BINARY: &[(&str, u64)] = &[
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
];

/// Why a size was refused. Each message names the text (`text`: as given) and says what would
/// be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("empty size ({EXAMPLES})")]
    Empty,
    #[error("size `{text}` is negative ({EXAMPLES})")]
    Negative { text: String },
    #[error("invalid size `{text}`: a number must come first ({EXAMPLES})")]
    NumberFirst { text: String },
    #[error("size `{text}` is a fraction of a byte: give a unit ({EXAMPLES})")]
    Fraction { text: String },
    /// Past `u64::MAX` bytes: refused rather than saturated.
    #[error("size `{text}` is too large (at most 16EiB)")]
    TooLarge { text: String },
    #[error("invalid number `{number}` in size `{text}` ({EXAMPLES})")]
    Number { text: String, number: String },
    #[error("unknown unit `{unit}` in size `{text}` (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")]
    UnknownUnit { text: String, unit: String },
    /// What `bytesize` refused for another reason (its error is a message).
    #[error("invalid size `{text}`: {why} ({EXAMPLES})")]
    Invalid { text: String, why: String },
}

/// Parses `64MiB`, `512KiB`, `1.5GiB`, `10MB`, `64 MiB`, or plain bytes (`67108864`).
pub fn parse(s: &str) -> Result<u64, SizeError> {
    let text = || s.to_string();
    let t = s.trim();
    if t.is_empty() {
        return Err(SizeError::Empty);
    }
    if t.starts_with('-') {
        return Err(SizeError::Negative { text: text() });
    }
    if let Ok(bytes) = t.parse::<u64>() {
        return Ok(bytes);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit = unit.trim_start();
    if number.is_empty() {
        return Err(SizeError::NumberFirst { text: text() });
    }
    if unit.is_empty() {
        // All digits (and dots), yet not a u64.
        return Err(if number.contains('.') {
            SizeError::Fraction { text: text() }
        } else {
            SizeError::TooLarge { text: text() }
        });
    }
    let Ok(value) = number.parse::<f64>() else {
        return Err(SizeError::Number {
            text: text(),
            number: number.to_string(),
        });
    };
    // The unit alone, as bytesize reads it: `1KiB` is the factor.
    let Ok(factor) = format!("1{unit}").parse::<ByteSize>().map(|f| f.as_u64()) else {
        return Err(SizeError::UnknownUnit {
            text: text(),
            unit: unit.to_string(),
        });
    };
    // bytesize saturates at u64::MAX; a size that large is a mistake, not a limit.
    let too_large = match number.parse::<u64>() {
        Ok(n) => n.checked_mul(factor).is_none(),
        Err(_) if number.contains('.') => value * factor as f64 >= u64::MAX as f64,
        Err(_) => true,
    };
    if too_large {
        return Err(SizeError::TooLarge { text: text() });
    }
    t.parse::<ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|why| SizeError::Invalid { text: text(), why })
}

/// `64MiB`, `512KiB`, `1000B`: the largest binary unit that states `bytes` exactly (what
/// [`parse`] reads back).
pub fn human(bytes: u64) -> String {
    for (unit, factor) in BINARY {
        if bytes >= *factor && bytes.is_multiple_of(*factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let ok = |s: &str| parse(s).unwrap_or_else(|e| panic!("`{s}`: {e}"));
        assert_eq!(ok("64MiB"), 64 << 20);
        assert_eq!(ok("64 MiB"), 64 << 20);
        assert_eq!(ok("64mib"), 64 << 20);
        assert_eq!(ok("64Mi"), 64 << 20);
        assert_eq!(ok("512KiB"), 512 << 10);
        assert_eq!(ok("1.5GiB"), 3 << 29);
        assert_eq!(ok("10MB"), 10_000_000);
        assert_eq!(ok("1k"), 1000);
        assert_eq!(ok("100B"), 100);
        assert_eq!(ok("0"), 0);
        // Plain numbers are bytes, as before units were accepted.
        assert_eq!(ok("67108864"), 64 << 20);
        assert_eq!(ok(" 1024\n"), 1024);
        assert_eq!(ok("18446744073709551615"), u64::MAX);
    }

    #[test]
    fn refused_forms_say_why() {
        assert_eq!(
            parse("64 furlongs"),
            Err(SizeError::UnknownUnit {
                text: "64 furlongs".into(),
                unit: "furlongs".into()
            })
        );
        let err = |s: &str| match parse(s) {
            Ok(b) => panic!("`{s}` parsed as {b}"),
            Err(e) => e.to_string(),
        };
        assert!(err("").starts_with("empty size (e.g. `64MiB`"));
        assert!(err("-1").contains("`-1` is negative"), "{}", err("-1"));
        assert!(err("-1MiB").contains("is negative"));
        assert_eq!(
            err("64XB"),
            "unknown unit `XB` in size `64XB` (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
        );
        assert!(err("64 furlongs").contains("unknown unit `furlongs`"));
        assert!(
            err("MiB").contains("a number must come first"),
            "{}",
            err("MiB")
        );
        assert!(
            err("1.2.3MiB").contains("invalid number `1.2.3`"),
            "{}",
            err("1.2.3MiB")
        );
        assert!(err("16EiB").contains("too large"), "{}", err("16EiB"));
        assert!(err("99999999999GiB").contains("too large"));
        assert!(err("18446744073709551616").contains("too large"));
        assert!(err("1.5").contains("fraction of a byte"), "{}", err("1.5"));
        for s in ["", "MiB", "-1", "1.2.3MiB"] {
            assert!(err(s).contains("e.g. `64MiB`"), "{s}: {}", err(s));
        }
    }

    #[test]
    fn human_names_one_exact_unit_and_reads_back() {
        assert_eq!(human(64 << 20), "64MiB");
        assert_eq!(human(512 << 10), "512KiB");
        assert_eq!(human(3 << 29), "1536MiB");
        assert_eq!(human(1000), "1000B");
        assert_eq!(human(0), "0B");
        for b in [0, 1, 1023, 1024, 1536, 64 << 20, 5 << 40, u64::MAX] {
            assert_eq!(parse(&human(b)), Ok(b), "{}", human(b));
        }
    }
}
