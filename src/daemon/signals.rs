//! Ways the daemon learns it should end, without waking periodically: SIGINT/SIGTERM on a
//! dedicated thread (`signal-hook`), and the exit of the pipeline's process (`--exit-with PID`)
//! through a `pidfd` polled on a thread (`rustix`). Both crates replace hand-written signal masks
//! and raw syscalls: no `unsafe` here.
//!
//! This module owns those two threads. It must not touch the daemon's state: each thread only
//! sends or calls what it was given. Signal handlers are process-wide, so only the binary calls
//! [`listen_for_termination`]; a library user stops the daemon through its shutdown channel.

use std::io;
use std::sync::mpsc::{self, Receiver};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::io::Errno;
use rustix::process::{pidfd_open, Pid, PidfdFlags};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::Shutdown;
use crate::exit::ExitCode;

/// Starts a thread that waits for SIGINT and SIGTERM (`signal-hook`: the handlers only wake it).
/// The first one is sent on the returned channel; a second one exits the process at once with
/// [`ExitCode::Interrupted`] (130, no final report), for a user who insists.
pub fn listen_for_termination() -> io::Result<Receiver<Shutdown>> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("referee-signals".into())
        .spawn(move || {
            let mut first = true;
            for sig in signals.forever() {
                if first {
                    first = false;
                    let _ = tx.send(Shutdown::Signal(signal_name(sig).to_string()));
                } else {
                    tracing::error!(
                        "second {} — exiting without a final report",
                        signal_name(sig)
                    );
                    std::process::exit(ExitCode::Interrupted as i32);
                }
            }
        })?;
    Ok(rx)
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// How the exit of the watched process is noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidWatch {
    /// A thread waits on a pidfd and calls back when the process exits.
    Pidfd,
    /// The process had already exited; the callback was called.
    Gone,
    /// No pidfd (old kernel, permissions): the daemon checks at heartbeat ticks.
    Ticks,
}

/// Calls `on_exit` once when process `pid` exits, from a thread that sleeps in `poll(2)` on a
/// pidfd (no periodic wake-ups).
pub fn watch_pid<F>(pid: i32, on_exit: F) -> PidWatch
where
    F: FnOnce() + Send + 'static,
{
    let Some(p) = Pid::from_raw(pid) else {
        return PidWatch::Ticks;
    };
    let fd = match pidfd_open(p, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(Errno::SRCH) => {
            on_exit();
            return PidWatch::Gone;
        }
        Err(_) => return PidWatch::Ticks,
    };
    let spawned = std::thread::Builder::new()
        .name("referee-exit-with".into())
        .spawn(move || {
            loop {
                let mut fds = [PollFd::new(&fd, PollFlags::IN)];
                match poll(&mut fds, None) {
                    Err(Errno::INTR) => continue,
                    Ok(0) => continue,
                    _ => break,
                }
            }
            drop(fd);
            on_exit();
        });
    match spawned {
        Ok(_) => PidWatch::Pidfd,
        Err(_) => PidWatch::Ticks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn notices_a_child_exit_and_a_missing_pid() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let how = watch_pid(child.id() as i32, move || {
            let _ = tx.send(());
        });
        assert_ne!(how, PidWatch::Gone);
        if how == PidWatch::Pidfd {
            rx.recv_timeout(Duration::from_secs(5))
                .expect("exit not noticed");
        }
        child.wait().unwrap();
        let (tx, rx) = mpsc::channel();
        // A pid that cannot exist (above the kernel's pid_max).
        let how = watch_pid(i32::MAX, move || {
            let _ = tx.send(());
        });
        if how == PidWatch::Gone {
            rx.recv_timeout(Duration::from_secs(1)).unwrap();
        }
    }
}
