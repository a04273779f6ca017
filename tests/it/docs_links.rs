//! The README and `docs/` hold together: every relative link in them names a file that exists
//! and, when it has a `#fragment` into a markdown file, a heading of that file (GitHub's anchor
//! for it); and the README stays a short read whose two set-up commands are the ones CI runs.

use std::collections::HashSet;
use std::fs;
use std::path::PathBuf;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `docs/*.md`.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.insert(0, repo().join("README.md"));
    docs
}

/// GitHub's anchor for a heading's text: lower case, letters, digits, `-` and `_` kept, spaces
/// made `-`, everything else dropped.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown file's headings; a repeated one gets `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut current: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => current = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = current.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(h) = current.take() {
                    let base = slug(&h);
                    let mut name = base.clone();
                    let mut n = 0;
                    while out.contains(&name) {
                        n += 1;
                        name = format!("{base}-{n}");
                    }
                    out.insert(name);
                }
            }
            _ => {}
        }
    }
    out
}

/// Every link and image destination of a markdown text.
fn destinations(text: &str) -> Vec<String> {
    Parser::new(text)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).expect("a document");
        for dest in destinations(&text) {
            if dest.contains("://") || dest.starts_with("mailto:") || dest.starts_with('/') {
                continue;
            }
            checked += 1;
            let (path, fragment) = match dest.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (dest.as_str(), None),
            };
            let target: PathBuf = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().expect("a folder").join(path)
            };
            let name = doc
                .strip_prefix(repo())
                .unwrap_or(&doc)
                .display()
                .to_string();
            if !target.exists() {
                broken.push(format!("{name}: `{dest}`: no such file"));
                continue;
            }
            if let Some(fragment) = fragment {
                if target.extension().is_some_and(|x| x == "md") {
                    let headings = fs::read_to_string(&target).expect("a linked document");
                    if !anchors(&headings).contains(fragment) {
                        broken.push(format!("{name}: `{dest}`: no such heading"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 50, "only {checked} relative links found");
}

#[test]
fn the_readme_is_short_and_its_commands_are_the_ones_ci_runs() {
    let readme = fs::read_to_string(repo().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: the detail goes to docs/"
    );
    let ci = fs::read_to_string(repo().join(".ci/run")).expect(".ci/run");
    let test_command = "cargo test --locked";
    assert!(readme.contains(&format!("\n{test_command} ")), "{readme}");
    assert!(
        ci.lines().any(|l| l.trim() == test_command),
        "the README's test command is not what .ci/run runs"
    );
    assert!(readme.contains("\ncargo run --release -- demo "));
    // Install comes before the detail: within the first hundred lines.
    let install = readme
        .lines()
        .position(|l| l == "## Install")
        .expect("an Install section");
    assert!(install < 100, "Install at line {}", install + 1);
    // The first section after the title is the newcomer's two commands.
    let first = readme.lines().find(|l| l.starts_with("## "));
    assert_eq!(first, Some("## Two commands"));
}

#[test]
fn anchors_are_githubs() {
    let a = anchors("# A (`x`, y)\n\n## Your project's rules (`--protect`)\n\n## A (x, y)\n");
    assert!(a.contains("a-x-y") && a.contains("a-x-y-1"), "{a:?}");
    assert!(a.contains("your-projects-rules---protect"), "{a:?}");
    assert_eq!(a.len(), 3, "{a:?}");
}
