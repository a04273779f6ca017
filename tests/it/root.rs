//! `referee watch --root`: one process referees every build directory under a root, each exactly
//! as a single `watch` would, with real inotify events, real processes and real signals.

use std::fs;
use std::path::{Path, PathBuf};

use crate::builder::Build;
use crate::util::Output;
use crate::watch::{
    exit_code, gates_text, manual_gates, read, status, wait_until, Watch, GATES, HEARTBEAT, STOP,
    WAIT,
};

/// Materialises the `pre-audit` fixture (passes 0–2 ran) at `root/name`.
fn pre_audit(root: &Path, name: &str) -> PathBuf {
    let stage = tempfile::tempdir_in(root.parent().expect("root has a parent")).expect("tempdir");
    let built = Build::named("pre-audit")
        .and_then(|b| b.materialise(stage.path()))
        .expect("materialise pre-audit");
    let dir = root.join(name);
    fs::rename(built, &dir).expect("move the build under the root");
    dir
}

/// A temporary top folder with `builds/` (the root) and `logs/` (the referee's output).
fn top() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let top = tempfile::tempdir().expect("tempdir");
    let root = top.path().join("builds");
    let logs = top.path().join("logs");
    for d in [&root, &logs] {
        fs::create_dir(d).expect("mkdir");
    }
    (top, root, logs)
}

/// How many inotify instances a process holds.
fn inotify_instances(pid: i32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter(|fd| {
                    fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
                })
                .count()
        })
        .unwrap_or(0)
}

fn threads(pid: i32) -> usize {
    fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |t| t.count())
}

/// Three builds at start and one created later: each gets its own files; a violation in one
/// raises STOP there and nowhere else; `status` works on each; SIGTERM writes every report and
/// the exit code is the worst of all builds.
#[test]
fn one_process_referees_every_build_under_a_root() {
    let (_top, root, logs) = top();
    let dirs: Vec<PathBuf> = ["b1", "b2", "b3"]
        .iter()
        .map(|n| pre_audit(&root, n))
        .collect();
    // Not builds: a hidden directory and a plain file.
    fs::create_dir(root.join(".cache")).expect("mkdir .cache");
    fs::write(root.join("notes.txt"), "x").expect("write notes");

    let mut w = Watch::start_root(&root, &logs, &[]);
    w.until("every build's pass 2 ran", || {
        dirs.iter()
            .all(|d| d.join("OBSERVER-PASS-2.md").exists() && d.join(HEARTBEAT).exists())
    });
    assert!(!root.join(".cache").join(HEARTBEAT).exists());
    let pid = w.pid();
    assert_eq!(
        inotify_instances(pid),
        1,
        "one inotify instance for all builds"
    );
    // The loop, the event source, the signal waiter, the shutdown forwarder (and, for a moment
    // during an evaluation, the text checks' scoped workers): a few, never one per build.
    let bound = 8;
    assert!(threads(pid) <= bound, "{} threads", threads(pid));

    // A violation renamed into b2: STOP there only.
    let tmp = dirs[1].join(".gates.tmp");
    fs::write(&tmp, manual_gates(1)).expect("write");
    fs::rename(&tmp, dirs[1].join(GATES)).expect("rename");
    w.until("STOP in b2", || {
        read(&dirs[1].join(STOP)).contains("OBS-27")
    });
    assert!(!dirs[0].join(STOP).exists() && !dirs[2].join(STOP).exists());
    // Said on the console too (the line may follow the file by a moment).
    w.until("the STOP said", || {
        read(&w.out).contains("b2: STOP raised: OBS-27")
    });

    // A build created after start is picked up.
    let late = pre_audit(&root, "b4");
    w.until("the new build is refereed", || {
        late.join("OBSERVER-PASS-2.md").exists()
    });
    let Output {
        code, stdout: out, ..
    } = status(&late, true);
    assert_eq!(code, 0, "status on a build under the root: {out}");
    assert!(
        threads(pid) <= bound,
        "{} threads for 4 builds",
        threads(pid)
    );
    assert_eq!(inotify_instances(pid), 1);

    // b2 fixed: resolved there.
    fs::write(&tmp, gates_text()).expect("write");
    fs::rename(&tmp, dirs[1].join(GATES)).expect("rename");
    w.until("STOP in b2 resolved", || !dirs[1].join(STOP).exists());
    // And broken again, to end with one unresolved.
    fs::write(&tmp, manual_gates(2)).expect("write");
    fs::rename(&tmp, dirs[1].join(GATES)).expect("rename");
    w.until("STOP in b2 again", || dirs[1].join(STOP).exists());

    w.signal(libc::SIGTERM);
    let code = exit_code(w.wait(WAIT));
    assert_eq!(code, 1, "b2's BLOCKING failure stands\n{}", w.output());
    for d in dirs.iter().chain([&late]) {
        let report = read(&d.join("OBSERVER-REPORT.md"));
        assert!(report.contains("SIGTERM"), "{}: {report}", d.display());
    }
    assert!(read(&dirs[1].join("OBSERVER-REPORT.md")).contains("OBS-27"));
}

/// A build that completes is finished on its own (its report written) while the others go on;
/// one that another referee already watches is left to it, and a build directory deleted and
/// re-created keeps its STOP.
#[test]
fn builds_end_on_their_own_and_refused_or_recreated_ones_are_handled() {
    let (top, root, logs) = top();
    let owned = pre_audit(&root, "owned");
    let single = Watch::start(&owned, &logs, &[]);
    single.until("the single referee runs", || owned.join(HEARTBEAT).exists());
    let busy = pre_audit(&root, "busy");
    let done = root.join("done");
    let clean = Build::named("clean")
        .and_then(|b| b.materialise(top.path()))
        .expect("materialise clean");
    let mut w = Watch::start_root(&root, &logs, &[]);
    w.until("the busy build's pass 2", || {
        busy.join("OBSERVER-PASS-2.md").exists()
    });
    wait_until(
        WAIT,
        "the already-watched build is left to its referee",
        || read(&w.err).contains("`owned` is not refereed"),
        || w.output(),
    );
    // A completed run arrives whole: it is judged and finished on its own.
    fs::rename(&clean, &done).expect("move the clean run in");
    w.until("the completed build's report", || {
        done.join("OBSERVER-REPORT.md").exists()
    });
    assert!(read(&done.join("OBSERVER-REPORT.md")).contains("the pipeline completed"));

    // Deleted and re-created with the violation: STOP there.
    fs::write(busy.join(GATES), manual_gates(1)).expect("write");
    w.until("STOP in busy", || busy.join(STOP).exists());
    let parked = top.path().join("parked");
    fs::rename(&busy, &parked).expect("move away");
    fs::create_dir(&busy).expect("re-create");
    // The pipeline's files only: the referee may still be writing its own into the parked
    // directory (`OBSERVER-*`, and their temp files `.OBSERVER-*.tmp.*`, gone a moment later)
    // until it sees the directory moved.
    for e in fs::read_dir(&parked).expect("list").flatten() {
        let name = e.file_name();
        if name.to_string_lossy().contains("OBSERVER-") {
            continue;
        }
        match fs::rename(e.path(), busy.join(&name)) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            other => other.expect("move back"),
        }
    }
    w.until("STOP in the re-created build", || {
        read(&busy.join(STOP)).contains("OBS-27")
    });
    w.signal(libc::SIGINT);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(
        !owned.join("OBSERVER-REPORT.md").exists(),
        "the other referee's build is not written to"
    );
    drop(single);
}

/// `--root` needs a directory, and takes neither a build directory nor `--exit-with`.
#[test]
fn root_arguments_are_checked() {
    let top = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        crate::util::TestCommand::new()
            .arg("watch")
            .args(args)
            .output()
    };
    let missing = top.path().join("nope");
    let out = run(&["--root", missing.to_str().unwrap()]).assert_exit(2);
    assert!(out.stderr.contains("nope"), "{out}");
    let root = top.path().to_str().unwrap();
    run(&["--root", root, "x"]).assert_exit(2);
    run(&["--root", root, "--exit-with", "1"]).assert_exit(2);
}

/// Every name under `dir` the referee would write (`OBSERVER-*` and its temp files).
fn referee_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("OBSERVER") || n.contains("observer"))
                .collect()
        })
        .unwrap_or_default()
}

/// A watched build swapped for a symlink to a directory outside the root (that looks like a
/// build, with a violation in it): the build is detached and says why, the link is never
/// followed (nothing is written outside the root), and the other builds keep being refereed.
/// A real directory put back at the name is refereed again.
#[test]
fn a_build_swapped_for_a_symlink_is_detached_and_never_followed() {
    let (top, root, logs) = top();
    let b1 = pre_audit(&root, "b1");
    let b2 = pre_audit(&root, "b2");
    // Outside the root: a build with a violation, which a referee that followed the link would
    // judge and write a STOP into.
    let outside = top.path().join("outside");
    fs::create_dir(&outside).expect("mkdir outside");
    let bait = pre_audit(&outside, "bait");
    fs::write(bait.join(GATES), manual_gates(1)).expect("write");
    let mut w = Watch::start_root(&root, &logs, &[]);
    w.until("both builds' pass 2", || {
        [&b1, &b2]
            .iter()
            .all(|d| d.join("OBSERVER-PASS-2.md").exists())
    });
    let moved = top.path().join("moved-b1");
    fs::rename(&b1, &moved).expect("move b1 away");
    std::os::unix::fs::symlink(&bait, &b1).expect("a symlink in its place");
    w.until("b1 detached, saying why", || {
        read(&w.out)
            .lines()
            .any(|l| l.contains("b1: detached") && l.contains("symbolic link"))
    });
    // The other build still reacts.
    fs::write(b2.join(GATES), manual_gates(1)).expect("write");
    w.until("STOP in b2", || read(&b2.join(STOP)).contains("OBS-27"));
    // Heartbeats go by; nothing lands where the link points (nor in the moved directory).
    let beat = || read(&b2.join(HEARTBEAT));
    for _ in 0..3 {
        let before = beat();
        w.until("a heartbeat of b2", || beat() != before);
    }
    assert_eq!(referee_files(&bait), Vec::<String>::new(), "{}", w.output());
    assert!(!bait.join(STOP).exists());
    let Output {
        code, stderr: err, ..
    } = status(&b1, true);
    assert_ne!(code, 0, "a symlinked build is not live: {err}");

    // A real directory at the name again: refereed again.
    fs::remove_file(&b1).expect("remove the link");
    fs::rename(&moved, &b1).expect("move b1 back");
    fs::write(b1.join(GATES), manual_gates(1)).expect("write");
    w.until("STOP in b1 once it is a directory again", || {
        read(&b1.join(STOP)).contains("OBS-27")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert_eq!(referee_files(&bait), Vec::<String>::new(), "{}", w.output());
}

/// A writer that keeps a build in a storm: files created, written and renamed over each other
/// in a subfolder no check reads, as fast as one thread can, until dropped. `made` counts them.
struct Storm {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    made: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Storm {
    fn start(build: &Path) -> Storm {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let (stop, made) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let flood = build.join("flood");
        fs::create_dir(&flood).expect("mkdir flood");
        let thread = {
            let (stop, made) = (stop.clone(), made.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let n = made.fetch_add(1, Ordering::Relaxed);
                    // New names (the folder grows) and renames over a few old ones.
                    let tmp = flood.join(format!(".f{n}.tmp"));
                    fs::write(&tmp, n.to_string()).expect("create");
                    if n % 2 == 0 {
                        fs::rename(&tmp, flood.join(format!("f{n}.txt"))).expect("rename");
                    } else {
                        fs::rename(&tmp, flood.join(format!("r{}.txt", n % 64)))
                            .expect("rename over");
                    }
                }
            })
        };
        Storm {
            stop,
            made,
            thread: Some(thread),
        }
    }

    fn made(&self) -> usize {
        self.made.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the writer still runs (it ends only when told, or when a write fails).
    fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    fn end(mut self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("the storm thread");
        }
        self.made()
    }
}

impl Drop for Storm {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// One build in a storm of events (a writer creating and renaming files without pause) does not
/// hold up another build's STOP: a violation renamed into the quiet build is stopped there, and
/// `status` says stop, while the storm still runs. The storming build is not starved nor
/// misjudged meanwhile: a violation renamed into it is stopped, and its fix resolves the STOP,
/// both during the storm; the quiet build's fix too. (How long the quiet build's STOP takes, with
/// and without the storm, is measured by `bench/root.sh`.)
#[test]
fn a_storm_in_one_build_does_not_hold_up_another_builds_stop() {
    let (_top, root, logs) = top();
    let quiet = pre_audit(&root, "quiet");
    let stormy = pre_audit(&root, "storm");
    let mut w = Watch::start_root(&root, &logs, &[]);
    w.until("both builds' pass 2", || {
        [&quiet, &stormy]
            .iter()
            .all(|d| d.join("OBSERVER-PASS-2.md").exists())
    });
    let storm = Storm::start(&stormy);
    // The storm's pace is the machine's: how soon it has made its files is no property of the
    // referee's, so it gets as long as a loaded machine needs.
    wait_until(
        std::time::Duration::from_secs(120),
        "the storm is on",
        || storm.made() > 3000 || !storm.running(),
        || w.output(),
    );
    assert!(
        storm.running(),
        "the storm's writer stopped: {}",
        w.output()
    );
    let rename_in = |dir: &Path, text: String| {
        let tmp = dir.join(".gates.tmp");
        fs::write(&tmp, text).expect("write");
        fs::rename(&tmp, dir.join(GATES)).expect("rename");
    };

    rename_in(&quiet, manual_gates(1));
    let during = storm.made();
    w.until("STOP in the quiet build during the storm", || {
        read(&quiet.join(STOP)).contains("OBS-27")
    });
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&quiet, true);
    assert_eq!(code, 1, "status on the quiet build says stop: {out}{err}");
    assert!(
        storm.running() && storm.made() > during,
        "the storm still runs while the quiet build is stopped"
    );
    assert!(!stormy.join(STOP).exists(), "no STOP in the storming build");

    // The storming build's own verdicts, during the storm.
    rename_in(&stormy, manual_gates(1));
    w.until("STOP in the storming build during the storm", || {
        read(&stormy.join(STOP)).contains("OBS-27")
    });
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&stormy, true);
    assert_eq!(
        code, 1,
        "status on the storming build says stop: {out}{err}"
    );
    rename_in(&stormy, gates_text());
    rename_in(&quiet, gates_text());
    w.until("both STOPs resolved during the storm", || {
        !stormy.join(STOP).exists() && !quiet.join(STOP).exists()
    });
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&stormy, true);
    assert_eq!(code, 0, "status on the storming build says go: {out}{err}");
    assert!(storm.running(), "the storm still runs");
    let made = storm.end();
    eprintln!("files made by the storm: {during} before the violation, {made} in all");

    // And broken again, to end with one unresolved.
    rename_in(&quiet, manual_gates(2));
    w.until("STOP in the quiet build again", || {
        quiet.join(STOP).exists()
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(read(&stormy.join("OBSERVER-REPORT.md")).contains("SIGTERM"));
    assert!(read(&quiet.join("OBSERVER-REPORT.md")).contains("OBS-27"));
}
