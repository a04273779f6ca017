//! `verify --format sarif`: SARIF 2.1.0 (placeholder until the SARIF commit).

use super::Context;
use crate::engine::Evaluation;
use crate::protocol::Protocol;

/// The evaluation as a SARIF log.
pub fn render(_p: &Protocol, _eval: &Evaluation, _ctx: &Context) -> String {
    String::new()
}
