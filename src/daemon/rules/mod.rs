//! The daemon's rules: functions of its state to its decisions, with no I/O, no threads and no
//! clock read (the time comes in as an argument), so each is tested without files or sleeps. The
//! shell around them (`driver`, `session`, `stop`, `heartbeat`, `journal`, `attach`, `signals`)
//! reads the disk and the clock, carries the decisions out and writes the files.
//!
//! - [`ledger`]: what one evaluation changes in what the referee has published (holds, status
//!   changes, STOP raised or resolved, fix attempts and escalations).
//! - [`guard`]: counting fix attempts on failing BLOCKING checks and when to escalate.
//! - [`settle`]: whether a path is still being written, and until when.
//! - [`retry`]: when a failed write of the referee's own is tried again.
//! - [`seen`]: what the referee notes it saw before each judgment.
//! - [`inputs`]: the stat identity of each file a judgment read, compared with the disk before a
//!   `status --sync` is answered and at heartbeats (writes that make no file event).

pub mod guard;
pub mod inputs;
pub mod ledger;
pub mod retry;
pub(super) mod seen;
pub mod settle;
