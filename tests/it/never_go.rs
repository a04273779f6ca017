//! Never go by accident: `referee status` answers go only when nothing stands against it. A STOP
//! file in the watched directory is a STOP whatever the state directory can or cannot say; a
//! build directory swapped for a copy, renamed, or replaced by a link to where it went is
//! recognised or answered 3; a rival referee on the same build is refused, not fought; a
//! `status --sync` token left from before a restart is acknowledged; and a STOP lifted is never
//! still answered from a heartbeat that wanted it. Real binary, real processes, real files.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::util::{run, Output};
use crate::watch::{
    build, exit_code, gates_text, manual_gates, payloads, raise_stop, read, Watch, GATES,
    HEARTBEAT, STOP, WAIT,
};

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn status(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["status", p(dir)];
    args.extend_from_slice(extra);
    run(&args)
}

/// A private state directory (mode 0700) that no referee ever used.
fn empty_state(root: &Path, name: &str) -> std::path::PathBuf {
    let s = root.join(name);
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&s)
        .expect("state dir");
    s
}

const PLANTED: &str = "# OBSERVER STOP\n\nplanted by hand\n";

/// A STOP file in BUILD_DIR is answered 1 when no referee ever ran, with `--require-live`, with
/// the state directory of another directory, with an unreadable heartbeat, with a state
/// directory that is refused, and in a workspace's `.referee/`.
#[test]
fn a_stop_file_in_the_watched_directory_is_never_go() {
    let (root, dir) = build("pre-audit");
    assert_eq!(status(&dir, &[]).code, 0, "nothing stands yet");
    fs::write(dir.join(STOP), PLANTED).expect("plant STOP");

    let o = status(&dir, &[]);
    assert_eq!(o.code, 1, "no state directory: {o:?}");
    assert!(o.stdout.contains("planted by hand"), "{o:?}");
    assert!(o.stderr.contains("watched directory"), "{o:?}");
    assert_eq!(status(&dir, &["--require-live"]).code, 1);

    // The memory of another directory (empty), and one with an unreadable heartbeat.
    let other = empty_state(root.path(), "other-state");
    assert_eq!(status(&dir, &["--state-dir", p(&other)]).code, 1);
    fs::write(other.join(HEARTBEAT), "{ not json").expect("garbage heartbeat");
    for extra in [&[][..], &["--require-live"][..]] {
        let mut args = vec!["--state-dir", p(&other)];
        args.extend_from_slice(extra);
        let o = status(&dir, &args);
        assert_eq!(o.code, 1, "unreadable heartbeat {extra:?}: {o:?}");
    }
    // A state directory `status` refuses (others may write it): an error before, a STOP now.
    fs::set_permissions(&other, fs::Permissions::from_mode(0o777)).expect("chmod");
    let o = status(&dir, &["--state-dir", p(&other)]);
    assert_eq!(o.code, 1, "refused state directory: {o:?}");
    assert!(
        o.stderr.contains("writable by group"),
        "the why is said: {o:?}"
    );
    // A link or a FIFO in its place is a STOP too (never followed or opened).
    fs::remove_file(dir.join(STOP)).expect("rm");
    assert_eq!(status(&dir, &[]).code, 0);
    std::os::unix::fs::symlink("/nonexistent", dir.join(STOP)).expect("link");
    assert_eq!(status(&dir, &[]).code, 1, "a dangling link at the name");
    fs::remove_file(dir.join(STOP)).expect("rm");

    // A workspace's copy.
    fs::create_dir(dir.join(".referee")).expect(".referee");
    fs::write(dir.join(".referee").join(STOP), PLANTED).expect("plant");
    assert_eq!(status(&dir, &[]).code, 1);
}

/// Polls plain `status` until it answers 1 (at most [`WAIT`]); every answer before must be 1 or
/// 3, never go. Returns the codes seen.
#[track_caller]
fn never_go_until_stop(dir: &Path, w: &Watch, what: &str) -> Vec<i32> {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let o = status(dir, &[]);
        seen.push(o.code);
        if o.code == 0 {
            let events = read(&dir.join(crate::watch::EVENTS));
            let tail: Vec<&str> = events.lines().rev().take(12).collect();
            panic!(
                "{what}: `status` said go with the violation on disk after {} answers\n{}\n{}",
                seen.len(),
                tail.join("\n"),
                w.output()
            );
        }
        if o.code == 1 {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: no STOP within {WAIT:?}: {seen:?}\n{}",
            w.output()
        );
    }
}

/// `cp -a DIR ROOT/copy`, `before(copy)`, the violation written into the copy, then the copy
/// renamed into DIR's place (the original moved to `ROOT/old`).
fn swap_for_a_copy(root: &Path, dir: &Path, before: impl FnOnce(&Path)) {
    copy_in_place(root, dir, "old", |copy| {
        before(copy);
        fs::write(copy.join(GATES), manual_gates(1)).expect("the violation, in the copy");
    });
}

/// `cp -a DIR ROOT/copy`, `edit(copy)`, then the copy renamed into DIR's place (the original
/// moved to `ROOT/OLD`): a pipeline that restores its build directory from a copy.
fn copy_in_place(root: &Path, dir: &Path, old: &str, edit: impl FnOnce(&Path)) {
    let copy = root.join("copy");
    let cp = std::process::Command::new("cp")
        .args(["-a", p(dir), p(&copy)])
        .status()
        .expect("cp");
    assert!(cp.success());
    edit(&copy);
    fs::rename(dir, root.join(old)).expect("move the original away");
    fs::rename(&copy, dir).expect("the copy in its place");
}

/// A build directory swapped for a copy (a new inode at the same path) with a violation in
/// it: from the swap on, plain `status` answers 3 (the referee has not judged the new one) or
/// 1, never go, until the re-attached referee raises the STOP.
#[test]
fn a_build_directory_swapped_for_a_copy_is_never_go() {
    let (root, dir) = build("pre-audit");
    // A slow heartbeat: the referee notices the swap late (at a beat), the window is wide.
    let w = Watch::start_beating(&dir, root.path(), "3", &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    assert_eq!(status(&dir, &[]).code, 0, "{}", w.output());

    swap_for_a_copy(root.path(), &dir, |_| ());
    never_go_until_stop(&dir, &w, "swapped for a copy");
    w.until("the STOP for OBS-27 in the new directory", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
}

/// `status --sync` asked right after the build directory was swapped for a copy waits for the
/// live referee, which re-attaches to the copy at its next heartbeat and moves its memory to the
/// copy's name, and answers for the copy: go for an honest copy (not "no live referee", which
/// stops an honest pipeline), the STOP for a copy with a violation in it (never go).
#[test]
fn status_sync_waits_for_the_referee_to_re_attach_to_a_copy() {
    let (root, dir) = build("pre-audit");
    let w = Watch::start_beating(&dir, root.path(), "1", &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    let sync = ["--sync", "--wait", "30s"];
    assert_eq!(status(&dir, &sync).code, 0, "{}", w.output());

    for round in ["old-1", "old-2"] {
        copy_in_place(root.path(), &dir, round, |_| ());
        let o = status(&dir, &sync);
        assert_eq!(o.code, 0, "an honest copy ({round}): {o:?}\n{}", w.output());
        assert!(!dir.join(STOP).exists(), "{}", w.output());
    }
    // The copy of the event log that came with each copy was the log as it was then: no one's
    // edit, so no tamper is recorded.
    assert_eq!(payloads(&dir, "reattach").len(), 2, "{}", w.output());
    assert!(payloads(&dir, "tamper").is_empty(), "{}", w.output());

    // A copy whose event log was edited (a line of it rewritten) and with a violation in it.
    copy_in_place(root.path(), &dir, "old-3", |copy| {
        let log = copy.join(crate::watch::EVENTS);
        let text = read(&log).replacen("\"start\"", "\"START\"", 1);
        fs::write(&log, text).expect("edit the copy of the log");
        fs::write(copy.join(GATES), manual_gates(1)).expect("the violation, in the copy")
    });
    let o = status(&dir, &sync);
    assert_eq!(o.code, 1, "a copy with a violation: {o:?}\n{}", w.output());
    assert!(o.stdout.contains("OBS-27"), "{o:?}");
    w.until("the edited copy of the log recorded as tamper", || {
        payloads(&dir, "tamper")
            .iter()
            .any(|p| p["what"] == "edited")
    });
}

/// `mv ws elsewhere && ln -s elsewhere ws`, and a plain rename: asked through the link or at the
/// new name, `status` never says go for the directory the referee watched under its old name.
#[test]
fn a_build_directory_renamed_or_replaced_by_a_link_is_never_go() {
    let (root, dir) = build("pre-audit");
    let w = Watch::start(&dir, root.path(), &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    assert_eq!(status(&dir, &[]).code, 0, "{}", w.output());

    let elsewhere = root.path().join("elsewhere");
    fs::rename(&dir, &elsewhere).expect("mv");
    std::os::unix::fs::symlink(&elsewhere, &dir).expect("ln -s");
    fs::write(elsewhere.join(GATES), manual_gates(1)).expect("the violation");
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        for asked in [&dir, &elsewhere] {
            let o = status(asked, &[]);
            assert!(
                o.code == 1 || o.code == 3,
                "asked at `{}`: {o:?}\n{}",
                asked.display(),
                w.output()
            );
        }
    }
    let o = status(&elsewhere, &[]);
    assert!(
        o.stderr
            .contains("renamed, moved or reached through a link")
            || o.stderr.contains("not the one there now")
            || o.code == 1,
        "{o:?}"
    );
}

/// A second `watch` on the same build with its own state directory is refused (exit 2, said
/// once), and the first referee's STOP stands untouched: no restore loop.
#[test]
fn a_rival_referee_on_the_same_build_is_refused() {
    let (root, dir) = build("pre-audit");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    raise_stop(&dir, &w);
    let before = fs::metadata(dir.join(STOP)).expect("STOP").modified().ok();

    let state = root.path().join("rival-state");
    let o = run(&[
        "watch",
        p(&dir),
        "--state-dir",
        p(&state),
        "--timeout",
        "3s",
        "--quiet",
    ]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("another referee"), "{o:?}");
    assert_eq!(
        o.stderr.matches("another referee").count(),
        1,
        "said once: {o:?}"
    );
    assert_eq!(
        fs::metadata(dir.join(STOP)).expect("STOP").modified().ok(),
        before,
        "the STOP was never touched\n{}",
        w.output()
    );
    let tampers = crate::watch::count(&dir, "tamper", "");
    assert_eq!(tampers, 0, "no restore loop\n{}", w.output());
    assert_eq!(status(&dir, &["--require-live"]).code, 1);

    fs::write(dir.join(GATES), gates_text()).expect("fix");
    w.until("the STOP lifted", || !dir.join(STOP).exists());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A `status --sync` token already in the directory when the referee starts (asked while it
/// restarted) is acknowledged once the new referee has judged the directory.
#[test]
fn a_sync_token_present_at_start_is_acknowledged() {
    let (root, dir) = build("pre-audit");
    let token = "1-deadbeef-0123456789abcdef";
    fs::write(dir.join(format!("OBSERVER-SYNC-{token}")), "").expect("token");
    let mut w = Watch::start(&dir, root.path(), &[]);
    let state = crate::state_home().join("referee");
    w.until("the token acknowledged", || {
        fs::read_dir(&state)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| read(&e.path().join("OBSERVER-SYNCED.json")).contains(token))
    });
    // And a real `status --sync` answers at once.
    let o = status(&dir, &["--sync", "--wait", "5s", "--require-live"]);
    assert_eq!(o.code, 0, "{o:?}\n{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A forged `OBSERVER-PASS-2.md` (edited in place, or replaced by a rename) is restored as the
/// referee wrote it, from the file's own event, each recorded as tamper. "At once" without a
/// stopwatch: the heartbeat's tick (whose checks would restore it too) comes every minute, so a
/// restore within [`WAIT`] can only be the event's.
#[test]
fn a_forged_pass_file_is_restored_at_once() {
    let (root, dir) = build("pre-audit");
    let mut w = Watch::start_beating(&dir, root.path(), "60", &[]);
    let pass = dir.join("OBSERVER-PASS-2.md");
    w.until("pass 2 written and a heartbeat", || {
        pass.exists() && dir.join(HEARTBEAT).exists()
    });
    // Settled: the referee has judged everything and written pass 2 for good.
    let o = status(&dir, &["--sync", "--wait", "10s", "--require-live"]);
    assert_eq!(o.code, 0, "{o:?}");
    let real = read(&pass);
    for i in 0..5 {
        let forged = format!("# OBSERVER PASS 2\n\nAll checks PASS (forged {i})\n");
        if i % 2 == 0 {
            fs::write(&pass, &forged).expect("edit in place");
        } else {
            let tmp = dir.join(".forge.tmp");
            fs::write(&tmp, &forged).expect("tmp");
            fs::rename(&tmp, &pass).expect("rename over");
        }
        w.until("the pass file restored", || read(&pass) == real);
    }
    w.until("five tamper events", || {
        crate::watch::payloads(&dir, "tamper")
            .iter()
            .filter(|p| p["file"] == "OBSERVER-PASS-2.md")
            .count()
            >= 5
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A gate file changed through a hard link outside the build directory makes no event there:
/// `status --sync` still answers 1, because the barrier judges the files as they are.
#[test]
fn status_sync_judges_a_write_that_made_no_event() {
    let (root, dir) = build("pre-audit");
    let outside = root.path().join("outside-gates.json");
    fs::hard_link(dir.join(GATES), &outside).expect("hard link");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("pass 2 written and a heartbeat", || {
        dir.join("OBSERVER-PASS-2.md").exists() && dir.join(HEARTBEAT).exists()
    });
    let o = status(&dir, &["--sync", "--wait", "10s", "--require-live"]);
    assert_eq!(o.code, 0, "{o:?}\n{}", w.output());
    // Written in place through the other name: the build directory's watch hears nothing.
    {
        use std::io::Write;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&outside)
            .expect("open the other name");
        f.write_all(manual_gates(1).as_bytes()).expect("write");
    }
    let o = status(&dir, &["--sync", "--wait", "10s", "--require-live"]);
    assert_eq!(o.code, 1, "{o:?}\n{}", w.output());
    assert!(o.stdout.contains("OBS-27"), "{o:?}");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// Two referees started on one build at the same instant (both may pass the heartbeat look at
/// start, and both write the same heartbeat copy): the directory's own lock lets exactly one
/// hold it, the other is refused at start (exit 2, said once) before it writes anything, so no
/// `OBSERVER-*` file is ever fought over (not one tamper event) and the STOP raised stands.
#[test]
fn two_referees_started_at_once_do_not_fight() {
    let (root, dir) = build("pre-audit");
    let state_b = root.path().join("state-b");
    let mut a = Watch::start(&dir, root.path(), &[]);
    let mut b = Watch::start(&dir, root.path(), &["--state-dir", p(&state_b)]);
    let said = |w: &Watch| w.output().matches("another referee").count();
    crate::watch::wait_until(
        WAIT,
        "one of them refused",
        || said(&a) + said(&b) >= 1,
        || format!("A:\n{}\nB:\n{}", a.output(), b.output()),
    );
    let (refused, kept) = if said(&a) > 0 {
        (&mut a, b)
    } else {
        (&mut b, a)
    };
    assert_eq!(exit_code(refused.wait(WAIT)), 2, "{}", refused.output());
    assert_eq!(said(refused), 1, "said once: {}", refused.output());
    assert_eq!(said(&kept), 0, "{}", kept.output());
    raise_stop(&dir, &kept);
    // Two seconds watched for a restore loop (what must never happen), not a margin raced.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        assert!(read(&dir.join(STOP)).contains("OBS-27"), "the STOP stands");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        crate::watch::count(&dir, "tamper", ""),
        0,
        "a file fought over\nkept:\n{}\nrefused:\n{}",
        kept.output(),
        refused.output()
    );
}

/// Raised and lifted again and again: once the STOP copy is gone, `status --require-live` says
/// go at once (the heartbeat that wanted the STOP is rewritten before the copy is removed), and
/// while it stands, 1.
#[test]
fn a_lifted_stop_is_go_as_soon_as_its_copy_is_gone() {
    let (root, dir) = build("pre-audit");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    for round in 0..4 {
        raise_stop(&dir, &w);
        let o = status(&dir, &["--require-live"]);
        assert_eq!(o.code, 1, "round {round}: {o:?}");
        fs::write(dir.join(GATES), gates_text()).expect("fix");
        w.until("the STOP copy removed", || !dir.join(STOP).exists());
        let o = status(&dir, &["--require-live"]);
        assert_eq!(o.code, 0, "round {round}: {o:?}\n{}", w.output());
    }
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// Waits until the kernel lists a lock taken by `pid` (`/proc/locks`): `watch` must meet it.
fn until_locked(pid: u32) {
    let deadline = Instant::now() + WAIT;
    let listed = || {
        fs::read_to_string("/proc/locks")
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("FLOCK") && l.contains(&format!(" {pid} ")))
    };
    while !listed() {
        assert!(Instant::now() < deadline, "pid {pid} never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process that is no referee holding the directory's lock (`flock(1)` on the build, by the
/// worker or anything else) keeps no referee out: the lock only tells two referees apart. The
/// referee starts, says who holds it, and raises the STOP; the same after the build is swapped
/// for a copy the worker locked first.
#[test]
fn a_lock_held_by_a_process_that_is_no_referee_keeps_no_referee_out() {
    let (root, dir) = build("pre-audit");
    let holder = |d: &Path| {
        let child = std::process::Command::new("flock")
            .args(["-x", "-n", p(d), "sleep", "120"])
            .spawn()
            .expect("flock(1)");
        until_locked(child.id());
        child
    };
    let mut first = holder(&dir);
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    assert!(
        w.output().contains("no referee"),
        "who holds the lock is said\n{}",
        w.output()
    );
    raise_stop(&dir, &w);
    fs::write(dir.join(GATES), gates_text()).expect("fix");
    w.until("the STOP lifted", || !dir.join(STOP).exists());

    // Swapped for a copy that the worker holds before the referee re-attaches.
    let mut second = None;
    swap_for_a_copy(root.path(), &dir, |copy| second = Some(holder(copy)));
    let mut second = second.expect("the copy held");
    never_go_until_stop(&dir, &w, "swapped for a locked copy");
    w.until("the STOP for OBS-27 in the new directory", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
    for c in [&mut first, &mut second] {
        let _ = c.kill();
        let _ = c.wait();
    }
    assert_eq!(
        fs::read_to_string(w.err.as_path())
            .unwrap_or_default()
            .matches("which is no referee")
            .count(),
        2,
        "each lock met is said\n{}",
        w.output()
    );
    // The STOP stands when it is told to finish: exit 1.
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// A process of another user under the name `referee` (here `flock(1)` copied to a file of
/// that name: a name is anyone's to take) that holds the directory's lock is no referee: under
/// the other-user deployment the worker's processes are exactly those. The referee starts,
/// says who holds the lock, watches without it and raises the STOP. (A process of the
/// referee's own user under its name is still taken for another referee: that user reaches the
/// referee's memory anyway.) Needs root, to run the holder as another user (`setpriv`).
#[test]
fn a_process_of_another_user_named_referee_keeps_no_referee_out() {
    if !rustix::process::geteuid().is_root() {
        crate::util::missing(
            "root",
            "run the tests as root",
            "the other user's lock holder",
        );
        return;
    }
    if !crate::util::tool("setpriv", "util-linux", "the other user's lock holder") {
        return;
    }
    let (root, dir) = build("pre-audit");
    // Readable by the holder's user (the build is the pipeline's, its folders searchable).
    for d in [root.path(), dir.as_path()] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let flock = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v flock"])
            .output()
            .expect("sh")
            .stdout,
    )
    .expect("a path");
    let named = root.path().join("bin");
    fs::create_dir(&named).expect("mkdir");
    fs::set_permissions(&named, fs::Permissions::from_mode(0o755)).expect("chmod");
    let fake = named.join("referee");
    fs::copy(flock.trim(), &fake).expect("copy flock(1)");
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut holder = std::process::Command::new("setpriv")
        .args(["--reuid=54321", "--regid=54321", "--clear-groups"])
        .arg(&fake)
        .args(["-x", "-n", p(&dir), "sleep", "120"])
        .spawn()
        .expect("setpriv referee (flock)");
    until_locked(holder.id());
    let comm = fs::read_to_string(format!("/proc/{}/comm", holder.id())).unwrap_or_default();
    assert_eq!(
        comm.trim(),
        "referee",
        "the holder goes by the referee's name"
    );
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    assert!(
        w.output().contains("which is no referee"),
        "the holder is said and passed over\n{}",
        w.output()
    );
    raise_stop(&dir, &w);
    let _ = holder.kill();
    let _ = holder.wait();
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}
