use super::*;
use std::path::Path;

#[test]
fn an_unreadable_file_keeps_its_io_error() {
    let path = Path::new("/nonexistent-referee-dir/p.toml");
    let e = Protocol::load_file(path).unwrap_err();
    let ProtocolError::Read(named::NamedFileError::Io { source, .. }) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    // The message names the file; the cause follows it as its source, not repeated in it.
    assert_eq!(
        e.to_string(),
        "cannot read protocol file `/nonexistent-referee-dir/p.toml`"
    );
    assert_eq!(source.to_string(), "No such file or directory (os error 2)");
    let dir = Protocol::load_file(Path::new("/")).unwrap_err();
    assert_eq!(
        dir.to_string(),
        "cannot read protocol file `/`: not a regular file"
    );
}

/// CC-05's command rules are checked when the protocol loads, each error at the rule
/// (the line and column of its offending value), like every other predicate field.
#[test]
fn syntax_command_rules_are_validated_at_load() {
    let cc = EMBEDDED[1].2;
    let rule = r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 10 }"#;
    let line = cc.lines().position(|l| l.contains(rule)).unwrap() + 1;
    let cases = [
        (
            r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 0 }"#,
            53,
            "`timeout_seconds = 0`: a syntax command's timeout must be 1 to 600 seconds",
        ),
        (
            r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 601 }"#,
            53,
            "`timeout_seconds = 601`",
        ),
        (
            r#"{ ext = ".bash", argv = ["bin/lint", "{path}"] }"#,
            29,
            "`bin/lint`: a syntax command's program must be a name looked up on `PATH`",
        ),
        (
            r#"{ ext = ".bash", argv = ["bash", "-n"] }"#,
            12,
            "`.bash`: the syntax command `bash` needs `{path}` in an argument",
        ),
        (
            r#"{ ext = ".bash", argv = [] }"#,
            12,
            "`.bash`: a syntax command needs `argv` with a program",
        ),
        (
            r#"{ ext = "*.sh", argv = ["bash", "-n", "{path}"] }"#,
            12,
            "`*.sh`: a syntax command's `ext` must be a file extension",
        ),
        (
            r#"{ ext = ".bash", argv = ["bash", "{path}"], timeout = "5s" }"#,
            47,
            "unknown field `timeout`, expected one of `ext`, `argv`, `timeout_seconds`",
        ),
    ];
    for (edit, column, message) in cases {
        let text = cc.replacen(rule, edit, 1);
        let e = Protocol::parse(&text, "p.toml").unwrap_err();
        let ProtocolError::Invalid {
            line: l,
            column: c,
            message: m,
            ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!((*l, *c), (line, column), "{edit}: {e}");
        assert!(m.starts_with(message), "{edit}: {e}");
    }
    // `parses = false` is refused; a default timeout is filled in; a rule's strings take
    // variables and are validated once substituted.
    let text = cc.replacen("{ task_record = true }", "{ parses = false }", 1);
    let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
    assert!(e.contains("`parses = false` judges nothing"), "{e}");
    let text = cc.replacen(
        rule,
        r#"{ ext = ".bash", argv = ["${shell}", "-n", "{path}"] }"#,
        1,
    );
    let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
    assert!(e.contains("undefined variable `${shell}`"), "{e}");
    let with_var = |shell: &str| {
        text.replacen(
            "[vars.main]\n",
            &format!("[vars.main]\nshell = \"{shell}\"\n"),
            1,
        )
    };
    let e = Protocol::parse(&with_var("tools/sh"), "p.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("in check `CC-05`: `tools/sh`: a syntax command's program"),
        "{e}"
    );
    let p = Protocol::parse(&with_var("/bin/bash"), "p.toml").unwrap();
    let (_, cc05) = p.instances_of("CC-05")[0];
    let predicate::Predicate::Parses(parses) = &cc05.predicate else {
        panic!("{:?}", cc05.predicate)
    };
    assert_eq!(parses.commands[1].argv, ["/bin/bash", "-n", "{path}"]);
    assert_eq!(
        parses.commands[1].timeout_seconds,
        predicate::SyntaxCommand::DEFAULT_TIMEOUT_SECONDS
    );
}

/// `replaces_builtin = true` on a CC-05 command rule reaches the syntax check; it defaults to
/// false and must be a boolean.
#[test]
fn syntax_command_may_replace_the_builtin_parser() {
    let cc = EMBEDDED[1].2;
    let rule = r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 10 }"#;
    let edit = |with: &str| {
        let tsc = format!(r#"{{ ext = ".ts", argv = ["tsc", "--noEmit", "{{path}}"]{with} }}"#);
        cc.replacen(rule, &format!("{rule},\n  {tsc}"), 1)
    };
    let rules = |text: &str| {
        let p = Protocol::parse(text, "p.toml").unwrap();
        let (_, cc05) = p.instances_of("CC-05")[0];
        let predicate::Predicate::Parses(parses) = &cc05.predicate else {
            panic!("{:?}", cc05.predicate)
        };
        parses.commands.iter().map(|c| c.rule()).collect::<Vec<_>>()
    };
    let replacing = rules(&edit(", replaces_builtin = true"));
    assert_eq!(replacing.len(), 3);
    assert!(replacing[2].replaces_builtin && replacing[2].ext == ".ts");
    assert!(!replacing[0].replaces_builtin && !replacing[1].replaces_builtin);
    assert!(!rules(&edit(""))[2].replaces_builtin);
    let e = Protocol::parse(&edit(r#", replaces_builtin = "yes""#), "p.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("invalid type: string \"yes\", expected a boolean"),
        "{e}"
    );
}

/// A description shows the variables it names (CC-01 lists the protected globs), in
/// `explain` and in the evidence of a pass that has not run; an undefined one is an error.
#[test]
fn descriptions_show_their_variables() {
    let p = Protocol::load("code-change").unwrap();
    let text = explain::explain(&p, "CC-01").unwrap();
    assert!(!text.contains("${"), "{text}");
    assert!(
        text.contains("No protected path (**/grind_spawner*.py, **/orchestrator.py, **/roles.py,"),
        "{text}"
    );
    let (_, cc01) = p.instances_of("CC-01")[0];
    assert!(cc01.def.description.contains("${protected}"));
    assert!(!cc01.description.contains("${"), "{}", cc01.description);
    let text = EMBEDDED[1].2.replacen(
        "protected path (${protected})",
        "protected path (${guarded})",
        1,
    );
    let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
    assert!(
        e.contains("in check `CC-01`: in `description`: undefined variable `${guarded}`"),
        "{e}"
    );
}

#[test]
fn lines_agree_with_line_col() {
    for text in ["", "a", "\n", "ab\ncd\n\nef", "é\nü\n"] {
        let lines = Lines::new(text);
        for offset in 0..=text.len() {
            assert_eq!(
                lines.line(offset),
                line_col(text, offset).0,
                "{text:?} @ {offset}"
            );
        }
    }
}

/// Every predicate an evaluation will judge is fully instantiated: no `${var}` left, so
/// every glob and regex compiles (an uninstantiated deadline never holds).
#[test]
fn every_instance_is_fully_instantiated() {
    let p = Protocol::default_protocol().unwrap();
    for pass in &p.passes {
        let mut preds = vec![&pass.trigger];
        preds.extend(pass.deadline.iter());
        for c in &pass.checks {
            preds.push(&c.predicate);
            preds.extend(c.deadline.iter().chain(c.when.iter()));
        }
        for pred in preds {
            let text = serde_json::to_string(pred).unwrap();
            assert!(!text.contains("${"), "pass {}: {text}", pass.id);
        }
    }
}

#[test]
fn repeats_use_the_variant_and_the_source_pass_deadline() {
    let p = Protocol::default_protocol().unwrap();
    let r = p.passes.iter().find(|x| x.id == "R").unwrap();
    let obs19 = r.checks.iter().find(|c| c.def.id == "OBS-19").unwrap();
    assert_eq!(obs19.variant, "refine");
    let deadline = serde_json::to_string(obs19.deadline.as_ref().unwrap()).unwrap();
    assert!(
        deadline.contains("p3b-pa-integrative-refine.md"),
        "{deadline}"
    );
    // Pass 4 is due "at once"; its repeat is due when the REFINE weaver exists.
    let obs26 = r.checks.iter().find(|c| c.def.id == "OBS-26").unwrap();
    let deadline = serde_json::to_string(obs26.deadline.as_ref().unwrap()).unwrap();
    assert!(deadline.contains("p3c-weaver*-refine*.md"), "{deadline}");
    // The main pass 2 deadline names the main auditor reports.
    let two = p.passes.iter().find(|x| x.id == "2").unwrap();
    let obs01 = two.checks.iter().find(|c| c.def.id == "OBS-01").unwrap();
    let deadline = serde_json::to_string(obs01.deadline.as_ref().unwrap()).unwrap();
    assert!(deadline.contains("p3b-pa-auditor-*.md"), "{deadline}");
}

#[test]
fn may_read_names_the_files_d10_reads_and_not_the_ones_it_only_counts() {
    let p = Protocol::load("d10").unwrap();
    // Read by the text and heading rules, the verdict, the tracker's rules, the gate rules.
    for rel in [
        "p3b-pa-auditor-A.md",
        "p3b-pa-auditor-C-refine.md",
        "p3c-weaver.md",
        "EXECUTION-TRACKER.md",
        "p3a-gate-results.json",
    ] {
        assert!(p.may_read(rel), "{rel}");
    }
    // Only counted, or only their existence and times matter.
    for rel in ["screenshots/1440/cold-look.png", "screenshots", "notes.txt"] {
        assert!(!p.may_read(rel), "{rel}");
    }
    // A task protocol reads through the workspace, never a build-directory listing.
    assert!(!Protocol::load("code-change").unwrap().may_read("src/a.py"));
}

/// The rules serde cannot express, each refused at load with its own reason, located at the
/// check; a `signature` and named secret rules the same way, at their field.
#[test]
fn predicates_serde_cannot_judge_are_refused_with_their_reason() {
    let with = |predicate: &str| {
        format!(
            "schema_version = 1\nid = \"t\"\nversion = \"1\"\ntitle = \"T\"\ndescription = \"d\"\n\
             [[pass]]\nid = \"0\"\ntitle = \"P\"\ntrigger = {{ exists = \"a.md\" }}\n\
             checks = [\"C-1\"]\n\
             [[check]]\nid = \"C-1\"\nseverity = \"blocking\"\ntitle = \"t\"\n\
             description = \"d\"\naction = \"a\"\nrecommendation = \"r\"\n\
             predicate = {predicate}\n"
        )
    };
    assert!(
        Protocol::parse(&with("{ exists = \"a.md\" }"), "p.toml").is_ok(),
        "the frame itself loads"
    );
    let cases = [
        ("{ all = [] }", "`all` / `any` need at least one predicate"),
        (
            r#"{ file_set = { glob = "*.md", key = "x", expect = ["a"] } }"#,
            "`file_set.key` `x` needs a capture group for the key",
        ),
        (
            r#"{ time_order = { chain = [{ mtime = "a" }], fields = ["F"] } }"#,
            "`time_order` takes `chain` or `fields`, not both",
        ),
        (
            r#"{ time_order = { fields = ["F"] } }"#,
            "`time_order` needs at least two elements",
        ),
        (
            r#"{ text = { min_chars = 3 } }"#,
            "`text` needs `files` or `fields`",
        ),
        (
            r#"{ text = { fields = ["F"] } }"#,
            "`text` needs at least one of `require`, `forbid`, `min_chars`, `extract`",
        ),
        (
            r#"{ dissimilar = { files = ["a", "b"], threshold = 1.5 } }"#,
            "`threshold` `1.5` must be between 0 and 1",
        ),
        (
            "{ fill_rate = { min = -1.0 } }",
            "`fill_rate.min` `-1` must be between 0 and 1",
        ),
        (
            r#"{ heading = { files = "a.md", level = 7, text = "T" } }"#,
            "heading level `7` must be 1 to 6",
        ),
        (
            r#"{ distinct = ["F"] }"#,
            "`distinct` needs at least two fields",
        ),
        (
            "{ has_time = { first_of = [] } }",
            "`first_of` needs at least one reference",
        ),
        (
            r#"{ exists = "${missing}" }"#,
            "undefined variable `${missing}`",
        ),
    ];
    for (predicate, reason) in cases {
        let e = Protocol::parse(&with(predicate), "p.toml").unwrap_err();
        let ProtocolError::Invalid { message, .. } = &e else {
            panic!("{predicate}: {e:?}")
        };
        assert_eq!(message, &format!("in check `C-1`: {reason}"), "{predicate}");
    }

    let d10 = EMBEDDED[0].2;
    let text = d10.replacen("signature = \"png\"", "signature = \"zip\"", 1);
    let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
    assert!(
        e.contains(
            "`signature` is a format (png, jpeg, gif, webp, pdf) or hex bytes (`89 50 4E 47`), \
             not `zip`"
        ),
        "{e}"
    );
    let cc = EMBEDDED[1].2;
    let text = cc.replacen(
        "secrets = \"embedded\"",
        "secrets = \"/nonexistent-referee-dir/rules.toml\"",
        1,
    );
    let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
    assert!(
        e.contains(
            "secret rules: cannot read secret rules file `/nonexistent-referee-dir/rules.toml`"
        ),
        "{e}"
    );
}
