// Test helpers unwrap freely: a failed unwrap is a failed test, with its place.
#![allow(clippy::unwrap_used, reason = "test code")]

mod attack_git;
mod attack_records;
mod builder;
mod cli;
mod code_change;
mod examples;
mod flags;
mod formats;
mod fuzz;
mod heap;
mod liveness;
mod markdown;
mod replay;
mod root;
mod unreadable;
mod waivers;
mod watch;

/// Counts heap bytes per thread, so the fuzz targets can bound a parser's memory.
#[global_allocator]
static HEAP: heap::Counting = heap::Counting;
