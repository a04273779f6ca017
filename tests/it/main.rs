// Test helpers unwrap freely: a failed unwrap is a failed test, with its place.
#![allow(clippy::unwrap_used, reason = "test code")]

mod accept_commit;
mod agree;
mod artifact_types;
mod attack_git;
mod attack_records;
mod bounded;
mod builder;
mod cli;
mod code_change;
mod code_change_secret_families;
mod code_change_secrets;
mod deployment;
mod docs_links;
mod eventless;
mod examples;
mod fail_closed;
mod faults;
mod flags;
mod formats;
mod fuzz;
mod heap;
mod honest_tools;
mod hook_agents;
mod hook_memory;
mod hooks;
mod human_text;
mod interrupt;
mod json_strict;
mod layers;
mod layouts;
mod live_rules;
mod liveness;
mod locations;
mod markdown;
mod mcp;
mod never_go;
mod order;
mod pinned;
mod pipeline;
mod project_rules;
mod protect_forms;
mod reject_cap;
mod renamed_grades;
mod replay;
mod root;
mod serve;
mod serve_http;
mod sessions;
mod statcache;
mod state;
mod stop_copy;
mod stop_evidence;
mod surface;
mod task_open;
mod test_command;
mod unreadable;
mod user_protocol;
mod waivers;
mod watch;
mod weakened;

/// Counts heap bytes per thread, so the fuzz targets can bound a parser's memory.
#[global_allocator]
static HEAP: heap::Counting = heap::Counting;

/// The one way these tests run the `referee` binary ([`util::TestCommand`]) and the private
/// state home of every process they spawn.
#[allow(
    dead_code,
    reason = "shared with the `cases` harness, which uses more of it"
)]
#[path = "../util/mod.rs"]
mod util;

pub(crate) use util::state_home;
