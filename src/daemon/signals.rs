//! Ways the daemon learns it should end, without waking periodically: SIGINT/SIGTERM through
//! `sigwait` on a dedicated thread, and the exit of the pipeline's process (`--exit-with PID`)
//! through a `pidfd` polled on a thread.
//!
//! This module owns the signal mask and those two threads. It must not touch the daemon's state:
//! each thread only calls the callback it was given, once. Blocking signals affects the whole
//! process, so only the binary calls [`listen_for_termination`] (before any thread is spawned);
//! a library user stops the daemon through its shutdown channel instead.

use std::io;
use std::sync::mpsc::{self, Receiver};

use super::Shutdown;

/// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it spawns later) and
/// starts a thread that waits for them. The first one is sent on the returned channel; a second
/// one exits the process at once (status 130), for a user who insists.
///
/// Call it from the main thread before spawning any other thread, or signals may be delivered to
/// a thread that does not block them and kill the process without a report.
pub fn listen_for_termination() -> io::Result<Receiver<Shutdown>> {
    // SAFETY: sigset_t is plain data; it is initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the calls only write to it and the thread's mask.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
    }
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("referee-signals".into())
        .spawn(move || {
            let mut first = true;
            loop {
                let mut sig: libc::c_int = 0;
                // SAFETY: `set` and `sig` are valid for the call; sigwait only writes `sig`.
                let rc = unsafe { libc::sigwait(&set, &mut sig) };
                if rc != 0 {
                    continue;
                }
                if first {
                    first = false;
                    let _ = tx.send(Shutdown::Signal(signal_name(sig).to_string()));
                } else {
                    eprintln!(
                        "referee: second {} — exiting without a final report",
                        signal_name(sig)
                    );
                    std::process::exit(130);
                }
            }
        })?;
    Ok(rx)
}

fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
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

/// Calls `on_exit` once when process `pid` exits, from a thread that sleeps in `poll(2)`.
pub fn watch_pid<F>(pid: i32, on_exit: F) -> PidWatch
where
    F: FnOnce() + Send + 'static,
{
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            on_exit();
            return PidWatch::Gone;
        }
        return PidWatch::Ticks;
    }
    let Ok(fd) = libc::c_int::try_from(fd) else {
        return PidWatch::Ticks;
    };
    let spawned = std::thread::Builder::new()
        .name("referee-exit-with".into())
        .spawn(move || {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            loop {
                // SAFETY: one valid pollfd; an infinite timeout: no periodic wake-ups.
                let rc = unsafe { libc::poll(&mut pfd, 1, -1) };
                if rc > 0 {
                    break;
                }
                if rc < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            // SAFETY: closing the descriptor this thread owns.
            unsafe { libc::close(fd) };
            on_exit();
        });
    match spawned {
        Ok(_) => PidWatch::Pidfd,
        Err(_) => {
            // SAFETY: the thread was not started, so the descriptor is still ours.
            unsafe { libc::close(fd) };
            PidWatch::Ticks
        }
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
