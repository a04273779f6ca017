use super::*;

/// The entries, or the first error (of the file, else of an entry).
fn parse(text: &str) -> Result<Vec<GateEntry>, GateError> {
    let file = parse_gates(text.as_bytes(), "p3a-gate-results.json")?;
    match file.invalid.first() {
        Some(e) => Err(e.clone()),
        None => Ok(file.entries),
    }
}

fn message(text: &str) -> String {
    parse(text).unwrap_err().message
}

#[test]
fn canonical_form() {
    let entries = parse(
        r#"{"gates": [
                {"id": "GR-01", "result": "PASS", "source": "gate-runner"},
                {"id": "GR-02", "result": "FAIL"}
            ]}"#,
    )
    .unwrap();
    assert_eq!(
        entries,
        [
            GateEntry {
                id: "GR-01".into(),
                result: Some("PASS".into()),
                source: Some("gate-runner".into()),
                file: "p3a-gate-results.json".into(),
                index: 0,
            },
            GateEntry {
                id: "GR-02".into(),
                result: Some("FAIL".into()),
                source: None,
                file: "p3a-gate-results.json".into(),
                index: 1,
            },
        ]
    );
}

#[test]
fn top_level_array_and_alternative_keys() {
    let entries = parse(r#"[{"gate": "GR-03", "status": "pass"}, {"id": "GR-04"}]"#).unwrap();
    assert_eq!(entries[0].id, "GR-03");
    assert_eq!(entries[0].result.as_deref(), Some("pass"));
    assert_eq!(entries[1].result, None);
    assert_eq!(entries[1].index, 1);
}

#[test]
fn id_wins_over_gate_and_result_over_status() {
    let e = &parse(r#"[{"id": "A", "gate": "B", "result": "PASS", "status": "FAIL"}]"#).unwrap()[0];
    assert_eq!(e.id, "A");
    assert_eq!(e.result.as_deref(), Some("PASS"));
    let e = &parse(r#"[{"id": null, "gate": "B", "result": null, "status": "FAIL"}]"#).unwrap()[0];
    assert_eq!(e.id, "B");
    assert_eq!(e.result.as_deref(), Some("FAIL"));
}

#[test]
fn results_are_stringified() {
    let entries = parse(
            r#"[{"id": "a", "result": true}, {"id": "b", "result": 1}, {"id": "c", "result": 0.5},
                {"id": "d", "result": null}, {"id": "e", "result": ["x"]}, {"id": "f", "result": {"k": 1}},
                {"id": "g", "result": "", "source": 7}]"#,
        )
        .unwrap();
    let results: Vec<_> = entries.iter().map(|e| e.result.as_deref()).collect();
    assert_eq!(
        results,
        [
            Some("true"),
            Some("1"),
            Some("0.5"),
            None,
            Some(r#"["x"]"#),
            Some(r#"{"k":1}"#),
            Some("")
        ]
    );
    assert_eq!(entries[6].source.as_deref(), Some("7"));
}

#[test]
fn extra_keys_are_ignored() {
    let entries =
        parse(r#"{"version": 2, "gates": [{"id": "x", "result": "PASS", "notes": "n"}]}"#).unwrap();
    assert_eq!(entries.len(), 1);
}

#[test]
fn empty_arrays_are_valid() {
    assert!(parse("[]").unwrap().is_empty());
    assert!(parse(r#"{"gates": []}"#).unwrap().is_empty());
    assert!(parse(" \n[ ]\n ").unwrap().is_empty());
}

#[test]
fn byte_order_mark_is_ignored() {
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend_from_slice(br#"[{"id": "x"}]"#);
    assert_eq!(parse_gates(&bytes, "f").unwrap().entries[0].id, "x");
}

#[test]
fn invalid_utf8_has_a_position() {
    let err = parse_gates(b"[\n  {\"id\": \"\xff\"}]", "f").unwrap_err();
    assert_eq!(err.line, 2);
    assert_eq!(err.column, 11);
    assert!(err.message.contains("not valid UTF-8"), "{}", err.message);
    assert!(err.message.contains("offset 12"), "{}", err.message);
}

#[test]
fn syntax_errors_have_positions() {
    let err = parse("{\"gates\": [\n  {\"id\": \"x\",}\n]}").unwrap_err();
    assert_eq!(err.line, 2);
    assert!(err.column > 0);
    assert!(err.message.starts_with("invalid JSON: "), "{}", err.message);
    assert!(!err.message.contains(" at line "), "{}", err.message);
    let empty = parse("").unwrap_err();
    assert!(empty.message.contains("EOF"), "{}", empty.message);
    assert_eq!(empty.line, 1);
    assert!(parse("[] []").is_err());
    assert!(parse("{'gates': []}").is_err());
}

#[test]
fn wrong_shapes() {
    for (text, found) in [
        ("\"gates\"", "found a string"),
        ("42", "found a number"),
        ("null", "found null"),
        ("true", "found a boolean"),
        ("{}", "found an object without `gates`"),
        (r#"{"results": []}"#, "found an object without `gates`"),
        (r#"{"gates": {"id": "x"}}"#, "found `gates` as an object"),
        (r#"{"gates": null}"#, "found `gates` as null"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(err.message.starts_with(SHAPE), "{}", err.message);
        assert!(err.message.ends_with(found), "{}", err.message);
        assert_eq!((err.line, err.column), (0, 0));
    }
}

#[test]
fn entries_must_be_objects_with_ids() {
    assert_eq!(
        message(r#"{"gates": [{"id": "ok"}, "GR-01"]}"#),
        "gate entry `gates[1]` is not an object but a string"
    );
    assert_eq!(
        message(r#"[{"id": "ok"}, null]"#),
        "gate entry `[1]` is not an object but null"
    );
    assert_eq!(
        message(r#"[{"result": "PASS"}]"#),
        "gate entry `[0]` has no string or number `id` (or `gate`)"
    );
    assert_eq!(
        message(r#"[{"id": true, "gate": "x"}]"#),
        "gate entry `[0]` has no string or number `id` (or `gate`)"
    );
    assert_eq!(
        message(r#"[{"id": "  "}]"#),
        "gate entry `[0]` has an empty `id`"
    );
}

#[test]
fn keys_in_any_case() {
    let e = &parse(r#"[{"ID": "GR-01", "Status": "PASS", "SOURCE": "Manual"}]"#).unwrap()[0];
    assert_eq!(e.id, "GR-01");
    assert_eq!(e.result.as_deref(), Some("PASS"));
    assert_eq!(e.source.as_deref(), Some("Manual"));
    // Two spellings of one key are one key written twice: the entry reads two ways.
    assert_eq!(
        message(r#"[{"Id": "B", "id": "A"}]"#),
        "gate entry `[0]` has `id` twice (first as `Id` at line 1, column 3); \
             a reader could take either"
    );
}

#[test]
fn numeric_ids_are_ids_as_written() {
    let e =
        parse(r#"[{"id": 61, "result": "PASS"}, {"gate": 7}, {"id": null, "gate": 8}]"#).unwrap();
    let ids: Vec<_> = e.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["61", "7", "8"]);
}

#[test]
fn a_bad_entry_is_reported_with_its_position_and_keeps_the_others() {
    let text = "{\"gates\": [\n  {\"id\": \"GR-01\", \"result\": \"PASS\"},\n  {\"result\": \"PASS\"},\n  \"GR-03\",\n  {\"id\": \"GR-04\", \"source\": \"manual\"}\n]}";
    let file = parse_gates(text.as_bytes(), "f").unwrap();
    let ids: Vec<_> = file
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.index))
        .collect();
    assert_eq!(ids, [("GR-01", 0), ("GR-04", 3)]);
    let errors: Vec<_> = file.invalid.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        errors,
        [
            "gate entry `gates[1]` has no string or number `id` (or `gate`) at line 3, column 3",
            "gate entry `gates[2]` is not an object but a string at line 4, column 3"
        ]
    );
    // A top-level array, and strings holding brackets, commas and escaped quotes.
    let text = r#"[{"id": "a,[\"{"}, 5, {"id": "b"}]"#;
    let file = parse_gates(text.as_bytes(), "f").unwrap();
    assert_eq!(file.entries.len(), 2);
    assert_eq!((file.invalid[0].line, file.invalid[0].column), (1, 20));
    // A `gates` member inside another object is not the entries array.
    let text = r#"{"x": {"gates": [2]}, "gates": [{"id": "a"}, []]}"#;
    let file = parse_gates(text.as_bytes(), "f").unwrap();
    assert_eq!((file.invalid[0].line, file.invalid[0].column), (1, 46));
}

#[test]
fn a_key_written_twice_in_an_entry_makes_it_invalid_where_it_repeats() {
    let text = "{\"gates\": [\n  {\"id\": \"GR-01\"},\n  {\"id\": \"GR-02\", \"source\": \"manual\", \"source\": \"gate-runner\"},\n  {\"id\": \"GR-03\", \"Source\": \"manual\", \"source\": \"gate-runner\"},\n  {\"id\": \"GR-04\", \"notes\": {\"by\": 1, \"by\": 2}}\n]}";
    let file = parse_gates(text.as_bytes(), "f").unwrap();
    let ids: Vec<_> = file.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["GR-01"]);
    let errors: Vec<_> = file.invalid.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        errors,
        [
            "gate entry `gates[1]` has `source` twice (first at line 3, column 19); \
                 a reader could take either at line 3, column 39",
            "gate entry `gates[2]` has `source` twice (first as `Source` at line 4, column 19); \
                 a reader could take either at line 4, column 39",
            "gate entry `gates[3]` has `by` twice (first at line 5, column 29); \
                 a reader could take either at line 5, column 38",
        ]
    );
    // The top-level array form too.
    let file = parse_gates(br#"[{"id": "a", "result": "PASS", "RESULT": "FAIL"}]"#, "f").unwrap();
    assert!(file.entries.is_empty());
    assert_eq!((file.invalid[0].line, file.invalid[0].column), (1, 32));
    assert!(file.invalid[0]
        .message
        .starts_with("gate entry `[0]` has `RESULT` twice (first as `result`"));
}

#[test]
fn a_key_written_twice_outside_the_entries_invalidates_the_file() {
    let err = parse(
            "{\"gates\": [{\"id\": \"GR-01\", \"source\": \"manual\"}],\n \"gates\": [{\"id\": \"GR-01\"}]}",
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the top-level object has `gates` twice (first at line 1, column 2); \
             a reader could take either at line 2, column 2"
    );
    let err = parse(r#"{"Gates": [], "gates": [{"id": "a"}]}"#).unwrap_err();
    assert!(
        err.message.contains("`gates` twice (first as `Gates`"),
        "{err}"
    );
    let err = parse(r#"{"gates": [], "meta": {"v": 1, "v": 2}}"#).unwrap_err();
    assert!(
        err.message
            .starts_with("the object at `meta` has `v` twice"),
        "{err}"
    );
    // Keys the referee does not read may differ in case.
    assert!(parse(r#"{"Version": 1, "version": 2, "gates": []}"#).is_ok());
}

#[test]
fn gate_ids_name_gates_as_a_reader_would() {
    for id in [
        "GR-61", "gr-61", " GR-61 ", "GR61", "GR_61", "GR-061", "61", "061",
    ] {
        assert!(same_gate(id, "GR-61"), "{id:?}");
    }
    for id in ["GR-6", "GR-610", "BV-61", "GR-61a", "", "GR-", "6 1"] {
        assert!(!same_gate(id, "GR-61"), "{id:?}");
    }
    assert!(same_gate("Custom", "custom"));
    assert!(same_gate("GR-0", "GR-00"));
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let arrays = "[".repeat(100_000);
    let err = parse(&arrays).unwrap_err();
    assert!(err.message.contains("recursion limit"), "{}", err.message);
    assert_eq!(err.line, 1);
    let objects = "{\"a\":".repeat(100_000);
    assert!(parse(&objects)
        .unwrap_err()
        .message
        .contains("recursion limit"));
    let closed = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse(&closed).is_err());
    let inside = format!(
        r#"{{"gates": [{{"id": "x", "result": {}}}]}}"#,
        "[".repeat(10_000)
    );
    assert!(parse(&inside).is_err());
}

#[test]
fn file_name_is_recorded_verbatim() {
    let e = &parse_gates(br#"[{"id": "x"}]"#, "p3a-gate-results-refine.json")
        .unwrap()
        .entries[0];
    assert_eq!(e.file, "p3a-gate-results-refine.json");
}

#[test]
fn manual_sources() {
    for s in [
        "manual",
        "MANUAL override",
        "by hand",
        "hand-entered",
        "Human",
        " orchestrator ",
        "ORCHESTRATOR",
        // As a human reads them: fullwidth, Cyrillic `а`, a zero-width space.
        "ｍａｎｕａｌ",
        "m\u{430}nual",
        "man\u{200b}ual",
    ] {
        assert!(is_manual_source(s), "{s:?}");
    }
    for s in [
        "gate-runner",
        "",
        "humans",
        "orchestrator-bot",
        "automated",
        "playwright",
    ] {
        assert!(!is_manual_source(s), "{s:?}");
    }
}

#[test]
fn display_includes_position_when_known() {
    let positional = GateError {
        message: "invalid JSON: expected value".into(),
        line: 3,
        column: 7,
    };
    assert_eq!(
        positional.to_string(),
        "invalid JSON: expected value at line 3, column 7"
    );
    let shape = shape_error("bad shape".into());
    assert_eq!(shape.to_string(), "bad shape");
}

#[test]
fn describe_and_scalar_text() {
    assert_eq!(describe(&Value::Null), "null");
    assert_eq!(describe(&serde_json::json!([1])), "an array");
    assert_eq!(scalar_text(&serde_json::json!("s")), Some("s".into()));
    assert_eq!(scalar_text(&serde_json::json!(null)), None);
    assert_eq!(scalar_text(&serde_json::json!(-3)), Some("-3".into()));
}

/// Python's `json` writes a float that is not finite as `NaN`, `Infinity`, `-Infinity` (and
/// reads it back): a gate runner's metric so written leaves the file readable. In a string, or
/// run into a word, it is text; a non-finite result is no result a gate passes with.
#[test]
fn python_nonfinite_numbers_are_read() {
    let entries = parse(
        "{\"gates\": [\n  {\"id\": \"GR-01\", \"result\": \"PASS\", \"ratio\": NaN},\n  \
         {\"id\": \"GR-02\", \"result\": \"PASS\", \"max\": Infinity, \"min\": -Infinity,\n   \
         \"note\": \"NaN and Infinity in text\"},\n  {\"id\": \"GR-03\", \"result\": NaN}\n]}",
    );
    let file = parse_gates(
        "{\"gates\": [{\"id\": \"GR-03\", \"result\": NaN}]}".as_bytes(),
        "g.json",
    )
    .expect("readable");
    assert_ne!(file.entries[0].result.as_deref(), Some("PASS"));
    let entries = entries.expect("readable");
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[1].id, "GR-02");
    // A word is not a number: still invalid JSON, at its place.
    let e = parse("{\"gates\": [{\"id\": \"GR-01\", \"result\": NaNs}]}").unwrap_err();
    assert_eq!((e.line, e.column), (1, 38), "{e:?}");
    assert_eq!(finite_numbers("[\"NaN\", 1]"), None);
    assert_eq!(
        finite_numbers("[NaN,-Infinity]").as_deref(),
        Some("[0  ,0        ]")
    );
}
