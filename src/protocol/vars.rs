//! `${var}` substitution: how one check definition becomes an instance per variant (the
//! D10 REFINE repeats are the pass-2/3/4 checks with the `refine` variables). Works on the
//! serialized form of a predicate (a JSON tree: cheaper to build and read back than a TOML
//! one) so every predicate type gets it for free; it never judges anything.

use std::collections::BTreeMap;

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value as Json;

/// The variables of one variant: each a string or an array of strings.
pub type Vars = BTreeMap<String, toml::Value>;

/// Substitutes every `${name}` in `value` and parses the result back, compiling its
/// patterns. A string that is exactly `${name}` takes the variable's value as is; a list
/// variable standing alone as a list element is spliced into that list
/// (`fields = ["${phase_chain}"]`); elsewhere the variable must be a string.
pub fn instantiate<T: Serialize + DeserializeOwned + Clone>(
    value: &T,
    vars: &Vars,
) -> Result<T, String> {
    let mut tree = serde_json::to_value(value).map_err(|e| e.to_string())?;
    if !mentions_var(&tree) {
        // Nothing to substitute: the parsed value is already valid and compiled as is.
        return Ok(value.clone());
    }
    substitute(&mut tree, vars)?;
    serde_json::from_value::<T>(tree).map_err(|e| e.to_string())
}

fn mentions_var(value: &Json) -> bool {
    match value {
        Json::String(s) => s.contains("${"),
        Json::Array(items) => items.iter().any(mentions_var),
        Json::Object(t) => t.values().any(mentions_var),
        _ => false,
    }
}

fn substitute(value: &mut Json, vars: &Vars) -> Result<(), String> {
    match value {
        Json::String(s) => {
            if let Some(new) = substitute_str(s, vars)? {
                *value = new;
            }
        }
        Json::Array(items) => {
            // A list variable standing alone as an element is spliced into the list.
            let mut out = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                substitute(&mut item, vars)?;
                match item {
                    Json::Array(inner) if inner.iter().all(Json::is_string) => out.extend(inner),
                    other => out.push(other),
                }
            }
            *items = out;
        }
        Json::Object(table) => {
            for (_, item) in table.iter_mut() {
                substitute(item, vars)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn substitute_str(s: &str, vars: &Vars) -> Result<Option<Json>, String> {
    if !s.contains("${") {
        return Ok(None);
    }
    if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
        if !name.contains(['$', '{', '}']) {
            return lookup(name, vars).map(|v| Some(to_json(v)));
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unterminated variable reference in `{s}`"))?;
        let name = &after[..end];
        match lookup(name, vars)? {
            toml::Value::String(v) => out.push_str(v),
            _ => {
                return Err(format!(
                    "variable `${{{name}}}` is a list and must stand alone in its string"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Some(Json::String(out)))
}

/// A variable's value (validated: a string or an array of strings) as JSON.
fn to_json(v: &toml::Value) -> Json {
    match v {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        other => Json::String(other.to_string()),
    }
}

fn lookup<'v>(name: &str, vars: &'v Vars) -> Result<&'v toml::Value, String> {
    vars.get(name)
        .ok_or_else(|| format!("undefined variable `${{{name}}}`"))
}

/// Checks that every variable is a string or an array of strings.
pub fn validate(vars: &Vars) -> Result<(), String> {
    for (name, value) in vars {
        let ok = match value {
            toml::Value::String(_) => true,
            toml::Value::Array(items) => items.iter().all(|i| i.is_str()),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "variable `{name}` must be a string or an array of strings"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::predicate::Predicate;

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
        let p = Predicate::Filled(crate::protocol::predicate::OneOrMany::One(
            "P3A_START${sfx}".into(),
        ));
        let err = instantiate(&p, &Vars::new()).unwrap_err();
        assert!(err.contains("undefined variable `${sfx}`"), "{err}");
        let ok = instantiate(&p, &vars(&[("sfx", "_REFINE".into())])).unwrap();
        assert!(format!("{ok:?}").contains("P3A_START_REFINE"));
    }

    #[test]
    fn patterns_are_compiled_after_substitution() {
        let p: Predicate = toml::Value::try_from(toml::toml! { exists = "${g}" })
            .unwrap()
            .try_into()
            .unwrap();
        let err = instantiate(&p, &vars(&[("g", "[".into())])).unwrap_err();
        assert!(err.contains("invalid glob"), "{err}");
    }
}
