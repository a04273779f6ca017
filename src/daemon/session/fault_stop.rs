//! The STOP blocks the daemon adds for its own faults (`--on-fault stop`) and the whole STOP
//! text it wants: the check blocks (rendered by `outputs`) followed by the fault blocks. What
//! is wanted is written by the one STOP writer, [`crate::state::stop::StopFile`].

/// The STOP blocks for the referee's own faults (`--on-fault stop`), in the seed's block format:
/// each field a paragraph of its own, as in the check blocks.
fn fault_blocks(faults: &[(String, String)]) -> String {
    use crate::outputs::escape::text;
    let mut out = String::new();
    for (i, (area, message)) in faults.iter().enumerate() {
        if i > 0 {
            // A blank line first: `---` right under a paragraph would make it a heading.
            out.push_str("\n---\n\n");
        }
        out.push_str("**Check:** REFEREE-FAULT — the referee cannot do its job\n\n");
        out.push_str("**Severity:** BLOCKING\n\n");
        out.push_str("**Phase:** referee (not a pipeline check)\n\n");
        out.push_str(&format!(
            "**Description:** the referee's own fault ({}); until it is cleared no verdict can be trusted\n\n",
            text(area)
        ));
        out.push_str(&format!("**Evidence:** {}\n\n", text(message)));
        out.push_str(
            "**Required Action:** A human must look at the referee (permissions, disk space, the build directory) \
and restart it if needed; the referee removes this block when the fault clears.\n",
        );
    }
    out
}

/// The whole STOP file: the check blocks (if any) and the fault blocks (if any).
pub(super) fn compose(checks: Option<String>, faults: &[(String, String)]) -> Option<String> {
    match (checks, faults.is_empty()) {
        (None, true) => None,
        (Some(c), true) => Some(c),
        (None, false) => Some(format!(
            "# OBSERVER STOP — REFEREE FAULT\n\nThe referee itself cannot do its job. The orchestrator must not make the next phase transition until this file is gone.\n\n{}",
            fault_blocks(faults)
        )),
        (Some(c), false) => Some(format!(
            "{}\n\n---\n\n{}",
            c.trim_end_matches('\n'),
            fault_blocks(faults)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_make_their_own_blocks() {
        let f = vec![(
            "write".to_string(),
            "cannot write `OBSERVER-PASS-2.md`".to_string(),
        )];
        let only = compose(None, &f).unwrap();
        assert!(only.starts_with("# OBSERVER STOP"));
        assert!(only.contains("**Check:** REFEREE-FAULT"));
        let both = compose(Some("# OBSERVER STOP\n\n**Check:** OBS-27\n".into()), &f).unwrap();
        assert!(both.contains("OBS-27") && both.contains("REFEREE-FAULT"));
        assert_eq!(compose(None, &[]), None);
        // Every field is a paragraph of its own, and every `---` a rule, never a heading's
        // underline: a blank line before and after each.
        let two = [f[0].clone(), ("read".to_string(), "*x* <b>".to_string())];
        let text = compose(Some("# OBSERVER STOP\n\n**Check:** OBS-27\n".into()), &two).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("**") || *l == "---" {
                assert!(
                    lines[i - 1].is_empty(),
                    "no blank line before `{l}`:\n{text}"
                );
                if let Some(next) = lines.get(i + 1) {
                    assert!(next.is_empty(), "no blank line after `{l}`:\n{text}");
                }
            }
        }
        assert!(text.contains(r"**Evidence:** \*x\* \<b>"), "{text}");
    }
}
