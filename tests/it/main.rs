// Test helpers unwrap freely: a failed unwrap is a failed test, with its place.
#![allow(clippy::unwrap_used, reason = "test code")]

mod agree;
mod artifact_types;
mod attack_git;
mod attack_records;
mod builder;
mod cli;
mod code_change;
mod code_change_secrets;
mod examples;
mod fail_closed;
mod faults;
mod flags;
mod formats;
mod fuzz;
mod heap;
mod hooks;
mod human_text;
mod json_strict;
mod layers;
mod liveness;
mod locations;
mod markdown;
mod mcp;
mod order;
mod pinned;
mod project_rules;
mod renamed_grades;
mod replay;
mod root;
mod state;
mod stop_evidence;
mod unreadable;
mod user_protocol;
mod waivers;
mod watch;

/// Counts heap bytes per thread, so the fuzz targets can bound a parser's memory.
#[global_allocator]
static HEAP: heap::Counting = heap::Counting;

/// Where the referee keeps its state directories in these tests (`XDG_STATE_HOME` of every
/// process spawned): one private folder for the test run, never the real `$HOME`. Each watched
/// directory still gets its own state directory in it (named from its path and identity).
pub(crate) fn state_home() -> &'static std::path::Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("referee-it-state-")
            .tempdir()
            .expect("a state home")
    })
    .path()
}
