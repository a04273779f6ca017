//! The REJECT cap is counted by the referee: a record replayed (its `attempt` set back) is
//! CC-00 FAIL and no attempt, but it is a REJECT the referee judged, so the next attempt after
//! two REJECTs and a replay is the third judged REJECT and ESCALATEs. Through the binary, with
//! real git and a live `watch`.

use std::collections::BTreeMap;
use std::fs;

use crate::code_change::{git_workspace, judged, record, start, verdict, APP, ORIGINAL};

/// Attempt 1 REJECTed, attempt 1 replayed with other work (REJECT, CC-00), attempt 2 REJECTed:
/// that is the third judged REJECT, ESCALATE (`max_rejects`).
#[test]
fn a_replayed_record_counts_toward_the_reject_cap() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    let base = BTreeMap::from([(APP, ORIGINAL)]);

    fs::write(ws.join(APP), "def main(:\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    w.until("attempt 1 judged", || judged(&ws, "t1", 1));
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT", "{}", w.output());

    fs::write(ws.join(APP), "def main(:\n    return 3\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    w.until("the replay judged", || {
        verdict(&ws, "t1")
            .to_string()
            .contains("is not above attempt")
    });
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT", "{}", w.output());

    fs::write(ws.join(APP), "def main(:\n    return 4 + 1\n").expect("write");
    record(&ws, "t1", 2, &[APP], &base);
    w.until("attempt 2 judged", || judged(&ws, "t1", 2));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "ESCALATE", "{v}\n{}", w.output());
    assert!(v["reasons"].to_string().contains("max_rejects"), "{v}");
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}
