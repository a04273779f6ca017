//! Loading and playing timelines: the format's errors, offsets, brace expansion, tracker edits.

use std::ops::ControlFlow;
use std::path::Path;
use std::time::Duration;

use chrono::DateTime;

use super::braces::{expand_braces, BraceError};
use super::format::{duration, parse_offset, RawDuration};
use super::play::{play, PlayOptions};
use super::table::set_field;
use super::timeline::{FieldSet, Timeline};
use super::{ReplayError, EMBEDDED};
use crate::protocol::named::NamedFileError;

#[test]
fn io_errors_keep_their_cause() {
    let e = Timeline::load_file(Path::new("/nonexistent-referee-dir/t.toml")).unwrap_err();
    let ReplayError::Read(NamedFileError::Io { source, .. }) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let t = Timeline::load_embedded("demo").unwrap();
    let target = Path::new("/proc/nonexistent-referee-dir/build");
    let e = play(&t, target, &PlayOptions::default(), |_| {
        ControlFlow::Continue(())
    })
    .unwrap_err();
    assert!(
        crate::error::chain(&e).starts_with(
            "cannot create the target directory `/proc/nonexistent-referee-dir/build`: "
        ),
        "{e:?}"
    );
    assert!(matches!(e, ReplayError::TargetDir { .. }), "{e:?}");
}

fn parse(text: &str) -> Result<Timeline, ReplayError> {
    Timeline::parse(text, "t.toml", Path::new("/nonexistent"))
}

fn invalid(text: &str) -> (usize, usize, String) {
    match parse(text) {
        Err(ReplayError::Invalid {
            line,
            column,
            message,
            ..
        }) => (line, column, message),
        other => panic!("expected an invalid timeline, got {other:?}"),
    }
}

#[test]
fn durations_parse() {
    let d = |s: &str| duration(&RawDuration::Text(s.into())).unwrap();
    assert_eq!(d("1h2m3s"), Duration::from_secs(3723));
    assert_eq!(d("+12m30s"), Duration::from_secs(750));
    assert_eq!(d("4.5s"), Duration::from_millis(4500));
    assert_eq!(d("250ms"), Duration::from_millis(250));
    assert_eq!(d("1h 30m"), Duration::from_secs(5400));
    assert_eq!(d("5 minutes"), Duration::from_secs(300));
    assert_eq!(
        duration(&RawDuration::Seconds(2.0)).unwrap(),
        Duration::from_secs(2)
    );
    for bad in ["", "12", "s", "1x", "-1s", "1.2.3s", "30M", "2000000000s"] {
        let e = duration(&RawDuration::Text(bad.into())).unwrap_err();
        assert!(e.to_string().starts_with("bad duration"), "{bad}: {e}");
    }
    assert_eq!(parse_offset("90").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_offset("+49m").unwrap(), Duration::from_secs(2940));
    assert!(duration(&RawDuration::Seconds(-1.0)).is_err());
    assert!(duration(&RawDuration::Seconds(f64::NAN)).is_err());
}

#[test]
fn braces_expand_in_order() {
    assert_eq!(
        expand_braces("s/{a,b}/x-{1..2}.png").unwrap(),
        ["s/a/x-1.png", "s/a/x-2.png", "s/b/x-1.png", "s/b/x-2.png"]
    );
    assert!(expand_braces("a{1..").is_err());
    assert!(expand_braces("a{3..1}").is_err());
    assert!(expand_braces("a}b").is_err());
    assert_eq!(expand_braces("x-{0..99999}.png").unwrap().len(), 100_000);
}

/// Found by fuzzing: the product of several braces, or a million of them, is refused or
/// expanded without recursion, never attempted (a 240 GB allocation) or a stack overflow.
#[test]
fn brace_expansion_is_bounded() {
    let err = expand_braces("x-{0..99999}-{0..99999}.png").unwrap_err();
    assert!(matches!(err, BraceError::TooMany(_)), "{err}");
    assert!(err.to_string().contains("too many paths"), "{err}");
    assert!(expand_braces(&"{a,b}".repeat(40)).is_err());
    assert!(expand_braces(&format!("{}{{1..99999}}", "a".repeat(1000))).is_err());
    assert_eq!(expand_braces(&"{}".repeat(1_000_000)).unwrap(), [""]);
}

#[test]
fn unknown_keys_point_at_their_line_and_column() {
    let (line, col, msg) = invalid("[[step]]\nwrite = \"a\"\ntext = \"x\"\ncolour = \"red\"\n");
    assert_eq!((line, col), (4, 1), "{msg}");
    assert!(msg.contains("colour"), "{msg}");
    let (line, _, msg) = invalid("[[step]]\ntracker = [{ field = \"A\", vaule = \"x\" }]\n");
    assert_eq!(line, 2, "{msg}");
    assert!(msg.contains("vaule"), "{msg}");
}

#[test]
fn paths_may_not_leave_the_directory() {
    for p in ["/etc/passwd", "../x", "a/../../x", "./a", ""] {
        let text = format!("[[step]]\nwrite = \"{p}\"\ntext = \"x\"\n");
        let (line, col, msg) = invalid(&text);
        assert_eq!((line, col), (2, 9), "{p}: {msg}");
        assert!(msg.contains("path") || msg.contains("inside"), "{p}: {msg}");
    }
    let (line, _, _) = invalid("[[step]]\nrename = \"a\"\nsource = \"../b\"\n");
    assert_eq!(line, 3);
}

#[test]
fn steps_need_exactly_one_action_in_order() {
    let (line, _, msg) = invalid("[[step]]\nwrite = \"a\"\nmkdir = \"b\"\ntext = \"x\"\n");
    assert_eq!(line, 1, "{msg}");
    assert!(msg.contains("exactly one action"), "{msg}");
    let (line, _, msg) =
        invalid("[[step]]\nat = \"5s\"\nmkdir = \"a\"\n\n[[step]]\nat = \"4s\"\nmkdir = \"b\"\n");
    assert_eq!(line, 6, "{msg}");
    let (line, _, msg) = invalid("[[step]]\nmkdir = \"a\"\nevery = \"1s\"\n");
    assert_eq!(line, 3, "{msg}");
}

#[test]
fn tracker_sets_are_checked_against_the_tracker_the_timeline_wrote() {
    let head = "[[step]]\nrename = \"EXECUTION-TRACKER.md\"\ntext = \"## T\\n\\n| F | V | T |\\n|---|---|---|\\n| P0_START | ___ | |\\n\"\n\n";
    let ok = format!("{head}[[step]]\ntracker = [{{ field = \"p0_start\", value = \"x\" }}]\n");
    assert!(parse(&ok).is_ok());
    let bad =
        format!("{head}[[step]]\ntracker = [\n  {{ field = \"P1_START\", value = \"x\" }},\n]\n");
    let (line, _, msg) = invalid(&bad);
    assert_eq!(line, 7, "{msg}");
    assert!(msg.contains("P1_START"), "{msg}");
}

#[test]
fn set_field_rewrites_value_and_time_only() {
    let t = "# X\n\n| Field | Value | Time |\n|---|---|---|\n| A | ___ | |\n| a\\|b | y | |\n";
    let set = |field: &str, value: Option<&str>, time: Option<&str>| FieldSet {
        field: field.into(),
        value: value.map(Into::into),
        time: time.map(Into::into),
        section: None,
        column: None,
    };
    assert_eq!(
        set_field(t, &set("a", Some("v|w"), Some("2026-02-25T10:00:00Z"))).unwrap(),
        "# X\n\n| Field | Value | Time |\n|---|---|---|\n| A | v\\|w | 2026-02-25T10:00:00Z |\n| a\\|b | y | |\n"
    );
    // The header row is not a field.
    assert!(set_field(t, &set("Field", Some("x"), None)).is_err());
    // An escaped pipe inside a code span does not split the row (GFM), for the referee
    // reading it nor for the edit: the value set is the cell the referee reads as the value.
    let code = "| Field | Value | Time |\n|---|---|---|\n| `a \\| b` | ___ | |\n";
    assert_eq!(
        set_field(code, &set("a | b", Some("done"), None)).unwrap(),
        "| Field | Value | Time |\n|---|---|---|\n| `a \\| b` | done | |\n"
    );
}

#[test]
fn embedded_timelines_load_with_embedded_files() {
    for (name, _, _) in EMBEDDED {
        let t = Timeline::load_embedded(name).unwrap();
        assert!(!t.steps.is_empty(), "{name}");
    }
    let demo = Timeline::demo().unwrap();
    let secs = demo.duration().as_secs_f64();
    assert!(
        (8.0..=25.0).contains(&secs),
        "the demo lasts {secs}s at speed 1"
    );
}

#[test]
fn plays_steps_with_mtimes_and_refuses_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let t = parse(
        "epoch = \"2026-02-25T10:00:00Z\"\n\
         [[step]]\nat = \"1s\"\nwrite = \"a/{x,y}.txt\"\ntext = \"hi\"\nevery = \"1s\"\n\
         [[step]]\nrename = \"b.json\"\ntext = \"{}\"\n\
         [[step]]\nremove = \"a/x.txt\"\n",
    )
    .unwrap();
    let mut seen = Vec::new();
    play(&t, dir.path(), &PlayOptions::default(), |p| {
        seen.push(p.step.describe());
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            "write a/{x,y}.txt (2 files)",
            "rename .b.json.tmp → b.json",
            "remove a/x.txt"
        ]
    );
    let mtime = |p: &str| {
        filetime::FileTime::from_last_modification_time(
            &std::fs::metadata(dir.path().join(p)).unwrap(),
        )
        .unix_seconds()
    };
    let epoch = DateTime::parse_from_rfc3339("2026-02-25T10:00:00Z")
        .unwrap()
        .timestamp();
    assert_eq!(mtime("a/y.txt"), epoch + 2);
    assert_eq!(mtime("b.json"), epoch + 2);
    assert!(!dir.path().join("a/x.txt").exists());
    assert!(!dir.path().join(".b.json.tmp").exists());

    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let t = parse("[[step]]\nwrite = \"link/evil.txt\"\ntext = \"x\"\n").unwrap();
    let err = play(&t, dir.path(), &PlayOptions::default(), |_| {
        ControlFlow::Continue(())
    })
    .unwrap_err();
    assert!(
        matches!(&err, ReplayError::Play { step: 1, source: super::StepError::Symlink(p), .. }
            if p == std::path::Path::new("link")),
        "{err:?}"
    );
    assert!(
        crate::error::chain(&err)
            .ends_with("step 1 (`write link/evil.txt`): `link` is a symlink; the replay never writes through one"),
        "{}",
        crate::error::chain(&err)
    );
    assert!(!outside.path().join("evil.txt").exists());
}
