//! Writes that make no file event in the build directory are judged all the same: a gate file
//! written through a hard link from outside the build, or through `mmap`, is noticed within a
//! heartbeat with no `status --sync` asked, and `status --sync` answers 1 for it at once. Real
//! binary, real processes, real files.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::util::{run, Output};
use crate::watch::{build, exit_code, manual_gates, read, Watch, GATES, HEARTBEAT, STOP, WAIT};

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn sync(dir: &Path) -> Output {
    run(&[
        "status",
        p(dir),
        "--sync",
        "--wait",
        "10s",
        "--require-live",
    ])
}

/// `referee watch` with a one-second heartbeat, once it has judged the build and said go.
fn settled(dir: &Path, logs: &Path) -> Watch {
    let w = Watch::start_beating(dir, logs, "1", &[]);
    w.until("pass 2 written and a heartbeat", || {
        dir.join("OBSERVER-PASS-2.md").exists() && dir.join(HEARTBEAT).exists()
    });
    let o = sync(dir);
    assert_eq!(o.code, 0, "{o:?}\n{}", w.output());
    w
}

/// Rewrites `path` in place (truncate, write): through a hard link from outside the build, the
/// build directory's watch hears nothing.
fn write_in_place(path: &Path, text: &str) {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .expect("open the other name");
    f.write_all(text.as_bytes()).expect("write");
}

/// A gate file changed through a hard link from outside the build: the STOP names OBS-27
/// within a few heartbeats though nothing asked, and `status --sync` says 1 with the check.
#[test]
fn a_hard_link_write_stops_without_a_sync() {
    let (root, dir) = build("pre-audit");
    let outside = root.path().join("outside-gates.json");
    fs::hard_link(dir.join(GATES), &outside).expect("hard link");
    let mut w = settled(&dir, root.path());
    assert!(!dir.join(STOP).exists(), "{}", w.output());
    write_in_place(&outside, &manual_gates(1));
    // No `status --sync`: the heartbeat's look at the judged inputs finds it.
    w.until("a STOP naming OBS-27", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
    let o = sync(&dir);
    assert_eq!(o.code, 1, "{o:?}\n{}", w.output());
    assert!(o.stdout.contains("OBS-27"), "{o:?}");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// The same file shared by two builds (one hard link in each) under `--root`: written in one,
/// both builds STOP on OBS-27, and each build's `status --sync` says 1.
#[test]
fn a_hard_link_shared_by_two_builds_stops_both() {
    let root = tempfile::tempdir().expect("tempdir");
    let (_a_root, a) = build("pre-audit");
    let (_b_root, b) = build("pre-audit");
    let builds = root.path().join("builds");
    fs::create_dir(&builds).expect("builds");
    let (a_in, b_in) = (builds.join("a"), builds.join("b"));
    fs::rename(&a, &a_in).expect("move a");
    fs::rename(&b, &b_in).expect("move b");
    fs::remove_file(b_in.join(GATES)).expect("b's own gates");
    fs::hard_link(a_in.join(GATES), b_in.join(GATES)).expect("shared gates");
    let logs = root.path().join("logs");
    fs::create_dir(&logs).expect("logs");
    let mut w = Watch::start_root(&builds, &logs, &["--heartbeat", "1"]);
    for d in [&a_in, &b_in] {
        w.until("pass 2 written and a heartbeat", || {
            d.join("OBSERVER-PASS-2.md").exists() && d.join(HEARTBEAT).exists()
        });
    }
    for d in [&a_in, &b_in] {
        let o = sync(d);
        assert_eq!(o.code, 0, "{o:?}\n{}", w.output());
    }
    // Written through build a's name: build b's watch hears nothing of it.
    write_in_place(&a_in.join(GATES), &manual_gates(1));
    for d in [&a_in, &b_in] {
        w.until("a STOP naming OBS-27 in each build", || {
            read(&d.join(STOP)).contains("OBS-27")
        });
        let o = sync(d);
        assert_eq!(o.code, 1, "{o:?}\n{}", w.output());
        assert!(o.stdout.contains("OBS-27"), "{o:?}");
    }
    w.signal(libc::SIGTERM);
    w.wait(WAIT);
}

/// A gate file changed in place through `mmap` (python's), which makes no write event: the STOP
/// names OBS-27 within a few heartbeats, and `status --sync` says 1.
#[test]
fn an_mmap_write_stops_without_a_sync() {
    let (root, dir) = build("pre-audit");
    let gates = dir.join(GATES);
    // Room for the manual text, written (with its events) before the referee starts.
    let mut room = read(&gates);
    let manual = manual_gates(1);
    while room.len() < manual.len() + 1 {
        room.push(' ');
    }
    fs::write(&gates, &room).expect("room");
    let mut w = settled(&dir, root.path());
    let mut new = manual.into_bytes();
    new.resize(room.len(), b' ');
    let src = root.path().join("mmap-bytes");
    fs::write(&src, &new).expect("bytes");
    let st = Command::new("python3")
        .arg("-c")
        .arg(
            "import mmap,sys\n\
             data=open(sys.argv[2],'rb').read()\n\
             f=open(sys.argv[1],'r+b')\n\
             m=mmap.mmap(f.fileno(),0)\n\
             m[:len(data)]=data\n\
             m.flush()\n\
             m.close()\n",
        )
        .arg(&gates)
        .arg(&src)
        .status()
        .expect("python3");
    assert!(st.success());
    w.until("a STOP naming OBS-27", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
    let o = sync(&dir);
    assert_eq!(o.code, 1, "{o:?}\n{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}
