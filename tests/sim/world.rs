//! The simulator's side of a session: a real git workspace, the worker's and the orchestrator's
//! real commands, the simulator's own walker (what the model is fed), and the referee driven as
//! an orchestrator drives it (`verify`, `watch`, `status`, `accept`, `task open`).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde_json::Value;

use crate::model::{self, Node, Snapshot};

/// How long any one condition may take before the session fails (generous: the machine is
/// shared; a condition that holds returns at once).
pub const WAIT: Duration = Duration::from_secs(30);

/// How long a live verdict may take to become one the model allows (a verdict gone stale is
/// judged again at once; this only bounds a shared machine's delay).
pub const VERDICT_WAIT: Duration = Duration::from_secs(15);

pub fn referee_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_referee"))
}

/// What the binary under test can do (commands being built elsewhere are detected, so the
/// simulator gains their actions when they land).
#[derive(Clone, Copy, Debug, Default)]
pub struct Caps {
    pub accept: bool,
    /// `accept --commit REV` (the orchestrator's own commits).
    pub accept_commit: bool,
    pub task_open: bool,
}

impl Caps {
    pub fn detect() -> Caps {
        let ok = |args: &[&str]| {
            Command::new(referee_bin())
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let help = Command::new(referee_bin())
            .args(["accept", "--help"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        Caps {
            accept: ok(&["accept", "--help"]),
            accept_commit: help.contains("--commit"),
            task_open: ok(&["task", "open", "--help"]),
        }
    }
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// One running session's workspace.
pub struct World {
    pub _root: tempfile::TempDir,
    pub ws: PathBuf,
    pub side: PathBuf,
    pub state_home: PathBuf,
    pub live: Option<Child>,
    pub live_logs: u32,
}

const IGNORE: &str = "build/\ndist/\n__pycache__/\nnode_modules/\n*.log\n*.so\nlocal_settings.py\n";

/// The project every session starts from: protected modules, files of every type an agent
/// edits, a lock file and a binary asset.
pub fn project() -> Vec<(&'static str, Vec<u8>, bool)> {
    let t = |s: &str| s.as_bytes().to_vec();
    vec![
        (".gitignore", t(IGNORE), false),
        (
            "app/orchestrator.py",
            t("import os\n\ntry:\n    import local_settings\nexcept ImportError:\n    local_settings = None\n\n\ndef run():\n    return os.getcwd()\n"),
            false,
        ),
        ("app/roles.py", t("ROLES = ['worker', 'tester']\n"), false),
        (
            "app/safety_checks.py",
            t("def check(x):\n    return bool(x)\n"),
            false,
        ),
        ("app/__init__.py", Vec::new(), false),
        (
            "app/util.py",
            t("# token-util\n\n\ndef add(a, b):\n    return a + b\n"),
            false,
        ),
        (
            "app/models.py",
            t("# token-models\n\n\nclass Model:\n    pass\n"),
            false,
        ),
        (
            "app/api.py",
            t("# token-api\n\n\ndef get():\n    return 1\n"),
            false,
        ),
        (
            "app/views.py",
            t("# token-views\n\n\ndef view():\n    return 'v'\n"),
            false,
        ),
        (
            "lib/helpers.js",
            t("// token-helpers\nexport function h() {\n  return 1;\n}\n"),
            false,
        ),
        (
            "lib/format.ts",
            t("// token-format\nexport const f = (x: number): number => x;\n"),
            false,
        ),
        (
            "config.json",
            t("{\"tag\": \"token-config\", \"debug\": false}\n"),
            false,
        ),
        ("settings.yaml", t("tag: token-settings\nlevel: 1\n"), false),
        (
            "pyproject.toml",
            t("[project]\nname = \"demo\"\ntag = \"token-pyproject\"\n"),
            false,
        ),
        ("README.md", t("# Demo\n\ntoken-readme\n"), false),
        ("docs/guide.md", t("# Guide\n\ntoken-guide\n"), false),
        (
            "scripts/run.sh",
            t("#!/bin/sh\n# token-run\necho run\n"),
            true,
        ),
        (
            "scripts/check.sh",
            t("#!/bin/bash\n# token-check\necho check\n"),
            false,
        ),
        (
            "cmd/main.go",
            t("// token-main\npackage main\n\nfunc main() {}\n"),
            false,
        ),
        ("package-lock.json", lock(1), false),
        ("assets/logo.png", png(1), false),
    ]
}

pub fn lock(n: usize) -> Vec<u8> {
    let deps: Vec<String> = (0..n * 3)
        .map(|i| format!("    \"node_modules/dep{i}\": {{\"version\": \"1.{n}.{i}\"}}"))
        .collect();
    format!(
        "{{\n  \"name\": \"demo\",\n  \"lockfileVersion\": 3,\n  \"packages\": {{\n{}\n  }}\n}}\n",
        deps.join(",\n")
    )
    .into_bytes()
}

pub fn png(n: u8) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    v.extend((0..64u8).map(|i| i.wrapping_mul(n).wrapping_add(n)));
    v.push(0);
    v
}

pub fn git(dir: &Path, args: &[&str]) -> Out {
    let out = Command::new("git")
        .args(["-c", "user.name=sim", "-c", "user.email=sim@example.com"])
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "protocol.file.allow=always",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[track_caller]
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    let o = git(dir, args);
    assert_eq!(o.code, 0, "git {args:?} in {}: {}", dir.display(), o.stderr);
    o.stdout
}

pub fn sh(dir: &Path, script: &str) -> Out {
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("sh {script}: {e}"));
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl World {
    pub fn new(submodule: bool) -> World {
        let mut root = tempfile::Builder::new()
            .prefix("referee-sim-")
            .tempdir()
            .expect("tempdir");
        if std::env::var_os("SIM_KEEP_WS").is_some() {
            // Kept for a reader of a failure (`SIM_KEEP_WS=1`): the path is printed.
            root.disable_cleanup(true);
            eprintln!("sim: workspace kept at {}", root.path().display());
        }
        let ws = root.path().join("ws");
        let side = root.path().join("side");
        let state_home = root.path().join("state");
        fs::create_dir_all(&side).expect("side");
        fs::create_dir_all(&ws).expect("ws");
        for (p, bytes, exec) in project() {
            write_file(&ws, p, &bytes);
            if exec {
                chmod(&ws.join(p), true);
            }
        }
        git_ok(&ws, &["init", "-q"]);
        if submodule {
            let ext = root.path().join("ext-src");
            fs::create_dir_all(&ext).expect("ext");
            write_file(&ext, "safety_net.py", b"def net():\n    return True\n");
            write_file(&ext, "lib.py", b"# token-ext\nX = 1\n");
            git_ok(&ext, &["init", "-q"]);
            git_ok(&ext, &["add", "-A"]);
            git_ok(&ext, &["commit", "-qm", "ext"]);
            git_ok(&ws, &["submodule", "add", "-q", "../ext-src", "ext"]);
        }
        git_ok(&ws, &["add", "-A"]);
        git_ok(&ws, &["commit", "-qm", "baseline"]);
        World {
            _root: root,
            ws,
            side,
            state_home,
            live: None,
            live_logs: 0,
        }
    }

    pub fn referee(&self, args: &[&str]) -> Out {
        let mut cmd = assert_cmd::Command::new(referee_bin());
        cmd.args(args)
            .env("XDG_STATE_HOME", &self.state_home)
            // The model knows the simulator's ignore rules only: no user's excludes.
            .env("XDG_CONFIG_HOME", &self.state_home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("REFEREE_LOG")
            .timeout(Duration::from_secs(120));
        let out = cmd.output().expect("run referee");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn ws_str(&self) -> &str {
        self.ws.to_str().expect("utf-8 temp path")
    }

    pub fn start_live(&mut self) -> Result<(), String> {
        let n = self.live_logs;
        self.live_logs += 1;
        let logs = self.ws.parent().expect("root").join(format!("watch-{n}"));
        let child = Command::new(referee_bin())
            .args([
                "watch",
                self.ws_str(),
                "--protocol",
                "code-change",
                "--heartbeat",
                "0.5",
            ])
            .env("XDG_STATE_HOME", &self.state_home)
            .env("XDG_CONFIG_HOME", &self.state_home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(Stdio::null())
            .stdout(fs::File::create(logs.with_extension("out")).expect("log"))
            .stderr(fs::File::create(logs.with_extension("err")).expect("log"))
            .spawn()
            .map_err(|e| format!("cannot start watch: {e}"))?;
        self.live = Some(child);
        let ws = self.ws_str().to_string();
        self.wait_for("the live referee to answer --require-live", || {
            self.referee(&["status", &ws, "--require-live"]).code != 3
        })
    }

    pub fn stop_live(&mut self, sig: i32) -> Result<(), String> {
        let Some(mut c) = self.live.take() else {
            return Ok(());
        };
        // SAFETY: signalling our own child.
        unsafe { libc::kill(c.id() as i32, sig) };
        let deadline = Instant::now() + WAIT;
        loop {
            if c.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                return Err("the live referee did not exit after a signal".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn live_output(&self) -> String {
        let root = self.ws.parent().expect("root");
        let mut s = String::new();
        for n in 0..self.live_logs {
            for ext in ["out", "err"] {
                let p = root.join(format!("watch-{n}.{ext}"));
                let t = fs::read_to_string(&p).unwrap_or_default();
                let tail: Vec<&str> = t.lines().rev().take(15).collect();
                s.push_str(&format!("--- watch-{n}.{ext} (tail) ---\n"));
                for l in tail.into_iter().rev() {
                    s.push_str(l);
                    s.push('\n');
                }
            }
        }
        s
    }

    pub fn wait_for(&self, what: &str, cond: impl FnMut() -> bool) -> Result<(), String> {
        self.wait_within(what, WAIT, cond)
    }

    pub fn wait_within(
        &self,
        what: &str,
        wait: Duration,
        mut cond: impl FnMut() -> bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + wait;
        while !cond() {
            if Instant::now() > deadline {
                return Err(format!("timed out after {wait:?} waiting for {what}"));
            }
            std::thread::sleep(Duration::from_millis(60));
        }
        Ok(())
    }

    /// The workspace as the model sees it: the work tree (ignored paths and nested
    /// repositories included), the records' and the referee's folders, and the executable
    /// surface under `.git/`.
    pub fn snapshot(&self) -> Snapshot {
        let mut snap = Snapshot::default();
        let root: OwnedFd = rustix::fs::open(
            &self.ws,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open ws");
        walk(&root, "", &mut snap, &|rel: &str| {
            // Inside `.git/` only the surface: hooks, config, attributes, submodules' own.
            if let Some(g) = rel.strip_prefix(".git/") {
                return g == "hooks"
                    || g.starts_with("hooks/")
                    || g == "config"
                    || g == "config.worktree"
                    || g == "info"
                    || g == "info/attributes"
                    || g == "modules"
                    || (g.starts_with("modules/")
                        && !g.contains("/objects")
                        && !g.contains("/logs")
                        && !g.contains("/refs"));
            }
            // A nested repository's or submodule's own git folder is git's.
            !(rel.contains("/.git/") || (rel.ends_with("/.git") && rel != ".git"))
        });
        // Where each symbolic link leads, when it stays inside the workspace.
        let canon_ws = fs::canonicalize(&self.ws).expect("canonical ws");
        let links: Vec<String> = snap
            .nodes
            .iter()
            .filter(|(_, n)| matches!(n, Node::Link(_)))
            .map(|(p, _)| p.clone())
            .collect();
        for l in links {
            if let Ok(t) = fs::canonicalize(self.ws.join(&l)) {
                if let Ok(rel) = t.strip_prefix(&canon_ws) {
                    snap.resolves_to
                        .insert(l, rel.to_string_lossy().into_owned());
                }
            }
        }
        snap
    }

    /// The task records on disk, as the model reads them.
    pub fn records(&self) -> Vec<model::Record> {
        let mut out = Vec::new();
        let Ok(rd) = fs::read_dir(self.ws.join(".tasks")) else {
            return out;
        };
        let mut names: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        names.sort();
        for p in names {
            if p.extension() != Some(OsStr::new("json")) || !p.is_file() {
                continue;
            }
            let id = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Ok(bytes) = fs::read(&p) {
                // UTF-16LE with its mark (what PowerShell writes) is the JSON it encodes.
                let bytes = match bytes.strip_prefix(&[0xff, 0xfe]) {
                    Some(wide) if wide.len() % 2 == 0 => {
                        let units: Vec<u16> = wide
                            .chunks_exact(2)
                            .map(|c| u16::from_le_bytes([c[0], c[1]]))
                            .collect();
                        String::from_utf16_lossy(&units).into_bytes()
                    }
                    _ => bytes,
                };
                let mut r = model::parse_record(&id, &bytes);
                // An absolute path under the workspace names its file (the contract).
                if let Ok(parsed) = &mut r.parsed {
                    let prefix = format!("{}/", self.ws.display());
                    let rel = |k: String| match k.strip_prefix(&prefix) {
                        Some(rest) => rest.to_string(),
                        None => k,
                    };
                    parsed.listed = std::mem::take(&mut parsed.listed)
                        .into_iter()
                        .map(|(k, v)| (rel(k), v))
                        .collect();
                    for m in [&mut parsed.pre, &mut parsed.post] {
                        *m = std::mem::take(m)
                            .into_iter()
                            .map(|(k, v)| (rel(k), v))
                            .collect();
                    }
                }
                out.push(r);
            }
        }
        out
    }

    /// `verify --format json` (with `--write` in one-shot sessions, so the state directory keeps
    /// each judged attempt as a live referee does).
    pub fn verify(&self, write: bool) -> Result<Verified, String> {
        let mut args = vec![
            "verify",
            self.ws_str(),
            "--protocol",
            "code-change",
            "--format",
            "json",
        ];
        if write {
            args.push("--write");
        }
        let o = self.referee(&args);
        if o.code == 2 || o.code < 0 {
            return Err(format!(
                "verify exited {}: {}",
                o.code,
                o.stderr.lines().take(5).collect::<Vec<_>>().join(" | ")
            ));
        }
        let v: Value = serde_json::from_str(&o.stdout)
            .map_err(|e| format!("verify json: {e}: {}", o.stderr))?;
        let mut tasks = BTreeMap::new();
        for t in v["tasks"].as_array().into_iter().flatten() {
            let id = t["task_id"].as_str().unwrap_or("").to_string();
            tasks.insert(
                id,
                (
                    t["attempt"].as_u64(),
                    t["verdict"].as_str().unwrap_or("").to_string(),
                    t["reasons"]
                        .as_array()
                        .map(|r| {
                            r.iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join(", ")
                        })
                        .unwrap_or_default(),
                ),
            );
        }
        Ok(Verified {
            stop: v["stop"].as_bool().unwrap_or(false),
            tasks,
        })
    }

    /// `status WS --task ID --wait`: the verdict line and the exit code.
    pub fn status_task(&self, id: &str, wait: &str) -> (i32, Option<u64>, String, String) {
        let o = self.referee(&["status", self.ws_str(), "--task", id, "--wait", wait]);
        // "task t1 attempt 1: APPROVE"
        let line = o
            .stdout
            .lines()
            .find(|l| l.starts_with("task "))
            .unwrap_or("");
        let attempt = line
            .split(" attempt ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .and_then(|a| a.trim().parse().ok());
        let verdict = line
            .rsplit(": ")
            .next()
            .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
            .unwrap_or_default();
        let reasons = o
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("reasons: "))
            .unwrap_or("")
            .to_string();
        (o.code, attempt, verdict, reasons)
    }

    pub fn status(&self) -> i32 {
        self.referee(&["status", self.ws_str()]).code
    }
}

pub struct Verified {
    pub stop: bool,
    pub tasks: BTreeMap<String, (Option<u64>, String, String)>,
}

fn walk(dir: &OwnedFd, prefix: &str, snap: &mut Snapshot, keep: &dyn Fn(&str) -> bool) {
    let Ok(rd) = rustix::fs::Dir::read_from(dir.as_fd()) else {
        return;
    };
    let mut names: Vec<Vec<u8>> = rd
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_bytes().to_vec())
        .filter(|n| n != b"." && n != b"..")
        .collect();
    names.sort();
    for name in names {
        let Ok(name_s) = String::from_utf8(name.clone()) else {
            continue;
        };
        let rel = if prefix.is_empty() {
            name_s.clone()
        } else {
            format!("{prefix}/{name_s}")
        };
        if !keep(&rel) {
            continue;
        }
        let Ok(st) = rustix::fs::statat(dir.as_fd(), name_s.as_str(), AtFlags::SYMLINK_NOFOLLOW)
        else {
            continue;
        };
        let ft = FileType::from_raw_mode(st.st_mode);
        match ft {
            FileType::Directory => {
                snap.nodes.insert(rel.clone(), Node::Dir);
                if let Ok(fd) = rustix::fs::openat(
                    dir.as_fd(),
                    name_s.as_str(),
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    walk(&fd, &rel, snap, keep);
                }
            }
            FileType::RegularFile => {
                let mut bytes = Vec::new();
                if let Ok(fd) = rustix::fs::openat(
                    dir.as_fd(),
                    name_s.as_str(),
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    let _ = fs::File::from(fd).read_to_end(&mut bytes);
                }
                snap.inode.insert(rel.clone(), (st.st_dev, st.st_ino));
                snap.nodes.insert(
                    rel,
                    Node::File {
                        bytes,
                        exec: st.st_mode & 0o100 != 0,
                    },
                );
            }
            FileType::Symlink => {
                let t = rustix::fs::readlinkat(dir.as_fd(), name_s.as_str(), Vec::new())
                    .map(|c| c.into_bytes())
                    .unwrap_or_default();
                snap.nodes.insert(rel, Node::Link(t));
            }
            _ => {
                snap.nodes.insert(rel, Node::Other);
            }
        }
    }
}

pub fn write_file(ws: &Path, rel: &str, bytes: &[u8]) {
    let p = ws.join(rel);
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).unwrap_or_else(|e| panic!("mkdir {}: {e}", d.display()));
    }
    fs::write(&p, bytes).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
}

pub fn chmod(p: &Path, exec: bool) {
    if let Ok(m) = fs::symlink_metadata(p) {
        let mut perm = m.permissions();
        perm.set_mode(if exec { 0o755 } else { 0o644 });
        let _ = fs::set_permissions(p, perm);
    }
}

/// Creates `rel_dir` (any depth, past `PATH_MAX`) beneath `ws` one component at a time and
/// writes `name` there.
pub fn write_deep(ws: &Path, components: &[String], name: &str, bytes: &[u8]) {
    let mut fd: OwnedFd = rustix::fs::open(
        ws,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open ws");
    for c in components {
        let _ = rustix::fs::mkdirat(fd.as_fd(), c.as_str(), Mode::from_raw_mode(0o755));
        fd = rustix::fs::openat(
            fd.as_fd(),
            c.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open deep dir");
    }
    let f = rustix::fs::openat(
        fd.as_fd(),
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .expect("create deep file");
    use std::io::Write;
    fs::File::from(f).write_all(bytes).expect("write deep file");
}

/// The baseline as the model starts it: the work tree as committed (ignored and git's paths
/// aside).
pub fn baseline_of(snap: &Snapshot) -> BTreeMap<String, Node> {
    snap.nodes
        .iter()
        .filter(|(p, n)| !model::outside_change(p) && !model::ignored(p) && **n != Node::Dir)
        .map(|(p, n)| (p.clone(), n.clone()))
        .collect()
}

pub fn set_of(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}
