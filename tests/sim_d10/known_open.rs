//! Classes of disagreement the simulator found and nobody has fixed yet. Each entry names the
//! step tags that produce it (a step or the run's style carrying all of them matches); the
//! random runs draw such steps again, so the committed suite passes, and each class has a named
//! regression test in `regress.rs` (ignored until it is fixed: then delete the entry and the
//! `#[ignore]`).

pub struct Open {
    /// The class: `kind:pass:check` and what produces it.
    pub class: &'static str,
    /// A step (with the run's style tags) matching all of these is drawn again.
    pub tags: &'static [&'static str],
    /// The regression test that reproduces it.
    pub test: &'static str,
    /// What goes wrong.
    pub note: &'static str,
}

pub const KNOWN_OPEN: &[Open] = &[
    Open {
        class: "utf16-tracker",
        tags: &["tracker-writer:powershell"],
        test: "open_tracker_utf16_powershell",
        note: "the tracker as PowerShell 5.1 saves it (UTF-16LE, BOM, CRLF) is not read: honest runs FAIL OBS-15, OBS-01, ...",
    },
    Open {
        class: "utf16-gate-results",
        tags: &["phase:3a", "writer:powershell"],
        test: "open_gate_results_utf16_powershell",
        note: "UTF-16LE gate results FAIL OBS-24 as invalid (and hide OBS-27, OBS-26)",
    },
    Open {
        class: "utf16-gate-results",
        tags: &["phase:r-3a", "writer:powershell"],
        test: "open_gate_results_utf16_powershell",
        note: "UTF-16LE gate results FAIL OBS-24 as invalid (and hide OBS-27, OBS-26)",
    },
    Open {
        class: "utf16-gate-results",
        tags: &["plant:OBS-27", "writer:powershell"],
        test: "open_gate_results_utf16_powershell",
        note: "UTF-16LE gate results FAIL OBS-24 as invalid (and hide OBS-27, OBS-26)",
    },
    Open {
        class: "utf16-gate-results",
        tags: &["plant:OBS-26", "writer:powershell"],
        test: "open_gate_results_utf16_powershell",
        note: "UTF-16LE gate results FAIL OBS-24 as invalid (and hide OBS-27, OBS-26)",
    },
    Open {
        class: "utf16-weaver",
        tags: &["phase:3c", "writer:powershell"],
        test: "open_weaver_utf16_powershell",
        note: "a UTF-16LE weaver verdict is not read: the run never completes",
    },
    Open {
        class: "utf16-weaver",
        tags: &["phase:r-3c", "writer:powershell"],
        test: "open_weaver_utf16_powershell",
        note: "a UTF-16LE weaver verdict is not read: the run never completes",
    },
    Open {
        class: "verdict-no-break-space",
        tags: &["style:verdict=NoBreakSpace"],
        test: "open_verdict_after_no_break_space",
        note: "`**VERDICT:**` + no-break space + SHIP is not a verdict: never complete",
    },
    Open {
        class: "git-dir-is-input",
        tags: &["noise:git-dir"],
        test: "open_git_dir_in_refine_inputs",
        note: "a `.git/` in refine-inputs/ is read as REFINE input: OBS-07 FAILs on its hook samples",
    },
    Open {
        class: "emacs-lock-is-input",
        tags: &["noise:emacs-lock"],
        test: "open_emacs_lock_in_refine_inputs",
        note: "an Emacs lock link in refine-inputs/ FAILs OBS-07",
    },
    Open {
        class: "refine-name-starts-pass-r",
        tags: &["noise:refine-name"],
        test: "open_refine_in_a_name_starts_pass_r",
        note: "a file name with \"refine\" starts pass R without a REFINE verdict",
    },
    Open {
        class: "rerun-resumes-old-run",
        tags: &["rerun"],
        test: "open_rerun_in_emptied_directory",
        note: "a second run in the emptied directory: the new referee resumes the old run, status --sync says STOP while verify says go",
    },
    Open {
        class: "linked-folder-not-read",
        tags: &["style:linked-shots"],
        test: "open_linked_screenshots_folder",
        note: "`screenshots` a link to a folder inside the build: OBS-10, OBS-11 FAIL",
    },
    Open {
        class: "spawned-column-header",
        tags: &["plant:OBS-01", "style:spawned=Spawned at"],
        test: "open_spawned_at_header_hides_an_early_spawn",
        note: "a spawn column headed `Spawned at` is not found: OBS-01 falls back to mtimes and misses a spawn before the scan",
    },
    Open {
        class: "spawned-column-header",
        tags: &["plant:OBS-01", "style:spawned=Spawned (UTC)"],
        test: "open_spawned_at_header_hides_an_early_spawn",
        note: "a spawn column headed `Spawned at` is not found: OBS-01 falls back to mtimes and misses a spawn before the scan",
    },
    Open {
        class: "prompt-compared-by-lines",
        tags: &["plant:OBS-06", "form:OneLine"],
        test: "open_refine_prompt_one_line",
        note: "the Pass-1 prompt re-wrapped or on one line passes OBS-06",
    },
    Open {
        class: "prompt-compared-by-lines",
        tags: &["plant:OBS-06", "form:Rewrapped"],
        test: "open_refine_prompt_one_line",
        note: "the Pass-1 prompt re-wrapped or on one line passes OBS-06",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:html-bold"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:entity"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:fullwidth"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:cyrillic"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:zero-width"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:nul"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:bidi"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "tracker-fail-as-seen",
        tags: &["plant:OBS-18", "spell:small-caps"],
        test: "open_tracker_fail_spelled_as_seen",
        note: "a BV result FAIL written `<b>FAIL</b>`, `&#70;AIL`, fullwidth, with a Cyrillic letter, a zero-width space, a NUL, a bidi override or small capitals is not read as FAIL: OBS-18 SKIPs",
    },
    Open {
        class: "struck-value-read",
        tags: &["plant:OBS-18", "form:StrikePass"],
        test: "open_struck_value_is_read",
        note: "a struck value (`~~PASS~~`, `<del>PASS</del>`, `<s>PASS</s>`) is read as the value: `~~PASS~~ FAIL` reads PASS (OBS-18), a struck PASS fills the row (OBS-15)",
    },
    Open {
        class: "struck-value-read",
        tags: &["plant:OBS-18", "form:DelPass"],
        test: "open_struck_value_is_read",
        note: "a struck value (`~~PASS~~`, `<del>PASS</del>`, `<s>PASS</s>`) is read as the value: `~~PASS~~ FAIL` reads PASS (OBS-18), a struck PASS fills the row (OBS-15)",
    },
    Open {
        class: "struck-value-read",
        tags: &["plant:OBS-18", "form:SPass"],
        test: "open_struck_value_is_read",
        note: "a struck value (`~~PASS~~`, `<del>PASS</del>`, `<s>PASS</s>`) is read as the value: `~~PASS~~ FAIL` reads PASS (OBS-18), a struck PASS fills the row (OBS-15)",
    },
    Open {
        class: "struck-value-read",
        tags: &["plant:OBS-15", "form:Strike"],
        test: "open_struck_value_is_read",
        note: "a struck value (`~~PASS~~`, `<del>PASS</del>`, `<s>PASS</s>`) is read as the value: `~~PASS~~ FAIL` reads PASS (OBS-18), a struck PASS fills the row (OBS-15)",
    },
    Open {
        class: "struck-value-read",
        tags: &["plant:OBS-15", "form:Del"],
        test: "open_struck_value_is_read",
        note: "a struck value (`~~PASS~~`, `<del>PASS</del>`, `<s>PASS</s>`) is read as the value: `~~PASS~~ FAIL` reads PASS (OBS-18), a struck PASS fills the row (OBS-15)",
    },
    Open {
        class: "struck-value-read",
        tags: &["plant:OBS-15", "form:S"],
        test: "open_struck_value_is_read",
        note: "a struck value (`~~PASS~~`, `<del>PASS</del>`, `<s>PASS</s>`) is read as the value: `~~PASS~~ FAIL` reads PASS (OBS-18), a struck PASS fills the row (OBS-15)",
    },
    Open {
        class: "code-block-rows-read",
        tags: &["plant:OBS-18", "form:decoy-Indent"],
        test: "open_rows_in_indented_code_and_pre",
        note: "table rows inside an indented code block or `<pre>` are read as tracker rows: they hide the real FAIL (OBS-18) or fill a missing row (OBS-15)",
    },
    Open {
        class: "code-block-rows-read",
        tags: &["plant:OBS-18", "form:decoy-Pre"],
        test: "open_rows_in_indented_code_and_pre",
        note: "table rows inside an indented code block or `<pre>` are read as tracker rows: they hide the real FAIL (OBS-18) or fill a missing row (OBS-15)",
    },
    Open {
        class: "code-block-rows-read",
        tags: &["plant:OBS-15", "form:InIndent"],
        test: "open_rows_in_indented_code_and_pre",
        note: "table rows inside an indented code block or `<pre>` are read as tracker rows: they hide the real FAIL (OBS-18) or fill a missing row (OBS-15)",
    },
    Open {
        class: "code-block-rows-read",
        tags: &["plant:OBS-15", "form:InPre"],
        test: "open_rows_in_indented_code_and_pre",
        note: "table rows inside an indented code block or `<pre>` are read as tracker rows: they hide the real FAIL (OBS-18) or fill a missing row (OBS-15)",
    },
    Open {
        class: "decoy-section-read",
        tags: &["plant:OBS-18", "form:decoy-Section"],
        test: "open_planned_schedule_section_is_read",
        note: "a BV row in a `## Planned Schedule` section is read as the BV gate's row: the real FAIL is missed (OBS-18)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-27", "key-spell:fullwidth"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-27", "key-spell:cyrillic"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-27", "key-spell:zero-width"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-27", "key-spell:nul"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-27", "key-spell:bidi"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-27", "key-spell:small-caps"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-24", "form:LookalikeKey(Cyrillic)"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-24", "form:LookalikeKey(Fullwidth)"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "json-key-as-seen",
        tags: &["plant:OBS-24", "form:LookalikeKey(ZeroWidth)"],
        test: "open_json_keys_read_as_seen",
        note: "a gate entry's key `source` spelled with a look-alike, zero-width, NUL, bidi or small capitals is not the key `source`: a manual source is missed (OBS-27); a second `result` so spelled is not a duplicate (OBS-24)",
    },
    Open {
        class: "bidi-and-small-caps",
        tags: &["plant:OBS-27", "spell:bidi"],
        test: "open_bidi_and_small_capitals_read_as_seen",
        note: "a word stored reversed under a right-to-left override, or in small capitals, is not read as the word a human sees: `launam` under U+202E passes OBS-27, `GR-12` so written passes OBS-21, `fix` passes OBS-07",
    },
    Open {
        class: "bidi-and-small-caps",
        tags: &["plant:OBS-27", "spell:small-caps"],
        test: "open_bidi_and_small_capitals_read_as_seen",
        note: "a word stored reversed under a right-to-left override, or in small capitals, is not read as the word a human sees: `launam` under U+202E passes OBS-27, `GR-12` so written passes OBS-21, `fix` passes OBS-07",
    },
    Open {
        class: "bidi-and-small-caps",
        tags: &["plant:OBS-21", "spell:bidi"],
        test: "open_bidi_and_small_capitals_read_as_seen",
        note: "a word stored reversed under a right-to-left override, or in small capitals, is not read as the word a human sees: `launam` under U+202E passes OBS-27, `GR-12` so written passes OBS-21, `fix` passes OBS-07",
    },
    Open {
        class: "bidi-and-small-caps",
        tags: &["plant:OBS-21", "spell:small-caps"],
        test: "open_bidi_and_small_capitals_read_as_seen",
        note: "a word stored reversed under a right-to-left override, or in small capitals, is not read as the word a human sees: `launam` under U+202E passes OBS-27, `GR-12` so written passes OBS-21, `fix` passes OBS-07",
    },
    Open {
        class: "bidi-and-small-caps",
        tags: &["plant:OBS-07", "spell:bidi"],
        test: "open_bidi_and_small_capitals_read_as_seen",
        note: "a word stored reversed under a right-to-left override, or in small capitals, is not read as the word a human sees: `launam` under U+202E passes OBS-27, `GR-12` so written passes OBS-21, `fix` passes OBS-07",
    },
    Open {
        class: "bidi-and-small-caps",
        tags: &["plant:OBS-07", "spell:small-caps"],
        test: "open_bidi_and_small_capitals_read_as_seen",
        note: "a word stored reversed under a right-to-left override, or in small capitals, is not read as the word a human sees: `launam` under U+202E passes OBS-27, `GR-12` so written passes OBS-21, `fix` passes OBS-07",
    },
    Open {
        class: "screenshot-not-an-image",
        tags: &["plant:OBS-11", "form:ZeroByte"],
        test: "open_screenshot_that_is_not_an_image",
        note: "a zero-byte `cold-look.png`, or one that is a text file, counts as a screenshot: OBS-11 PASSes",
    },
    Open {
        class: "screenshot-not-an-image",
        tags: &["plant:OBS-11", "form:TextFile"],
        test: "open_screenshot_that_is_not_an_image",
        note: "a zero-byte `cold-look.png`, or one that is a text file, counts as a screenshot: OBS-11 PASSes",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:stream"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:editor-backup"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:editor-remove"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:emacs"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "utf16-auditor-report",
        tags: &["phase:3b", "writer:powershell"],
        test: "open_auditor_reports_utf16_powershell",
        note: "auditor reports written by PowerShell 5.1 (UTF-16LE, BOM): `## Completion Manifest` is not found (OBS-23 FAIL in an honest run)",
    },
    Open {
        class: "utf16-auditor-report",
        tags: &["phase:r-3b", "writer:powershell"],
        test: "open_auditor_reports_utf16_powershell",
        note: "auditor reports written by PowerShell 5.1 (UTF-16LE, BOM): `## Completion Manifest` is not found (OBS-23 FAIL in an honest run)",
    },
    Open {
        class: "utf16-auditor-report",
        tags: &["plant:OBS-21", "writer:powershell"],
        test: "open_auditor_reports_utf16_powershell",
        note: "auditor reports written by PowerShell 5.1 (UTF-16LE, BOM): `## Completion Manifest` is not found (OBS-23 FAIL in an honest run)",
    },
    Open {
        class: "eventless-write-unseen",
        tags: &["live", "writer:hard-link"],
        test: "open_hard_link_write_unseen_by_sync",
        note: "a file changed through a hard link from outside the build makes no event: `status --sync` says go while `verify` FAILs it (OBS-27, OBS-21), and the late sighting reorders OBS-20",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:tar"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "tenth-auditor-live-differs",
        tags: &["live", "plant:OBS-19"],
        test: "open_tenth_auditor_live_and_verify_agree",
        note: "a tenth auditor report, then the integrative: `verify` FAILs OBS-20 beside OBS-19, the live STOP names OBS-19 alone",
    },
    Open {
        class: "utf16-builder-prompt",
        tags: &["phase:2", "writer:powershell"],
        test: "open_builder_prompt_utf16_powershell",
        note: "the Pass-1 builder prompt saved as UTF-16LE: the REFINE prompt that repeats it passes OBS-06",
    },
    Open {
        class: "utf16-builder-prompt",
        tags: &["plant:OBS-06", "writer:powershell"],
        test: "open_builder_prompt_utf16_powershell",
        note: "the Pass-1 builder prompt saved as UTF-16LE: the REFINE prompt that repeats it passes OBS-06",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:truncate"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:chunked"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:dd"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:cp"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "live-stop-on-tracker-save",
        tags: &["live", "tracker-writer:cp-a"],
        test: "open_live_stop_on_editor_saved_tracker",
        note: "the tracker saved non-atomically (truncate-then-write, chunks, slow `dd`, `cp`, `tar`, an editor's backup-and-rename or remove-then-write, Emacs) or streamed line by line: the live referee STOPs on the half-saved tracker (OBS-15, OBS-01, R:OBS-05, R:OBS-06) before it settles",
    },
    Open {
        class: "unreadable-gates-live-obs27",
        tags: &["live", "plant:OBS-24", "form:Truncated"],
        test: "open_truncated_gate_results_live_and_verify_agree",
        note: "gate results cut short (not JSON): the live STOP names OBS-27 beside OBS-24, `verify` OBS-24 alone",
    },
];

/// The open class whose tags `tags` all carry, if any (none when `SIM_D10_INCLUDE_OPEN` is set:
/// the bench counts the open classes too).
pub fn matching(tags: &[String]) -> Option<&'static Open> {
    if include_open() {
        return None;
    }
    matching_any(tags)
}

/// The open class whose tags `tags` all carry, whether or not the open classes are let in.
pub fn matching_any(tags: &[String]) -> Option<&'static Open> {
    KNOWN_OPEN
        .iter()
        .find(|o| o.tags.iter().all(|t| tags.iter().any(|x| x == t)))
}

pub fn include_open() -> bool {
    std::env::var_os("SIM_D10_INCLUDE_OPEN").is_some_and(|v| v != "0")
}
