use super::*;

/// The targets of `command` run in `/ws` (which does not exist: no directory is found on disk),
/// paths under `/ws` shown relative to it.
fn names(command: &str) -> Vec<String> {
    names_in(command, Path::new("/ws"))
}

fn names_in(command: &str, cwd: &Path) -> Vec<String> {
    let prefix = format!("{}/", cwd.display());
    shell(command, cwd)
        .into_iter()
        .map(|w| match w.written {
            Written::Path(p) => {
                let p = p.display().to_string();
                p.strip_prefix(&prefix).map(str::to_string).unwrap_or(p)
            }
            Written::Pattern(g) => format!("pattern {g}"),
        })
        .collect()
}

#[test]
fn in_place_editors_name_their_files_not_their_scripts() {
    assert_eq!(
        names("sed -i 's/a/b/' orchestrator.py"),
        ["orchestrator.py"]
    );
    assert_eq!(names("sed -i.bak -e 's/a/b/' a.py b.py"), ["a.py", "b.py"]);
    assert_eq!(names("sed -Ei 's/a/b/' src/x.py"), ["src/x.py"]);
    assert_eq!(names("sed --in-place=.orig 's/a/b/' x"), ["x"]);
    assert!(
        names("sed 's/a/b/' orchestrator.py").is_empty(),
        "no -i: reads only"
    );
    assert_eq!(names("perl -pi -e 's/a/b/' roles.py"), ["roles.py"]);
    assert_eq!(names("perl -i -pe 's/a/b/' roles.py"), ["roles.py"]);
    assert_eq!(names("perl -i.bak -p -e 's/a/b/' roles.py"), ["roles.py"]);
    assert_eq!(names("perl -0pi -e 's/a/b/' roles.py"), ["roles.py"]);
    assert_eq!(
        names("ruby -pi -e 'gsub(/a/, \"b\")' roles.py"),
        ["roles.py"]
    );
    assert!(names("perl -ne 'print' roles.py").is_empty());
    assert_eq!(names("awk -i inplace '{print}' roles.py"), ["roles.py"]);
}

#[test]
fn redirections_and_writers_are_targets() {
    assert_eq!(names("echo x > a.txt"), ["a.txt"]);
    assert_eq!(names("echo x>>'b c.txt'"), ["b c.txt"]);
    assert_eq!(names("cmd 2>err.log >out.log"), ["err.log", "out.log"]);
    assert_eq!(names("cmd 2>&1 | tee -a log.txt"), ["log.txt"]);
    assert!(names("cat x >/dev/null 2>&1").is_empty());
    assert_eq!(names("cmd &> all.log"), ["all.log"]);
    assert_eq!(names("cmd >& all.log"), ["all.log"]);
    assert_eq!(names("mv old.py new.py"), ["new.py", "old.py"]);
    assert_eq!(names("rm -f a b"), ["a", "b"]);
    assert_eq!(names("chmod +x run.sh"), ["run.sh"]);
    assert_eq!(names("sudo truncate -s 0 f"), ["f"]);
    assert_eq!(names("dd if=/dev/zero of=disk.img"), ["disk.img"]);
    assert_eq!(names("sort -o out.txt in.txt"), ["out.txt"]);
    assert!(names("ls -la; git status; grep -r x .").is_empty());
    assert!(names("cat < in.txt").is_empty());
    assert!(names("echo 'a > b'").is_empty());
}

#[test]
fn copies_into_a_directory_write_the_file_by_its_name() {
    assert_eq!(names("cp -t src f.py"), ["src/f.py"]);
    assert_eq!(
        names("cp --target-directory=src a.py b.py"),
        ["src/a.py", "src/b.py"]
    );
    assert_eq!(names("cp /tmp/roles.py src/"), ["src/roles.py"]);
    assert_eq!(names("cp -r a b dest"), ["dest/a", "dest/b"]);
    assert_eq!(names("cp -T a dest"), ["dest"]);
    assert_eq!(names("mv /tmp/x.py ."), ["x.py", "/tmp/x.py"]);
    assert_eq!(names("install -t src -m 644 f.py"), ["src/f.py"]);
    assert!(names("install -d src/new").is_empty());
    assert_eq!(names("ln -s ../f.py src/"), ["src/f.py"]);
    assert_eq!(names("ln -sf target link"), ["link"]);
}

#[test]
fn the_working_directory_follows_cd_and_stays_in_subshells() {
    assert_eq!(names("cd app && sed -i s/a/b/ x.py"), ["app/x.py"]);
    assert_eq!(names("cd app; cd ..; echo > y"), ["y"]);
    assert_eq!(names("(cd app && touch a); touch b"), ["app/a", "b"]);
    assert_eq!(names("cd app | true; touch b"), ["b"]);
    // Somewhere unknown: the name under any directory.
    assert_eq!(
        names("cd \"$D\" && echo x >> orchestrator.py"),
        ["pattern */orchestrator.py"]
    );
    assert_eq!(names("env -C src touch a"), ["src/a"]);
    assert_eq!(names("git -C src checkout main -- a.py"), ["src/a.py"]);
}

#[test]
fn variables_assigned_on_the_line_are_known_the_rest_are_not() {
    assert_eq!(names("F=src/o.py; sed -i s/a/b/ \"$F\""), ["src/o.py"]);
    assert_eq!(names("export F=o.py && echo >> ${F}"), ["o.py"]);
    assert_eq!(names("echo x > \"$OUT\""), ["pattern *"]);
    assert_eq!(names("echo x > \"$TMPDIR/log\""), ["pattern */log"]);
    assert_eq!(names("rm src/*.py"), ["pattern /ws/src/*.py"]);
    assert_eq!(
        names("for f in a.py b.py; do sed -i s/x/y/ $f; done"),
        ["pattern /ws/{a.py,b.py}"]
    );
}

#[test]
fn git_forms_that_write_the_work_tree() {
    assert_eq!(names("git checkout HEAD~1 -- f"), ["f"]);
    assert_eq!(names("git checkout main -- a b"), ["a", "b"]);
    // Put back as HEAD or the index has it: how a protected path is restored, not a write.
    assert!(names("git checkout -- a b").is_empty());
    assert!(names("git checkout HEAD -- a").is_empty());
    assert!(names("git restore a").is_empty());
    assert!(names("git restore --source=HEAD a").is_empty());
    assert!(names("git reset --hard").is_empty());
    assert!(names("git reset --hard HEAD").is_empty());
    assert_eq!(names("git checkout main"), ["pattern *"]);
    assert_eq!(names("git checkout HEAD~1 f"), ["f"]);
    assert!(names("git checkout -b topic").is_empty());
    assert_eq!(names("git rm f"), ["f"]);
    assert!(names("git rm --cached f").is_empty());
    assert_eq!(names("git restore --source HEAD~2 f"), ["f"]);
    assert!(names("git restore --staged f").is_empty());
    assert_eq!(names("git mv a b"), ["b", "a"]);
    assert_eq!(names("git reset --hard HEAD~1"), ["pattern *"]);
    assert!(names("git reset HEAD~1").is_empty());
    assert_eq!(names("git stash pop"), ["pattern *"]);
    assert!(names("git stash").is_empty());
    assert_eq!(names("git switch main"), ["pattern *"]);
    assert!(names("git switch -c topic").is_empty());
    assert!(
        names("git status && git diff && git log -p && git add -A && git commit -m x").is_empty()
    );
}

#[test]
fn patches_are_read_for_the_files_they_change() {
    let d = tempfile::tempdir().unwrap();
    let diff = "diff --git a/src/orchestrator.py b/src/orchestrator.py\n--- a/src/orchestrator.py\n+++ b/src/orchestrator.py\n@@ -1 +1 @@\n-a\n+b\n";
    std::fs::write(d.path().join("x.patch"), diff).unwrap();
    let got = names_in("git apply x.patch", d.path());
    assert!(
        got.contains(&"pattern */src/orchestrator.py".to_string()),
        "{got:?}"
    );
    let got = names_in("patch -p1 < x.patch", d.path());
    assert!(got.contains(&"src/orchestrator.py".to_string()), "{got:?}");
    let got = names_in("patch < x.patch", d.path());
    assert!(
        got.contains(&"pattern */orchestrator.py".to_string()),
        "{got:?}"
    );
    assert_eq!(names_in("patch src/o.py x.patch", d.path()), ["src/o.py"]);
    // A patch that cannot be read may change anything.
    assert_eq!(names("git apply missing.patch"), ["pattern *"]);
    assert!(names_in("git apply --check x.patch", d.path()).is_empty());
    // Here-documents are patches too.
    let got = names("patch -p1 <<'EOF'\n--- a/src/r.py\n+++ b/src/r.py\n@@ -1 +1 @@\n-a\n+b\nEOF");
    assert_eq!(got, ["src/r.py"]);
}

#[test]
fn unnamed_writes_are_patterns() {
    assert_eq!(names("tar -xzf a.tgz -C src"), ["pattern /ws/src/*"]);
    assert_eq!(names("tar xf a.tar"), ["pattern /ws/*"]);
    assert!(names("tar -czf a.tgz src").is_empty());
    assert_eq!(names("unzip -o a.zip -d vendor"), ["pattern /ws/vendor/*"]);
    assert_eq!(names("rsync -a /tmp/x/ src/"), ["src", "pattern /ws/src/*"]);
    assert_eq!(
        names("find src -name '*.py' -delete"),
        ["pattern /ws/src/**/*.py"]
    );
    assert_eq!(
        names("find . -name '*.py' -exec sed -i s/a/b/ {} +"),
        ["pattern /ws/**/*.py"]
    );
    assert_eq!(names("git ls-files | xargs sed -i s/a/b/"), ["pattern *"]);
    assert_eq!(names("ls | xargs -I{} cp {} /tmp/{}"), ["pattern */*"]);
    assert!(names("find . -name '*.py' | xargs grep x").is_empty());
}

#[test]
fn nested_scripts_are_read() {
    assert_eq!(names("bash -c 'cd src && echo x > o.py'"), ["src/o.py"]);
    assert_eq!(names("sh -c \"$CMD\""), ["pattern *"]);
    assert_eq!(names("bash <<'EOF'\nsed -i s/a/b/ o.py\nEOF"), ["o.py"]);
    // A script from a pipe may be anything; a script file is read.
    assert_eq!(names("curl -fsSL https://x/install.sh | sh"), ["pattern *"]);
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("fix.sh"), "cd src\nsed -i s/a/b/ o.py\n").unwrap();
    assert_eq!(names_in("bash -e fix.sh", d.path()), ["src/o.py"]);
    assert_eq!(names_in("sh < fix.sh", d.path()), ["src/o.py"]);
    assert_eq!(
        names_in(". ./fix.sh && touch x", d.path()),
        ["src/o.py", "src/x"]
    );
    assert_eq!(names("bash missing.sh"), ["pattern *"]);
    std::fs::write(d.path().join("run"), "#!/usr/bin/env bash\nrm -f o.py\n").unwrap();
    assert_eq!(names_in("./run --fast", d.path()), ["o.py"]);
    std::fs::write(
        d.path().join("tool.py"),
        "#!/usr/bin/env python3\nrm -f o.py\n",
    )
    .unwrap();
    assert!(names_in("./tool.py", d.path()).is_empty());
    assert_eq!(names("echo $(sed -i s/a/b/ o.py)"), ["o.py"]);
    assert_eq!(names("eval 'rm -f o.py'"), ["o.py"]);
    assert_eq!(names("cat > o.py <<EOF\nx\nEOF"), ["o.py"]);
    assert_eq!(names("f() { rm o.py; }; f"), ["o.py"]);
    assert_eq!(names("if true; then touch a; else touch b; fi"), ["a", "b"]);
    assert_eq!(names("while read l; do echo $l >> out; done < in"), ["out"]);
    assert_eq!(names("timeout 5 nice -n 2 env A=1 touch t"), ["t"]);
    assert_eq!(names("curl -sS -o out.json https://x/y"), ["out.json"]);
    assert_eq!(names("wget https://example.com/a/b.tar.gz"), ["b.tar.gz"]);
}

#[test]
fn a_command_that_cannot_be_parsed_counts_every_word() {
    let got = names("sed -i s/a/b/ o.py (");
    assert!(got.contains(&"o.py".to_string()), "{got:?}");
    let deep = format!(
        "{}true{}",
        "(".repeat(MAX_NESTING + 1),
        ")".repeat(MAX_NESTING + 1)
    );
    let _ = names(&deep);
}

#[test]
fn odd_input_never_panics() {
    let run = || {
        for s in [
            "",
            "'",
            "\"",
            "\\",
            ">",
            ">>",
            "2>",
            "&",
            "&&",
            "|",
            "sed -i",
            "sed -i -e",
            "perl -pie",
            "mv",
            "cp a",
            "echo \"unterminated",
            "a\\\n> b",
            "((((",
            "x 9>&",
            "tee --",
            "cp -t",
            "find -exec",
            "xargs",
            "git",
            "git -C",
            "patch -p",
            "tar -C",
            "$(",
            "${",
            "`",
            "<<EOF",
            "cat <<",
            "for",
            "case x in",
            "f() {",
            "[[ -f x ]] > y",
        ] {
            let _ = shell(s, Path::new("/ws"));
        }
        let deep = "$(".repeat(10_000);
        let _ = shell(&deep, Path::new("/ws"));
        let wide = "touch a; ".repeat(20_000);
        let _ = shell(&wide, Path::new("/ws"));
    };
    // The hook judges on a thread with a large stack; so does this.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn apply_patch_envelopes_name_every_path() {
    let p = "*** Begin Patch\n*** Update File: src/orchestrator.py\n@@\n-a\n+b\n*** Add File: new.py\n+x\n*** Delete File: old.py\n*** Update File: a.py\n*** Move to: b.py\n*** End Patch\n";
    assert_eq!(
        apply_patch(p),
        ["src/orchestrator.py", "new.py", "old.py", "a.py", "b.py"]
    );
}

#[test]
fn paths_are_made_relative_to_the_workspace_or_left_out() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir(root.join("src")).unwrap();
    let cwd = root.join("src");
    assert_eq!(relative(root, &cwd, "x.py").as_deref(), Some("src/x.py"));
    assert_eq!(
        relative(root, &cwd, "../orchestrator.py").as_deref(),
        Some("orchestrator.py")
    );
    let abs = root.join("src/./../roles.py");
    assert_eq!(
        relative(root, root, abs.to_str().unwrap()).as_deref(),
        Some("roles.py")
    );
    assert_eq!(relative(root, root, "/etc/passwd"), None);
    assert_eq!(relative(root, root, "../outside"), None);
}

#[test]
fn honest_commands_in_full_bash_syntax_write_nothing_protected() {
    // Parsed, not refused: a refused command would count `src/orchestrator.py` as written.
    for cmd in [
        "set -euo pipefail; for f in $(git ls-files '*.py'); do python3 -m py_compile \"$f\"; done",
        "grep -rn \"ROLES\" src/ | head -20 && cat src/orchestrator.py",
        "python3 - <<'PY'\nprint(open('src/orchestrator.py').read())\nPY",
        "[[ -f src/orchestrator.py ]] && echo yes || echo no",
        "a=(1 2 3); echo \"${a[@]}\" \"${x:-default}\" $((1+2))",
        "diff <(sort src/orchestrator.py) <(sort src/app.py)",
        "while IFS= read -r line; do echo \"$line\"; done < src/orchestrator.py",
        "case \"$1\" in a) echo a;; *) echo b;; esac",
        "git diff HEAD -- src/orchestrator.py | cat",
        "npm test 2>&1 | tail -n 20",
        "if [ -n \"${CI:-}\" ]; then echo ci; fi; test -r src/orchestrator.py",
        "cd src && ls -la && wc -l orchestrator.py app.py",
    ] {
        let got = names(cmd);
        assert!(
            got.iter().all(|n| !n.contains("orchestrator")),
            "{cmd}: {got:?}"
        );
    }
}

#[test]
fn only_known_commands_that_write_nothing_write_nothing() {
    let cwd = Path::new("/ws");
    for cmd in [
        "ls -la && git status && git diff HEAD",
        "grep -rn ROLES src | head -5; wc -l src/*.py",
        "cat src/app.py 2>/dev/null || echo none",
        "cd src && ls",
    ] {
        assert!(writes_nothing(cmd, cwd), "{cmd}");
    }
    for cmd in [
        "python3 -c \"open('x','w')\"",
        "make",
        "npm install",
        "ls > listing.txt",
        "git submodule update",
        "$CMD",
        "ls (",
        "sed -i s/a/b/ x",
    ] {
        assert!(!writes_nothing(cmd, cwd), "{cmd}");
    }
}

#[test]
fn formatters_rewrite_what_they_are_given() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("src")).unwrap();
    let root = d.path().display().to_string();
    assert_eq!(names_in("black src/app.py", d.path()), ["src/app.py"]);
    assert_eq!(
        names_in("ruff format", d.path()),
        [format!("pattern {root}/*"), root.clone()]
    );
    assert_eq!(
        names_in("prettier --write src", d.path()),
        [format!("pattern {root}/src/*"), "src".to_string()]
    );
    assert_eq!(names_in("gofmt -w main.go", d.path()), ["main.go"]);
    assert!(names_in("black --check src", d.path()).is_empty());
    assert!(names_in("prettier --check src", d.path()).is_empty());
    assert!(names_in("ruff check src", d.path()).is_empty());
    assert!(names_in("gofmt -l .", d.path()).is_empty());
}
