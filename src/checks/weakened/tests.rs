use super::*;

fn run(files: &[(&str, Option<&str>, Option<&str>)]) -> Vec<String> {
    let pairs: Vec<Pair<'_>> = files
        .iter()
        .map(|(path, old, new)| Pair {
            path,
            old: *old,
            new: *new,
        })
        .collect();
    findings(&pairs).iter().map(Finding::evidence).collect()
}

fn one(path: &str, old: &str, new: &str) -> Vec<String> {
    run(&[(path, Some(old), Some(new))])
}

const PY: &str =
    "import pytest\n\ndef test_a():\n    assert f(1) == 2\n\ndef test_b():\n    assert f(2) == 3\n";

#[test]
fn python_tests_skips_asserts_and_suppressions() {
    let skipped = PY.replace(
        "def test_b",
        "@pytest.mark.skip(reason=\"flaky\")\ndef test_b",
    );
    assert_eq!(
        one("tests/test_f.py", PY, &skipped),
        ["tests/test_f.py:6: test skipped: `pytest.mark.skip` added"]
    );
    let removed = "import pytest\n\ndef test_a():\n    assert f(1) == 2\n";
    let got = one("tests/test_f.py", PY, removed);
    assert!(
        got.contains(&"tests/test_f.py:6 (baseline): test removed: `test_b`".to_string()),
        "{got:?}"
    );
    assert!(
        got.contains(
            &"tests/test_f.py:7 (baseline): assertion removed: `assert f(2) == 3`".to_string()
        ),
        "{got:?}"
    );
    let no_assert = PY.replace("    assert f(2) == 3\n", "    f(2)\n");
    assert_eq!(
        one("tests/test_f.py", PY, &no_assert),
        ["tests/test_f.py:7 (baseline): assertion removed: `assert f(2) == 3`"]
    );
    let skip_call = PY.replace(
        "    assert f(2) == 3\n",
        "    pytest.skip(\"later\")\n    assert f(2) == 3\n",
    );
    assert_eq!(
        one("tests/test_f.py", PY, &skip_call),
        ["tests/test_f.py:7: test skipped: `pytest.skip(` added"]
    );
    let noqa = "x = 1\n";
    assert_eq!(
        one(
            "src/m.py",
            noqa,
            "x = 1  # noqa: E501\ny = g()  # type: ignore[attr]\n"
        ),
        [
            "src/m.py:1: check suppressed: `# noqa` added",
            "src/m.py:2: check suppressed: `# type: ignore` added"
        ]
    );
}

#[test]
fn honest_edits_of_tests_are_not_findings() {
    // A test added, one renamed, assertions rewritten one for one, a test moved to another file,
    // a line holding a suppression edited, a suppression moved within the file.
    let more = format!("{PY}\ndef test_c():\n    assert f(3) == 4\n");
    assert!(one("tests/test_f.py", PY, &more).is_empty());
    assert!(one(
        "tests/test_f.py",
        PY,
        &PY.replace("test_b", "test_b_renamed")
    )
    .is_empty());
    assert!(one(
        "tests/test_f.py",
        PY,
        &PY.replace("assert f(2) == 3", "self.assertEqual(f(2), 3)")
    )
    .is_empty());
    let a_only = "import pytest\n\ndef test_a():\n    assert f(1) == 2\n";
    let b_only = "def test_b():\n    assert f(2) == 3\n";
    assert!(run(&[
        ("tests/test_f.py", Some(PY), Some(a_only)),
        ("tests/test_g.py", None, Some(b_only)),
    ])
    .is_empty());
    // A file renamed (removed and added) keeps its tests, skips and suppressions.
    let skipped = PY.replace("def test_b", "@pytest.mark.skip\ndef test_b");
    assert!(run(&[
        ("tests/test_old.py", Some(&skipped), None),
        ("tests/test_new.py", None, Some(&skipped)),
    ])
    .is_empty());
    assert!(one(
        "src/m.py",
        "x = f()  # noqa: E501\n",
        "x = f(1)  # noqa: E501\n"
    )
    .is_empty());
    assert!(one(
        "src/m.py",
        "a = 1  # noqa\nb = 2\n",
        "a = 1\nb = 2  # noqa\n"
    )
    .is_empty());
    // Comments and prose mention the markers without using them.
    assert!(one(
        "tests/test_f.py",
        PY,
        &format!("{PY}# we never use pytest.skip( here\n")
    )
    .is_empty());
    assert!(one(
        "README.md",
        "x\n",
        "Use `it.skip` and `# noqa` sparingly; fail_under = 10\n"
    )
    .is_empty());
}

#[test]
fn javascript_rust_and_go() {
    let js = "describe('f', () => {\n  it('adds', () => {\n    expect(f(1)).toBe(2);\n  });\n});\n";
    assert_eq!(
        one(
            "src/f.test.ts",
            js,
            &js.replace("it('adds'", "it.skip('adds'")
        ),
        ["src/f.test.ts:2: test skipped: `describe/it/test.skip` added"]
    );
    assert_eq!(
        one(
            "src/f.test.ts",
            js,
            &js.replace("describe('f'", "describe.only('f'")
        ),
        ["src/f.test.ts:1: test skipped: `describe/it/test.only` added"]
    );
    // A project's own test wrapper counts as a test; `@ts-expect-error` in a test is a type test.
    let wrapped = "import {browserTest} from './helpers.js';\nbrowserTest('aborts', async t => {\n  t.pass();\n});\n";
    assert!(
        one(
            "test/browser.ts",
            "test.serial('aborts', withPage, async t => {});\n",
            wrapped
        )
        .is_empty(),
        "the same test through the project's wrapper"
    );
    assert_eq!(
        one(
            "test/browser.ts",
            wrapped,
            "import {browserTest} from './helpers.js';\n"
        ),
        ["test/browser.ts:2 (baseline): test removed: `aborts`"]
    );
    assert!(one(
        "test/types.ts",
        "f(1);\n",
        "f(1);\n// @ts-expect-error\nf('1');\n"
    )
    .is_empty());
    assert_eq!(
        one(
            "src/types.ts",
            "f(1);\n",
            "f(1);\n// @ts-expect-error\nf('1');\n"
        ),
        ["src/types.ts:2: check suppressed: `@ts-expect-error` added"]
    );
    assert_eq!(
        one(
            "src/f.ts",
            "let x: number = f();\n",
            "// @ts-ignore\nlet x: number = f();\n"
        ),
        ["src/f.ts:1: check suppressed: `@ts-ignore` added"]
    );
    assert_eq!(
        one(
            "src/f.js",
            "f();\n",
            "f(); // eslint-disable-line no-undef\n"
        ),
        ["src/f.js:1: check suppressed: `eslint-disable` added"]
    );
    let rs = "pub fn f() -> u8 { 1 }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn one() {\n        assert_eq!(super::f(), 1);\n    }\n}\n";
    assert_eq!(
        one(
            "src/lib.rs",
            rs,
            &rs.replace("    #[test]\n", "    #[test]\n    #[ignore]\n")
        ),
        ["src/lib.rs:6: test skipped: `#[ignore]` added"]
    );
    assert_eq!(
        one(
            "src/lib.rs",
            rs,
            &rs.replace(
                "        assert_eq!(super::f(), 1);\n",
                "        let _ = super::f();\n"
            )
        ),
        ["src/lib.rs:7 (baseline): assertion removed: `assert_eq!(super::f(), 1);`"]
    );
    // An assertion in library code is not test code.
    let lib = "pub fn f(i: usize) -> usize {\n    assert!(i < 9);\n    i\n}\n";
    assert!(one(
        "src/lib.rs",
        lib,
        "pub fn f(i: usize) -> usize {\n    i\n}\n"
    )
    .is_empty());
    assert_eq!(
        one("src/lib.rs", lib, &format!("#[allow(dead_code)]\n{lib}")),
        ["src/lib.rs:1: check suppressed: `#[allow(...)]` added"]
    );
    let go = "package f\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) {\n\tif F() != 1 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n";
    assert_eq!(
        one(
            "f_test.go",
            go,
            &go.replace(
                "func TestF(t *testing.T) {\n",
                "func TestF(t *testing.T) {\n\tt.Skip(\"later\")\n"
            )
        ),
        ["f_test.go:6: test skipped: `t.Skip` added"]
    );
    let got = run(&[("f_test.go", Some(go), None)]);
    assert_eq!(
        got,
        [
            "f_test.go:1 (baseline): test removed: the file, with 1 test(s): `TestF`",
            "f_test.go:1 (baseline): assertion removed: the file, with 1 assertion(s)"
        ]
    );
}

#[test]
fn coverage_thresholds() {
    let cfg = "[report]\nfail_under = 90\nshow_missing = true\n";
    assert_eq!(
        one(".coveragerc", cfg, &cfg.replace("90", "80")),
        [".coveragerc:2: coverage gate lowered: `fail_under` lowered from 90 to 80"]
    );
    assert!(one(".coveragerc", cfg, &cfg.replace("90", "95")).is_empty());
    assert_eq!(
        one(".coveragerc", cfg, "[report]\nshow_missing = true\n"),
        [".coveragerc:2 (baseline): coverage gate lowered: `fail_under` 90 removed"]
    );
    // Moved from one file to another, the same value: nothing lowered.
    assert!(run(&[
        (".coveragerc", Some(cfg), None),
        (
            "pyproject.toml",
            Some("[project]\nname = \"x\"\n"),
            Some("[project]\nname = \"x\"\n[tool.coverage.report]\nfail_under = 90\n")
        ),
    ])
    .is_empty());
    let ci = "test:\n  script:\n    - pytest --cov=x --cov-fail-under=85\n";
    assert_eq!(
        one(".gitlab-ci.yml", ci, &ci.replace("85", "50")),
        [".gitlab-ci.yml:3: coverage gate lowered: `--cov-fail-under` lowered from 85 to 50"]
    );
    let jest = "module.exports = {\n  coverageThreshold: {\n    global: { branches: 80, lines: 90 },\n  },\n};\n";
    assert_eq!(
        one(
            "jest.config.js",
            jest,
            &jest.replace("lines: 90", "lines: 70")
        ),
        ["jest.config.js:3: coverage gate lowered: `coverage lines` lowered from 90 to 70"]
    );
}

#[test]
fn tests_left_out_by_configuration() {
    let ini = "[pytest]\naddopts = -ra\n";
    assert_eq!(
        one("pytest.ini", ini, "[pytest]\naddopts = -ra --ignore=tests/test_slow.py\n"),
        ["pytest.ini:2: test skipped: `pytest --ignore/--deselect/-k not` added: `addopts = -ra --ignore=tests/test_slow.py`"]
    );
    let ci = "test:\n  script:\n    - pytest -q\n";
    assert_eq!(
        one(".gitlab-ci.yml", ci, &ci.replace("pytest -q", "pytest -q -k 'not network'")),
        [".gitlab-ci.yml:3: test skipped: `pytest --ignore/--deselect/-k not` added: `- pytest -q -k 'not network'`"]
    );
    assert_eq!(
        one("tests/conftest.py", "import pytest\n", "import pytest\ncollect_ignore = [\"test_io.py\"]\n"),
        ["tests/conftest.py:2: test skipped: `collect_ignore` added: `collect_ignore = [\"test_io.py\"]`"]
    );
    assert_eq!(
        one("Makefile", "test:\n\tcargo test --workspace\n", "test:\n\tcargo test --workspace --exclude slow\n"),
        ["Makefile:2: test skipped: `cargo test --skip/--exclude` added: `cargo test --workspace --exclude slow`"]
    );
    // A linter's own `--ignore` is a relaxed linter; another tool's `--ignore` is nothing; an
    // option kept while its line is edited is not added.
    assert_eq!(
        one("Makefile", "lint:\n\truff check\n", "lint:\n\truff check --ignore E501\n"),
        ["Makefile:2: lint or type check relaxed: `a linter's rules ignored on its command line` added: `ruff check --ignore E501`"]
    );
    assert!(one(
        "Makefile",
        "i:\n\tpip install x\n",
        "i:\n\tpip install --ignore-installed x\n"
    )
    .is_empty());
    assert!(one(
        "pytest.ini",
        "[pytest]\naddopts = --ignore=a\n",
        "[pytest]\naddopts = -q --ignore=a\n"
    )
    .is_empty());
}

#[test]
fn lint_configuration() {
    let py = "[tool.ruff.lint]\nselect = [\"E\", \"F\", \"B\"]\nignore = [\"E501\"]\n\n[tool.mypy]\nstrict = true\n";
    assert_eq!(
        one("pyproject.toml", py, &py.replace("[\"E501\"]", "[\"E501\", \"B008\"]")),
        ["pyproject.toml:3: lint or type check relaxed: `tool.ruff.lint.ignore` exempts more: `B008`"]
    );
    assert_eq!(
        one("pyproject.toml", py, &py.replace("\"E\", \"F\", \"B\"", "\"E\", \"F\"")),
        ["pyproject.toml:2: lint or type check relaxed: `tool.ruff.lint.select` runs fewer rules: `B` no longer selected"]
    );
    assert_eq!(
        one(
            "pyproject.toml",
            py,
            &py.replace("strict = true", "strict = false")
        ),
        ["pyproject.toml:6: lint or type check relaxed: `tool.mypy.strict` no longer true"]
    );
    assert!(
        one("pyproject.toml", py, &py.replace("[\"E501\"]", "[]")).is_empty(),
        "stricter"
    );
    let cfg = "[flake8]\nmax-line-length = 100\nextend-ignore =\n    E203,\n";
    assert_eq!(
        one("setup.cfg", cfg, &format!("{cfg}    W503,\n")),
        ["setup.cfg:3: lint or type check relaxed: `flake8.extend-ignore` exempts more: `W503`"]
    );
    let cargo = "[package]\nname = \"x\"\n\n[lints.clippy]\nunwrap_used = \"deny\"\n";
    assert_eq!(
        one("Cargo.toml", cargo, &cargo.replace("\"deny\"", "\"allow\"")),
        ["Cargo.toml:5: lint or type check relaxed: lint `lints.clippy.unwrap_used` lowered to `allow`"]
    );
    let ts = "{\n  \"compilerOptions\": {\n    \"strict\": true\n  }\n}\n";
    assert_eq!(
        one("tsconfig.json", ts, &ts.replace("true", "false")),
        ["tsconfig.json:3: lint or type check relaxed: `strict` set to false"]
    );
    let es = "{\n  \"rules\": {\n    \"no-unused-vars\": \"error\"\n  }\n}\n";
    assert_eq!(
        one(".eslintrc.json", es, &es.replace("\"error\"", "\"off\"")),
        [".eslintrc.json:3: lint or type check relaxed: rule switched off or down: `\"no-unused-vars\": \"off\"`"]
    );
}

const GH: &str = "name: CI\non:\n  push:\n  pull_request:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - name: Lint\n        run: ruff check .\n      - name: Test\n        run: pytest\n  docs:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make docs\n";

#[test]
fn ci_workflows() {
    let p = ".github/workflows/ci.yml";
    assert_eq!(
        one(
            p,
            GH,
            &GH.replace(
                "        run: pytest\n",
                "        run: pytest\n        continue-on-error: true\n"
            )
        ),
        [format!(
            "{p}:14: CI weakened: `continue-on-error: true` added"
        )]
    );
    assert_eq!(
        one(
            p,
            GH,
            &GH.replace("      - name: Lint\n        run: ruff check .\n", "")
        ),
        [format!(
            "{p}:6: CI weakened: job `test`: 1 step(s) removed: `Lint`"
        )]
    );
    assert_eq!(
        one(
            p,
            GH,
            &GH.replace(
                "  docs:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make docs\n",
                ""
            )
        ),
        [format!(
            "{p}:14 (baseline): CI weakened: job `docs` removed"
        )]
    );
    assert_eq!(
        one(p, GH, &GH.replace("run: pytest", "run: pytest || true")),
        [format!("{p}:13: CI weakened: a command's failure ignored (`|| true`, `|| exit 0`, `set +e`) added")]
    );
    assert_eq!(
        one(p, GH, &GH.replace("  pull_request:\n", "")),
        [format!(
            "{p}:2: CI weakened: the workflow no longer runs on `pull_request`"
        )]
    );
    assert_eq!(
        one(
            p,
            GH,
            &GH.replace(
                "  docs:\n    runs-on",
                "  docs:\n    if: false\n    runs-on"
            )
        ),
        [format!("{p}:15: CI weakened: `if: false` added")]
    );
    // Honest: a step renamed, an action's version bumped, a step added, a job renamed.
    assert!(one(p, GH, &GH.replace("checkout@v4", "checkout@v5")).is_empty());
    assert!(one(
        p,
        GH,
        &GH.replace("run: pytest", "run: pytest -q\n      - run: mypy .")
    )
    .is_empty());
    assert!(one(p, GH, &GH.replace("  docs:", "  documentation:")).is_empty());
    // A workflow split in two files keeps its jobs.
    let (first, second) = GH.split_at(GH.find("  docs:").unwrap());
    let docs = format!("name: Docs\non: [push, pull_request]\njobs:\n{second}");
    assert!(run(&[
        (p, Some(GH), Some(first)),
        (".github/workflows/docs.yml", None, Some(&docs))
    ])
    .is_empty());
    // A file that does not parse is CC-05's to report.
    assert!(one(p, GH, "jobs: [\n").is_empty());
}

#[test]
fn reasons_are_an_object_of_paths() {
    let raw = |v: serde_json::Value| v.as_object().cloned().unwrap();
    let r = reasons(&raw(
        serde_json::json!({"weakened": {"./tests/a.py": "gone", "ci/": "moved"}}),
    ))
    .unwrap();
    assert_eq!(
        reason_for(&r, "tests/a.py").map(String::as_str),
        Some("gone")
    );
    assert_eq!(
        reason_for(&r, "ci/x.yml").map(String::as_str),
        Some("moved")
    );
    assert_eq!(reason_for(&r, "tests/b.py"), None);
    assert!(reasons(&raw(serde_json::json!({}))).unwrap().is_empty());
    assert!(reasons(&raw(serde_json::json!({"weakened": null})))
        .unwrap()
        .is_empty());
    for bad in [
        serde_json::json!({"weakened": "because"}),
        serde_json::json!({"weakened": {"a": ""}}),
        serde_json::json!({"weakened": {"a": 1}}),
    ] {
        assert!(reasons(&raw(bad.clone())).is_err(), "{bad}");
    }
}

#[test]
fn settings_moved_or_renamed_are_the_same_settings() {
    // flake8's settings moved from setup.cfg to .flake8; `select` written `extend-select`.
    let cfg = "[metadata]\nname = x\n\n[flake8]\nselect = B, E\nignore = E203\n";
    let flake8 = "[flake8]\nextend-select = B, E\nextend-ignore = E203\n";
    assert!(run(&[
        ("setup.cfg", Some(cfg), Some("[metadata]\nname = x\n")),
        (".flake8", None, Some(flake8)),
    ])
    .is_empty());
    // ruff's settings from ruff.toml to pyproject.toml, `lint.` or not.
    assert!(run(&[
        ("ruff.toml", Some("[lint]\nselect = [\"E\", \"F\"]\n"), None),
        (
            "pyproject.toml",
            Some("[project]\nname = \"x\"\n"),
            Some("[project]\nname = \"x\"\n[tool.ruff]\nselect = [\"E\", \"F\"]\n")
        ),
    ])
    .is_empty());
    // mypy's strict flags written out, then replaced by `strict = true`.
    let flags = "[tool.mypy]\ndisallow_untyped_defs = true\nwarn_unused_ignores = true\n";
    assert!(one("pyproject.toml", flags, "[tool.mypy]\nstrict = true\n").is_empty());
    assert_eq!(
        one("pyproject.toml", flags, "[tool.mypy]\nwarn_unused_ignores = true\n"),
        ["pyproject.toml:2 (baseline): lint or type check relaxed: `tool.mypy.disallow_untyped_defs` no longer true"]
    );
    // A tool configured for the first time relaxes nothing it had.
    assert!(one(
        "pyproject.toml",
        "[project]\n",
        "[project]\n[tool.ruff.lint]\nignore = [\"E501\"]\n"
    )
    .is_empty());
}

#[test]
fn golangci_and_travis_as_their_tools_read_them() {
    let v1 = "linters:\n  enable:\n    - gofmt\n    - gosimple\n    - deadcode\n    - errcheck\n";
    let v2 = "version: \"2\"\nlinters:\n  enable:\n    - staticcheck\n    - unused\n    - errcheck\nformatters:\n  enable:\n    - gofmt\n";
    assert!(
        one(".golangci.yml", v1, v2).is_empty(),
        "moved and merged, not dropped"
    );
    assert_eq!(
        one(".golangci.yml", v1, &v2.replace("    - errcheck\n", "")),
        [".golangci.yml:3: lint or type check relaxed: no longer enabled (`linters.enable`, `formatters.enable`): `errcheck`"]
    );
    assert_eq!(
        one(
            ".golangci.yml",
            v1,
            &format!("{v1}  disable:\n    - errcheck\n")
        ),
        [".golangci.yml:7: lint or type check relaxed: `linters.disable` adds `errcheck`"]
    );
    let travis = "language: go\nscript:\n  - go test ./...\n  - go vet ./...\njobs:\n  include:\n    - name: lint\n      script: golint ./...\n  allow_failures:\n    - go: tip\n";
    assert!(one(
        ".travis.yml",
        travis,
        &travis.replace("go: tip", "go: master")
    )
    .is_empty());
    assert_eq!(
        one(
            ".travis.yml",
            travis,
            &travis.replace("  - go vet ./...\n", "")
        ),
        [".travis.yml:2: CI weakened: job `(script)`: 1 step(s) removed: `go vet ./...`"]
    );
    assert_eq!(
        one(
            ".travis.yml",
            travis,
            &travis.replace("    - name: lint\n      script: golint ./...\n", "    []\n")
        ),
        [".travis.yml:7 (baseline): CI weakened: job `lint` removed"]
    );
}

#[test]
fn assertions_moved_into_a_helper_are_not_removed() {
    let inline = "def test_a():\n    r = get(1)\n    assert r.ok\n    assert r.body\n\ndef test_b():\n    r = get(2)\n    assert r.ok\n    assert r.body\n";
    let helper = "def check(r):\n    assert r.ok\n    assert r.body\n\ndef test_a():\n    check(get(1))\n\ndef test_b():\n    check(get(2))\n";
    assert!(
        one("tests/test_r.py", inline, helper).is_empty(),
        "{:?}",
        one("tests/test_r.py", inline, helper)
    );
    // The helper in another file of the scope, the calls written `helpers.check(`.
    assert!(run(&[
        ("tests/test_r.py", Some(inline), Some("from tests import helpers\n\ndef test_a():\n    helpers.check(get(1))\n\ndef test_b():\n    helpers.check(get(2))\n")),
        ("tests/helpers.py", None, Some("def check(r):\n    assert r.ok\n    assert r.body\n")),
    ])
    .is_empty());
    // Go: `t.Errorf` moved into `checkOutput(t, ...)`.
    let go_inline = "package p\n\nfunc TestA(t *testing.T) {\n\tif out != \"a\" {\n\t\tt.Errorf(\"got %q\", out)\n\t}\n}\n\nfunc TestB(t *testing.T) {\n\tif out != \"b\" {\n\t\tt.Errorf(\"got %q\", out)\n\t}\n}\n";
    let go_helper = "package p\n\nfunc checkOutput(t *testing.T, out, want string) {\n\tif out != want {\n\t\tt.Errorf(\"got %q\", out)\n\t}\n}\n\nfunc TestA(t *testing.T) {\n\tcheckOutput(t, out, \"a\")\n}\n\nfunc TestB(t *testing.T) {\n\tcheckOutput(t, out, \"b\")\n}\n";
    assert!(
        one("x_test.go", go_inline, go_helper).is_empty(),
        "{:?}",
        one("x_test.go", go_inline, go_helper)
    );
    // A helper holding two assertions stands for two at each call (cobra's args_test).
    let two_inline = "package p\n\nfunc TestA(t *testing.T) {\n\tif err == nil {\n\t\tt.Fatal(\"no error\")\n\t}\n\tif err.Error() != \"a\" {\n\t\tt.Errorf(\"got %v\", err)\n\t}\n}\n\nfunc TestB(t *testing.T) {\n\tif err == nil {\n\t\tt.Fatal(\"no error\")\n\t}\n\tif err.Error() != \"a\" {\n\t\tt.Errorf(\"got %v\", err)\n\t}\n}\n\nfunc TestC(t *testing.T) {\n\tif err == nil {\n\t\tt.Fatal(\"no error\")\n\t}\n\tif err.Error() != \"a\" {\n\t\tt.Errorf(\"got %v\", err)\n\t}\n}\n";
    let two_helper = "package p\n\nfunc wantA(err error, t *testing.T) {\n\tif err == nil {\n\t\tt.Fatal(\"no error\")\n\t}\n\tif err.Error() != \"a\" {\n\t\tt.Errorf(\"got %v\", err)\n\t}\n}\n\nfunc TestA(t *testing.T) {\n\twantA(err, t)\n}\n\nfunc TestB(t *testing.T) {\n\twantA(err, t)\n}\n\nfunc TestC(t *testing.T) {\n\twantA(err, t)\n}\n";
    assert!(
        one("a_test.go", two_inline, two_helper).is_empty(),
        "{:?}",
        one("a_test.go", two_inline, two_helper)
    );
    // A call to the helper removed is an assertion removed; so is an assertion taken out of it.
    let fewer = "def check(r):\n    assert r.ok\n    assert r.body\n\ndef test_a():\n    check(get(1))\n\ndef test_b():\n    get(2)\n";
    assert_eq!(
        one("tests/test_r.py", helper, fewer),
        ["tests/test_r.py:9 (baseline): assertion removed: `check(get(2))`"]
    );
    let weaker = helper.replace("    assert r.body\n", "");
    assert_eq!(
        one("tests/test_r.py", helper, &weaker),
        ["tests/test_r.py:3 (baseline): assertion removed: `assert r.body`"]
    );
}
