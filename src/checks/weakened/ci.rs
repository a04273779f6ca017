//! CI configuration, read as YAML (GitHub Actions, GitLab CI, CircleCI, Azure Pipelines,
//! Travis, Buildkite, Drone, Woodpecker): a job or step removed, a failure let through
//! (`continue-on-error: true`, `allow_failure`, `soft_fail`, `|| true`), a job or step switched
//! off (`if: false`, `when: manual`), a trigger of a workflow removed.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

use super::code::{file_name, lines};
use super::yaml::{self, Node};
use super::{Finding, Kind, Pair};

/// Whether a path is a CI configuration file.
pub fn is_ci(path: &str) -> bool {
    let yml = path.ends_with(".yml") || path.ends_with(".yaml");
    let name = file_name(path);
    yml && (path.starts_with(".github/workflows/")
        || name == ".gitlab-ci.yml"
        || name.ends_with(".gitlab-ci.yml")
        || path.starts_with(".gitlab/ci/")
        || path.starts_with(".circleci/")
        || name.starts_with("azure-pipelines")
        || path.starts_with(".azure-pipelines/")
        || path.starts_with(".azure/")
        || name == ".travis.yml"
        || name == "bitbucket-pipelines.yml"
        || path.starts_with(".buildkite/")
        || name == ".drone.yml"
        || name == ".woodpecker.yml"
        || path.starts_with(".woodpecker/"))
}

fn is_gitlab(path: &str) -> bool {
    let name = file_name(path);
    name == ".gitlab-ci.yml" || name.ends_with(".gitlab-ci.yml") || path.starts_with(".gitlab/ci/")
}

/// GitLab's top-level keys that are not jobs.
const GITLAB_RESERVED: &[&str] = &[
    "stages",
    "variables",
    "include",
    "default",
    "workflow",
    "image",
    "services",
    "before_script",
    "after_script",
    "cache",
    "pages:deploy",
    "spec",
];

/// One job: its name, line and steps (each by what identifies it).
struct Job {
    name: String,
    line: usize,
    steps: Vec<String>,
}

fn step_id(step: &Node) -> String {
    let first = |s: &str| s.lines().next().unwrap_or("").trim().to_string();
    match step {
        Node::Scalar { value, .. } => first(value),
        Node::Map { .. } => {
            for key in [
                "name",
                "uses",
                "run",
                "script",
                "task",
                "bash",
                "pwsh",
                "powershell",
                "checkout",
                "template",
                "label",
                "command",
            ] {
                if let Some(v) = step.get(key) {
                    return match v.str() {
                        Some(s) if key == "uses" => s.split('@').next().unwrap_or(s).to_string(),
                        Some(s) => first(s),
                        None => key.to_string(),
                    };
                }
            }
            step.pairs()
                .first()
                .map_or(String::new(), |(k, _)| k.to_string())
        }
        Node::Seq { .. } => "(list)".into(),
    }
}

fn steps_of(job: &Node, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .filter_map(|k| job.get(k))
        .flat_map(|s| s.items().iter().map(step_id))
        .collect()
}

fn jobs(path: &str, doc: &Node) -> Vec<Job> {
    let mut out = Vec::new();
    let job = |name: &str, line: usize, j: &Node, keys: &[&str]| Job {
        name: name.to_string(),
        line,
        steps: steps_of(j, keys),
    };
    if is_gitlab(path) {
        for (k, line, v) in doc.keyed() {
            if k.starts_with('.') || GITLAB_RESERVED.contains(&k) || !matches!(v, Node::Map { .. })
            {
                continue;
            }
            if ["script", "trigger", "extends", "stage", "run"]
                .iter()
                .any(|x| v.get(x).is_some())
            {
                out.push(job(k, line, v, &["script"]));
            }
        }
        return out;
    }
    if file_name(path) == ".travis.yml" {
        // Travis: the top-level script is the default job's steps; `jobs.include` (or
        // `matrix.include`) the others, by name.
        for (key, line, s) in doc.keyed() {
            if ["script", "before_script", "install"].contains(&key) {
                out.push(Job {
                    name: format!("({key})"),
                    line,
                    steps: match s {
                        Node::Scalar { value, .. } => vec![value.clone()],
                        _ => s.items().iter().map(step_id).collect(),
                    },
                });
            }
        }
        for list in ["jobs", "matrix"] {
            let include = doc.get(list).and_then(|j| j.get("include"));
            for (i, v) in include.map(Node::items).unwrap_or(&[]).iter().enumerate() {
                let name = ["name", "stage", "env"]
                    .iter()
                    .find_map(|k| v.get(k).and_then(Node::str))
                    .map_or(format!("include #{}", i + 1), str::to_string);
                out.push(job(&name, v.line(), v, &["script"]));
            }
        }
        return out;
    }
    match doc.get("jobs") {
        Some(m @ Node::Map { .. }) => {
            for (k, line, v) in m.keyed() {
                out.push(job(k, line, v, &["steps"]));
            }
        }
        Some(Node::Seq { items, .. }) => {
            for (i, v) in items.iter().enumerate() {
                let name = ["job", "deployment", "name", "template"]
                    .iter()
                    .find_map(|k| v.get(k).and_then(Node::str))
                    .map_or(format!("#{}", i + 1), str::to_string);
                out.push(job(&name, v.line(), v, &["steps"]));
            }
        }
        _ => {}
    }
    if let Some(stages) = doc.get("stages") {
        for st in stages.items() {
            let stage = st.get("stage").and_then(Node::str).unwrap_or("");
            for (i, v) in st
                .get("jobs")
                .map(Node::items)
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                let name = v
                    .get("job")
                    .or(v.get("deployment"))
                    .and_then(Node::str)
                    .map_or(format!("{stage}#{}", i + 1), |j| format!("{stage}.{j}"));
                out.push(job(&name, v.line(), v, &["steps"]));
            }
        }
    }
    if let Some(steps) = doc.get("steps") {
        if matches!(steps, Node::Seq { .. }) {
            out.push(Job {
                name: "(steps)".into(),
                line: steps.line(),
                steps: steps.items().iter().map(step_id).collect(),
            });
        }
    }
    out
}

/// The places a failure is let through or a job switched off, by kind, with their lines.
fn flags(doc: &Node) -> BTreeMap<&'static str, Vec<usize>> {
    let mut out: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
    doc.walk(&mut |n| {
        for (k, v) in n.pairs() {
            let kind = match k {
                "continue-on-error" if v.is_true() => Some("`continue-on-error: true`"),
                "allow_failure" if v.is_true() || matches!(v, Node::Map { .. }) => {
                    Some("`allow_failure`")
                }
                "soft_fail" if v.is_true() || matches!(v, Node::Seq { .. }) => Some("`soft_fail`"),
                "allow_failures" => {
                    for i in v.items() {
                        out.entry("`allow_failures`").or_default().push(i.line());
                    }
                    None
                }
                "if" if v.is_false() => Some("`if: false`"),
                "when" if v.str() == Some("manual") || v.str() == Some("never") => {
                    Some("`when: manual`/`never`")
                }
                "failFast" | "fail-fast" => None,
                _ => None,
            };
            if let Some(kind) = kind {
                out.entry(kind).or_default().push(v.line());
            }
        }
    });
    out
}

fn ignore_failure() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r"\|\|\s*(?:true\b|:\s*(?:$|[;)#])|exit\s+0\b)|\bset\s+\+e\b")
            .unwrap_or_else(|e| panic!("weakened: {e}"))
    })
}

fn ignored_failures(text: &str) -> Vec<usize> {
    lines(text)
        .filter(|(_, l)| !l.trim_start().starts_with('#') && ignore_failure().is_match(l))
        .map(|(n, _)| n)
        .collect()
}

/// The events a GitHub workflow runs on.
fn triggers(doc: &Node) -> Option<(Vec<String>, usize)> {
    let (_, line, on) = doc
        .keyed()
        .into_iter()
        .find(|(k, _, _)| *k == "on" || *k == "true")?;
    let events = match on {
        Node::Scalar { value, .. } => vec![value.clone()],
        Node::Seq { items, .. } => items
            .iter()
            .filter_map(|i| i.str().map(str::to_string))
            .collect(),
        Node::Map { .. } => on.pairs().iter().map(|(k, _)| k.to_string()).collect(),
    };
    Some((events, line))
}

fn parse(text: Option<&str>) -> Option<Node> {
    // Several documents: the first holds the pipeline (GitLab's `spec:` header aside).
    let docs = yaml::parse(text?).ok()?;
    match docs.len() {
        0 => Some(Node::Map {
            entries: Vec::new(),
            line: 1,
        }),
        1 => docs.into_iter().next(),
        _ => docs
            .into_iter()
            .rev()
            .find(|d| matches!(d, Node::Map { .. })),
    }
}

/// CI configuration weakened across the scope.
pub fn ci(files: &[Pair<'_>], added: &dyn Fn(&Pair<'_>) -> Vec<(usize, String)>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut old_jobs: Vec<(String, Job)> = Vec::new();
    let mut new_jobs: Vec<(String, Job)> = Vec::new();
    for f in files.iter().filter(|f| is_ci(f.path)) {
        let (o, n) = (parse(f.old), parse(f.new));
        if f.old.is_some() && o.is_none() || f.new.is_some() && n.is_none() {
            // A file that does not parse is CC-05's finding; nothing here can be compared.
            continue;
        }
        if let Some(o) = &o {
            old_jobs.extend(jobs(f.path, o).into_iter().map(|j| (f.path.to_string(), j)));
        }
        if let Some(n) = &n {
            new_jobs.extend(jobs(f.path, n).into_iter().map(|j| (f.path.to_string(), j)));
        }
        let Some(n) = &n else { continue };
        let added_lines: Vec<usize> = added(f).into_iter().map(|(l, _)| l).collect();
        let before = o.as_ref().map(flags).unwrap_or_default();
        for (kind, lines_now) in flags(n) {
            let was = before.get(kind).map_or(0, Vec::len);
            if lines_now.len() > was {
                let new_lines: Vec<usize> = lines_now
                    .iter()
                    .copied()
                    .filter(|l| added_lines.contains(l))
                    .collect();
                let report = if new_lines.is_empty() {
                    lines_now
                } else {
                    new_lines
                };
                for l in report {
                    out.push(Finding::new(
                        f.path,
                        l,
                        false,
                        Kind::Ci,
                        format!("{kind} added"),
                    ));
                }
            }
        }
        let was = f.old.map_or(0, |t| ignored_failures(t).len());
        let now = f.new.map(ignored_failures).unwrap_or_default();
        if now.len() > was {
            for l in now.iter().filter(|l| added_lines.contains(l)) {
                out.push(Finding::new(
                    f.path,
                    *l,
                    false,
                    Kind::Ci,
                    "a command's failure ignored (`|| true`, `|| exit 0`, `set +e`) added".into(),
                ));
            }
        }
        if let (Some(o), true) = (&o, f.path.starts_with(".github/workflows/")) {
            if let (Some((b, _)), Some((a, line))) = (triggers(o), triggers(n)) {
                let gone: Vec<&String> = b.iter().filter(|e| !a.contains(e)).collect();
                if !gone.is_empty() {
                    out.push(Finding::new(
                        f.path,
                        line,
                        false,
                        Kind::Ci,
                        format!(
                            "the workflow no longer runs on {}",
                            gone.iter()
                                .map(|e| format!("`{e}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
        }
    }
    // Jobs: fewer across the scope (a job moved to another file is not removed).
    if new_jobs.len() < old_jobs.len() {
        for (path, j) in &old_jobs {
            if !new_jobs.iter().any(|(_, n)| n.name == j.name) {
                out.push(Finding::new(
                    path,
                    j.line,
                    true,
                    Kind::Ci,
                    format!("job `{}` removed", j.name),
                ));
            }
        }
    }
    // Steps: fewer in a job of the same name (the same file's first).
    for (path, j) in &old_jobs {
        let now = new_jobs
            .iter()
            .find(|(p, n)| p == path && n.name == j.name)
            .or_else(|| new_jobs.iter().find(|(_, n)| n.name == j.name));
        let Some((npath, n)) = now else { continue };
        if n.steps.len() < j.steps.len() {
            let gone: Vec<String> = j
                .steps
                .iter()
                .filter(|s| !n.steps.contains(s))
                .map(|s| format!("`{}`", crate::checks::clip(s, 60)))
                .collect();
            out.push(Finding::new(
                npath,
                n.line,
                false,
                Kind::Ci,
                format!(
                    "job `{}`: {} step(s) removed{}",
                    j.name,
                    j.steps.len() - n.steps.len(),
                    if gone.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", gone.join(", "))
                    }
                ),
            ));
        }
    }
    out
}
