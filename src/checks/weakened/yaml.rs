//! A YAML document as a tree, built from saphyr-parser's events (the parser CC-05 uses), with
//! the line each node starts on: what the CI and lint-configuration rules compare. Aliases are
//! resolved to a copy of their anchor's node, within a bound on the nodes made, so a document
//! of nested aliases cannot make the tree explode.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// The most nodes one stream may make, aliases expanded.
const MAX_NODES: usize = 200_000;

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Scalar {
        value: String,
        plain: bool,
        line: usize,
    },
    Seq {
        items: Vec<Node>,
        line: usize,
    },
    Map {
        entries: Vec<(Node, Node)>,
        line: usize,
    },
}

impl Node {
    pub fn line(&self) -> usize {
        match self {
            Node::Scalar { line, .. } | Node::Seq { line, .. } | Node::Map { line, .. } => *line,
        }
    }

    /// The scalar's text.
    pub fn str(&self) -> Option<&str> {
        match self {
            Node::Scalar { value, .. } => Some(value),
            _ => None,
        }
    }

    /// A plain scalar that YAML reads as `true` (`true`, `True`, `TRUE`).
    pub fn is_true(&self) -> bool {
        matches!(self, Node::Scalar { value, plain: true, .. } if matches!(value.as_str(), "true" | "True" | "TRUE"))
    }

    /// A plain scalar read as `false`, or a GitHub expression that is literally false.
    pub fn is_false(&self) -> bool {
        match self {
            Node::Scalar { value, plain, .. } => {
                let v = value.trim();
                (*plain && matches!(v, "false" | "False" | "FALSE"))
                    || v.replace(' ', "") == "${{false}}"
            }
            _ => false,
        }
    }

    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The key node and value of `key` in a mapping.
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        match self {
            Node::Map { entries, .. } => entries
                .iter()
                .find(|(k, _)| k.str() == Some(key))
                .map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// A mapping's entries whose keys are scalars.
    pub fn pairs(&self) -> Vec<(&str, &Node)> {
        match self {
            Node::Map { entries, .. } => entries
                .iter()
                .filter_map(|(k, v)| Some((k.str()?, v)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A mapping's entries whose keys are scalars, with the key's line.
    pub fn keyed(&self) -> Vec<(&str, usize, &Node)> {
        match self {
            Node::Map { entries, .. } => entries
                .iter()
                .filter_map(|(k, v)| Some((k.str()?, k.line(), v)))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn items(&self) -> &[Node] {
        match self {
            Node::Seq { items, .. } => items,
            _ => &[],
        }
    }

    /// Every node of the tree, this one first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Node)) {
        f(self);
        match self {
            Node::Scalar { .. } => {}
            Node::Seq { items, .. } => items.iter().for_each(|n| n.walk(f)),
            Node::Map { entries, .. } => entries.iter().for_each(|(k, v)| {
                k.walk(f);
                v.walk(f);
            }),
        }
    }
}

enum Open {
    Seq(Vec<Node>, usize, usize),
    Map(Vec<(Node, Node)>, Option<Node>, usize, usize),
}

/// Why a YAML stream was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The parser's message, at its line.
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    /// More nodes than are read (aliases expanded: a billion laughs).
    #[error("more than {MAX_NODES} nodes (aliases expanded)")]
    TooLarge,
}

/// The documents of a YAML stream.
pub fn parse(text: &str) -> Result<Vec<Node>, YamlError> {
    let mut docs = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    // Each anchored node with its size, so an alias is refused before it is copied.
    let mut anchors: HashMap<usize, (Node, usize)> = HashMap::new();
    let anchor = |anchors: &mut HashMap<usize, (Node, usize)>, id: usize, n: &Node| {
        if id > 0 {
            let mut size = 0;
            n.walk(&mut |_| size += 1);
            anchors.insert(id, (n.clone(), size));
        }
    };
    let mut made = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| YamlError::Syntax {
            line: e.marker().line(),
            message: e.info().to_string(),
        })?;
        let line = span.start.line();
        let done = match event {
            Event::Scalar(value, style, id, _) => {
                let n = Node::Scalar {
                    value: value.into_owned(),
                    plain: matches!(style, saphyr_parser::ScalarStyle::Plain),
                    line,
                };
                anchor(&mut anchors, id, &n);
                Some(n)
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some((n, size)) => {
                    made += size;
                    if made > MAX_NODES {
                        return Err(YamlError::TooLarge);
                    }
                    Some(n.clone())
                }
                None => Some(Node::Scalar {
                    value: String::new(),
                    plain: true,
                    line,
                }),
            },
            Event::SequenceStart(id, _) => {
                stack.push(Open::Seq(Vec::new(), line, id));
                None
            }
            Event::MappingStart(id, _) => {
                stack.push(Open::Map(Vec::new(), None, line, id));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items, line, id)) => {
                    let n = Node::Seq { items, line };
                    anchor(&mut anchors, id, &n);
                    Some(n)
                }
                Some(Open::Map(entries, _, line, id)) => {
                    let n = Node::Map { entries, line };
                    anchor(&mut anchors, id, &n);
                    Some(n)
                }
                None => None,
            },
            _ => None,
        };
        made += 1;
        if made > MAX_NODES {
            return Err(YamlError::TooLarge);
        }
        let Some(node) = done else { continue };
        match stack.last_mut() {
            Some(Open::Seq(items, ..)) => items.push(node),
            Some(Open::Map(entries, key, ..)) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => *key = Some(node),
            },
            None => docs.push(node),
        }
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_with_lines_and_aliases() {
        let docs = parse("a: &x\n  - 1\n  - two\nb: *x\nc: true\nd: 'true'\n").unwrap();
        let d = &docs[0];
        assert_eq!(d.get("a").unwrap().items().len(), 2);
        assert_eq!(d.get("a").unwrap().items()[0].line(), 2);
        assert_eq!(d.get("b").unwrap().items()[1].str(), Some("two"));
        assert!(d.get("c").unwrap().is_true());
        assert!(
            !d.get("d").unwrap().is_true(),
            "a quoted string is no boolean"
        );
        assert!(parse("a: [").is_err());
        // A billion laughs is refused, not expanded.
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..8 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("l{}", i - 1)
            };
            bomb.push_str(&format!(
                "l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        assert_eq!(parse(&bomb).unwrap_err(), YamlError::TooLarge);
    }
}
