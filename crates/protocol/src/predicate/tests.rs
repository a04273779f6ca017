//! The load-time rules of the predicates that serde cannot express, as typed refusals.

use super::*;

fn command(toml: &str) -> Result<SyntaxCommand, String> {
    toml::from_str::<SyntaxCommand>(toml).map_err(|e| e.message().to_string())
}

#[test]
fn a_syntax_command_is_refused_for_the_field_at_fault() {
    let ok = SyntaxCommand {
        ext: ".sh".into(),
        argv: vec!["bash".into(), "-n".into(), "{path}".into()],
        timeout_seconds: 10,
        replaces_builtin: Builtin::Kept,
    };
    assert_eq!(ok.validate(), Ok(()));
    let with = |f: &dyn Fn(&mut SyntaxCommand)| {
        let mut c = ok.clone();
        f(&mut c);
        c.validate().unwrap_err()
    };
    assert_eq!(
        with(&|c| c.ext = "a/b".into()),
        SyntaxCommandError::Ext { ext: "a/b".into() }
    );
    assert_eq!(
        with(&|c| c.argv.clear()),
        SyntaxCommandError::NoProgram { ext: ".sh".into() }
    );
    assert_eq!(
        with(&|c| c.argv[0] = "bin/bash".into()),
        SyntaxCommandError::RelativeProgram {
            program: "bin/bash".into()
        }
    );
    assert_eq!(
        with(&|c| c.argv.truncate(2)),
        SyntaxCommandError::NoPath {
            ext: ".sh".into(),
            program: "bash".into()
        }
    );
    let e = with(&|c| c.timeout_seconds = 0);
    assert_eq!(e, SyntaxCommandError::Timeout { seconds: 0 });
    assert_eq!(
        e.to_string(),
        "`timeout_seconds = 0`: a syntax command's timeout must be 1 to 600 seconds"
    );
    // Through serde, as a protocol file is read: the same message.
    let e = command("ext = \".sh\"\nargv = [\"bash\", \"-n\"]\n").unwrap_err();
    assert_eq!(
        e,
        "`.sh`: the syntax command `bash` needs `{path}` in an argument (it becomes the checked file's absolute path)"
    );
}

#[test]
fn a_json_predicate_is_refused_for_its_pointer_or_its_bounds() {
    let json = |toml: &str| toml::from_str::<Json>(toml).unwrap();
    assert_eq!(
        json("file = \"r.json\"\npath = \"a.b\"").validate(),
        Err(JsonPredicateError::NotAPointer { path: "a.b".into() })
    );
    assert_eq!(
        json("file = \"r.json\"\npath = \"a.b\"")
            .validate()
            .unwrap_err()
            .to_string(),
        "`a.b`: `path` is a JSON pointer: `\"\"` (the whole document) or starting with `/` (`/a/b`)"
    );
    assert_eq!(
        json("file = \"r.json\"\npath = \"/a~2\"").tokens(),
        Err(JsonPredicateError::BadEscape {
            path: "/a~2".into()
        })
    );
    assert_eq!(
        json("file = \"r.json\"\npath = \"/a~1b/~0\"").tokens(),
        Ok(vec!["a/b".to_string(), "~".to_string()])
    );
    assert_eq!(
        json("file = \"r.json\"\n\">=\" = nan").validate(),
        Err(JsonPredicateError::NotFinite { op: ">=" })
    );
    assert_eq!(
        json("file = \"r.json\"\nexists = false\n\"==\" = 1").validate(),
        Err(JsonPredicateError::AbsentCompared)
    );
    assert_eq!(
        json("file = \"r.json\"\nin = []").validate(),
        Err(JsonPredicateError::EmptyIn)
    );
}
