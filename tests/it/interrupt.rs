//! A second SIGINT/SIGTERM ends `referee watch` at once with exit code 130 (`ExitCode::Interrupted`),
//! without waiting for the final report the first signal asked for.

use crate::watch::{exit_code, raise_stop, watching, WAIT};

#[test]
fn a_second_signal_exits_130_without_the_final_report() {
    let (_root, dir, mut w) = watching(&[]);
    // A standing STOP: without the second signal this run ends with 1 and a report.
    raise_stop(&dir, &w);
    // Stopped, the process keeps both signals pending, so its signal thread sees them together
    // and the second one cannot arrive after the first has already finished the run.
    w.signal(libc::SIGSTOP);
    w.signal(libc::SIGINT);
    w.signal(libc::SIGTERM);
    w.signal(libc::SIGCONT);
    let code = exit_code(w.wait(WAIT));
    assert_eq!(code, 130, "{}", w.output());
    assert!(
        w.output().contains("exiting without a final report"),
        "{}",
        w.output()
    );
}
