//! The crate's modules depend on each other in one direction (issue 19): no import cycle
//! between the top-level modules of `src/`, nor between sibling modules inside one. A module's
//! edges to its own ancestors and descendants (a parent re-exporting a child, a child using
//! its parent's types) are how Rust modules are built and are not counted.
//!
//! The graph is read from the source: every `crate::a::b` path and every `use crate::{…}`
//! group, and `super::` paths resolved against the file's module, outside `#[cfg(test)]`
//! modules. A failure names the modules of each cycle and one reference per edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every module of `src/` by its path (`workspace::tree`), with its file.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            if parts == ["lib"] || parts == ["main"] {
                continue;
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The source without comments, string contents and `#[cfg(test)]` modules (roughly: enough
/// that a path in a doc comment or a test does not count).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `code` refers to, as written (`crate::a::b`, `super::x`, and each leaf of
/// a `use crate::{a, b::{c}}` group), resolved to absolute paths from `module`.
fn references(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !code.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let start_ok = i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == b':');
        let (base, skip) = if start_ok && code[i..].starts_with("crate::") {
            (Vec::new(), "crate::".len())
        } else if start_ok && code[i..].starts_with("super::") {
            // `super::super::x` from `a::b::c` (a file module) is `a::x`.
            let mut base = module.to_vec();
            let mut j = i;
            while code[j..].starts_with("super::") {
                base.pop();
                j += "super::".len();
            }
            (base, j - i)
        } else {
            i += 1;
            continue;
        };
        i += skip;
        let tail = take_path(&code[i..]);
        for mut leaf in expand(&tail) {
            // `use crate::a::{self, b}`: `self` is `a`.
            if leaf.last().is_some_and(|l| l == "self") {
                leaf.pop();
            }
            let mut full = base.clone();
            full.extend(leaf);
            out.push(full);
        }
        i += tail.len().max(1);
    }
    out
}

/// The path text at the start of `s`: identifiers, `::`, and one brace group (nested).
fn take_path(s: &str) -> String {
    let mut depth = 0usize;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            '}' => break,
            c if c.is_alphanumeric() || c == '_' || c == ':' => {}
            c if depth > 0 && (c == ',' || c.is_whitespace() || c == '*') => {}
            _ if depth > 0 => {}
            _ => break,
        }
        end = i + c.len_utf8();
        if depth == 0 && c == '}' {
            break;
        }
    }
    s[..end].to_string()
}

/// `a::{b, c::{d, e}}` as `[a, b]`, `[a, c, d]`, `[a, c, e]`.
fn expand(path: &str) -> Vec<Vec<String>> {
    let path = path.trim();
    match path.find('{') {
        None => vec![path
            .split("::")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect()],
        Some(open) => {
            let prefix: Vec<String> = path[..open]
                .split("::")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect();
            let inner = path[open + 1..].trim_end_matches('}');
            let mut out = Vec::new();
            let mut depth = 0;
            let mut part = String::new();
            for c in inner.chars().chain(std::iter::once(',')) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        for mut leaf in expand(&part) {
                            let mut full = prefix.clone();
                            full.append(&mut leaf);
                            out.push(full);
                        }
                        part.clear();
                        continue;
                    }
                    _ => {}
                }
                part.push(c);
            }
            out
        }
    }
}

/// The module a path names: its longest prefix that is a module.
fn module_of<'m>(
    path: &[String],
    mods: &'m BTreeMap<Vec<String>, PathBuf>,
) -> Option<&'m Vec<String>> {
    (1..=path.len())
        .rev()
        .find_map(|k| mods.get_key_value(&path[..k]).map(|(k, _)| k))
}

/// The strongly connected components of more than one node (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'e> {
        edges: &'e BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T<'_>, v: &str) {
        let n = t.index.len();
        t.index.insert(v.into(), n);
        t.low.insert(v.into(), n);
        t.stack.push(v.into());
        t.on.insert(v.into());
        for w in t.edges.get(v).into_iter().flatten() {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(&w);
                let done = w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: Vec<String> = edges.keys().cloned().collect();
    for v in nodes {
        if !t.index.contains_key(&v) {
            visit(&mut t, &v);
        }
    }
    t.out
}

/// A graph: each module's modules, and one reference per edge (to show).
type Graph = (
    BTreeMap<String, BTreeSet<String>>,
    BTreeMap<(String, String), String>,
);

/// The graphs the rule is about: between top-level modules, and between siblings.
fn graphs(src: &Path) -> BTreeMap<String, Graph> {
    let mods = modules(src);
    let mut out: BTreeMap<String, Graph> = BTreeMap::new();
    for (module, file) in &mods {
        let text = fs::read_to_string(file).expect("read a module");
        for reference in references(module, &code_of(&text)) {
            let Some(target) = module_of(&reference, &mods) else {
                continue;
            };
            // The first place the two paths part: the graph of their common parent.
            let common = module
                .iter()
                .zip(target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue; // an ancestor or a descendant
            }
            let scope = match common {
                0 => "crate".to_string(),
                _ => module[..common].join("::"),
            };
            let (from, to) = (module[common].clone(), target[common].clone());
            let (edges, why) = out.entry(scope).or_default();
            edges.entry(to.clone()).or_default();
            edges.entry(from.clone()).or_default().insert(to.clone());
            why.entry((from, to)).or_insert_with(|| {
                format!(
                    "{} uses crate::{}",
                    file.strip_prefix(src).unwrap_or(file).display(),
                    reference.join("::")
                )
            });
        }
    }
    out
}

#[test]
fn modules_depend_in_one_direction() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (scope, (edges, why)) in graphs(&src) {
        for comp in cycles(&edges) {
            let mut text = format!("a cycle in `{scope}`: {}\n", comp.join(", "));
            for a in &comp {
                for b in edges[a].iter().filter(|b| comp.contains(b)) {
                    text.push_str(&format!("  {a} -> {b}: {}\n", why[&(a.clone(), b.clone())]));
                }
            }
            found.push(text);
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_reader_sees_uses_groups_and_super() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let refs = references(
        &m("daemon::event"),
        "use crate::{engine::{Evaluation, Options}, outputs};\nlet x = super::events::Scope::A;\nfn f() -> crate::verdict::TaskVerdict {}",
    );
    assert!(refs.contains(&m("engine::Evaluation")), "{refs:?}");
    assert!(refs.contains(&m("engine::Options")), "{refs:?}");
    assert!(refs.contains(&m("outputs")), "{refs:?}");
    assert!(refs.contains(&m("daemon::events::Scope::A")), "{refs:?}");
    assert!(refs.contains(&m("verdict::TaskVerdict")), "{refs:?}");
    // Found as a cycle: a -> b -> a, not c.
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("a".into());
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycles(&edges), vec![vec!["a".to_string(), "b".to_string()]]);
}

/// The modules a top-level module reaches through the crate-level graph, itself included.
fn reach(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(m) = todo.pop() {
        if seen.insert(m.clone()) {
            todo.extend(edges.get(&m).into_iter().flatten().cloned());
        }
    }
    seen
}

/// The one-shot path (`verify`, `status`, the agents' hooks, MCP) and the referee's state stand
/// below the daemon: asking whether a live referee is here, or judging once, never goes through
/// `daemon`, not even by way of another module.
#[test]
fn the_one_shot_path_and_the_state_never_reach_the_daemon() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graphs = graphs(&src);
    let (edges, why) = &graphs["crate"];
    for from in ["judge", "status", "hook", "mcp", "state"] {
        let reached = reach(edges, from);
        assert!(
            !reached.contains("daemon"),
            "`{from}` reaches `daemon` through {:?}: {:?}",
            reached,
            why.iter()
                .filter(|((a, b), _)| reached.contains(a) && b == "daemon")
                .collect::<Vec<_>>()
        );
    }
    let verify = fs::read_to_string(src.join("cli/verify.rs")).expect("read cli/verify.rs");
    let module = ["cli".to_string(), "verify".to_string()];
    assert!(
        references(&module, &code_of(&verify))
            .iter()
            .all(|r| r.first().is_none_or(|m| m != "daemon")),
        "`cli/verify.rs` uses the daemon"
    );
}
