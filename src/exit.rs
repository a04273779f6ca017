//! The process exit codes, with their documented meanings , and how several outcomes
//! combine into one ([`ExitCode::worst`]). It owns the numbers only: which outcome a command
//! reaches is decided where the command runs.

/// What the process reports to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Report written, no unresolved BLOCKING failure; or "go" for `status`.
    Ok = 0,
    /// An unresolved BLOCKING failure; or "STOP present" for `status`.
    Violation = 1,
    /// The referee could not run: usage, protocol, or I/O on its own files.
    Error = 2,
    /// `status --require-live`: no live referee (heartbeat missing or stale).
    NotLive = 3,
    /// `status --task`: the task's latest attempt is not judged yet (after `--wait`).
    NotJudged = 4,
    /// A second SIGINT/SIGTERM while the daemon was finishing after the first: the process
    /// exits at once, without a final report (128 + SIGINT, the shell's convention for a
    /// process ended by Ctrl-C).
    Interrupted = 130,
}

impl ExitCode {
    /// The one code that stands for both outcomes, e.g. over the builds of `watch --root`.
    ///
    /// The order, worst first: [`Interrupted`](Self::Interrupted) (the run was cut short, so
    /// nothing else it says is complete), [`Error`](Self::Error) (the referee could not run on
    /// something: its other answers are not the whole story, so a caller must look before
    /// trusting a 0 or a 1), [`Violation`](Self::Violation) (a STOP stands: the contract's
    /// `status` answers STOP present even when no live referee watches), then
    /// [`NotLive`](Self::NotLive) over [`NotJudged`](Self::NotJudged) (without a live referee
    /// no verdict will come; `status` says so before a task's missing verdict), and
    /// [`Ok`](Self::Ok) only when both are. The numbers are not the order: 3 and 4 are less
    /// severe than 2.
    #[must_use]
    pub fn worst(self, other: ExitCode) -> ExitCode {
        if other.severity() > self.severity() {
            other
        } else {
            self
        }
    }

    /// [`worst`](Self::worst) over any number of outcomes; [`Ok`](Self::Ok) for none.
    pub fn worst_of(codes: impl IntoIterator<Item = ExitCode>) -> ExitCode {
        codes.into_iter().fold(ExitCode::Ok, ExitCode::worst)
    }

    fn severity(self) -> u8 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::NotJudged => 1,
            ExitCode::NotLive => 2,
            ExitCode::Violation => 3,
            ExitCode::Error => 4,
            ExitCode::Interrupted => 5,
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> Self {
        std::process::ExitCode::from(c as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::ExitCode::{self, *};

    const ALL: [ExitCode; 6] = [Ok, Violation, Error, NotLive, NotJudged, Interrupted];

    #[test]
    fn the_numbers_are_the_documented_ones() {
        let numbers: Vec<u8> = ALL.iter().map(|c| *c as u8).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4, 130]);
    }

    #[test]
    fn worst_follows_the_documented_order_whatever_the_side() {
        let order = [Ok, NotJudged, NotLive, Violation, Error, Interrupted];
        for (i, a) in order.iter().enumerate() {
            for (j, b) in order.iter().enumerate() {
                let want = order[i.max(j)];
                assert_eq!(a.worst(*b), want, "{a:?} with {b:?}");
                assert_eq!(b.worst(*a), want, "{b:?} with {a:?}");
            }
        }
        // Not the numeric maximum: a build that could not be judged outweighs a task waiting.
        assert_eq!(Error.worst(NotJudged), Error);
        assert_eq!(Violation.worst(NotLive), Violation);
    }

    #[test]
    fn worst_of_nothing_is_ok_and_of_several_the_worst() {
        assert_eq!(ExitCode::worst_of([]), Ok);
        assert_eq!(ExitCode::worst_of([Ok, Violation, Ok]), Violation);
        assert_eq!(ExitCode::worst_of([Violation, Error, Ok]), Error);
        assert_eq!(ExitCode::worst_of(ALL), Interrupted);
    }
}
