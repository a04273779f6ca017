//! The referee's last word is about the bytes on disk (issue 16 §6): however `watch` ends (the
//! pipeline completes, SIGTERM the way systemd and Kubernetes stop it), its final verdict is
//! what `verify` says of the same bytes — exit code, headline, STOP, every check's status — and
//! a file kept moving holds judgment back no longer than `--settle-max`, nor the end of the run.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::builder::fixtures_dir;
use crate::util::Output;
use crate::watch::{
    exit_code, final_statuses, manual_gates, read, run, status, verify_statuses, Watch, GATES,
    STOP, WAIT,
};

/// The clean run before its weaver: everything up to the integrative report is in.
fn before_the_weaver() -> (tempfile::TempDir, PathBuf) {
    crate::formats::build("base = \"clean\"\n[[remove]]\npath = \"p3c-weaver.md\"\n")
}

/// The weaver's verdict, renamed into place (the pipeline is complete).
fn ship(dir: &Path) {
    let text = fs::read_to_string(fixtures_dir().join("content/weaver.md")).expect("weaver");
    assert!(text.contains("SHIP"), "{text}");
    let tmp = dir.join(".weaver.tmp");
    fs::write(&tmp, text).expect("write");
    fs::rename(&tmp, dir.join("p3c-weaver.md")).expect("rename");
}

fn headline(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default()
        .to_string()
}

/// `verify --final` on the directory as the referee left it: exit code and headline.
fn verify_final(dir: &Path) -> (i32, String) {
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", dir.to_str().expect("utf-8"), "--final"]);
    assert!(code == 0 || code == 1, "{err}");
    (code, headline(&out))
}

/// The two referees agree on the same bytes: exit code, FAIL/PASS headline, STOP, statuses.
fn assert_agree(dir: &Path, watch_exit: i32, w: &Watch) {
    let (code, verify_headline) = verify_final(dir);
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert_eq!(
        watch_exit,
        code,
        "exit codes differ\n{report}\n{}",
        w.output()
    );
    let word = |h: &str| h.split(':').next().unwrap_or_default().to_string();
    assert_eq!(
        word(&headline(&report)),
        word(&verify_headline),
        "{report}\nverify: {verify_headline}"
    );
    assert_eq!(dir.join(STOP).exists(), code == 1, "{}", w.output());
    assert_eq!(final_statuses(dir), verify_statuses(dir, true));
}

#[test]
fn sigterm_right_after_an_in_place_bad_write_and_ship_agrees_with_verify_final() {
    let (tmp, dir) = before_the_weaver();
    let mut w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the referee is live", || status(&dir, true).code == 0);
    // A bad write in place (so it is settling), the verdict, and the stop, at once.
    fs::write(dir.join(GATES), manual_gates(1)).expect("in-place write");
    ship(&dir);
    w.signal(libc::SIGTERM);
    let code = exit_code(w.wait(WAIT));
    assert_eq!(code, 1, "the bad write was waved through\n{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(headline(&report).starts_with("**FAIL"), "{report}");
    assert!(read(&dir.join(STOP)).contains("OBS-27"), "{}", w.output());
    assert_eq!(status(&dir, false).code, 1);
    assert_agree(&dir, code, &w);
}

#[test]
fn sigterm_right_after_a_good_last_write_agrees_with_verify_final() {
    let (tmp, dir) = before_the_weaver();
    let mut w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the referee is live", || status(&dir, true).code == 0);
    // The gate results written again in place, the same bytes: nothing to fail.
    let same = fs::read(dir.join(GATES)).expect("gates");
    fs::write(dir.join(GATES), same).expect("in-place write");
    ship(&dir);
    w.signal(libc::SIGTERM);
    let code = exit_code(w.wait(WAIT));
    assert_eq!(code, 0, "{}", w.output());
    assert_agree(&dir, code, &w);
}

/// Appends a space to `path` every 200 ms until told to stop.
struct Churn {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Churn {
    fn start(path: PathBuf) -> Churn {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let mut f = fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .expect("open to append");
                f.write_all(b" ").expect("append");
                drop(f);
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Churn {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_file_kept_moving_holds_judgment_at_most_settle_max_and_ship_still_ends_the_run() {
    let (tmp, dir) = before_the_weaver();
    let mut w = Watch::start(&dir, tmp.path(), &["--settle-max", "1s"]);
    w.until("the referee is live", || status(&dir, true).code == 0);
    // A bad write in place, then kept moving (JSON with trailing blanks is the same JSON).
    fs::write(dir.join(GATES), manual_gates(1)).expect("in-place write");
    let churn = Churn::start(dir.join(GATES));
    // `status` may answer from the referee's state a moment before the STOP file's rename
    // lands in BUILD_DIR: wait for both.
    w.until("the STOP stands while the file is still moving", || {
        status(&dir, true).code == 1 && read(&dir.join(STOP)).contains("OBS-27")
    });
    ship(&dir);
    // The run ends on its own (the pipeline is complete) while the file keeps moving: within
    // `--settle-max` of SHIP on a quiet machine (about 3 s in all); the deadline is generous
    // because a loaded 2-core machine stretches every turn, and a daemon that never ends (the
    // bug this guards) still fails it.
    let code = exit_code(w.wait(Duration::from_secs(40)));
    drop(churn);
    assert_eq!(code, 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(report.contains("the pipeline completed"), "{report}");
    assert!(headline(&report).starts_with("**FAIL"), "{report}");
    assert_eq!(status(&dir, false).code, 1, "the STOP outlives the run");
}
