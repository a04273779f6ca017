//! Whether a cached bytecode file holds the code of a Python source: what running the tests
//! leaves beside every module they import (`__pycache__/orchestrator.cpython-311.pyc`), told
//! apart from bytecode forged to run in a protected module's place.
//!
//! CPython runs a module's cached bytecode instead of its source, so a `.pyc` in a protected
//! module's `__pycache__/` is a veto unless it is that module's own code. The referee cannot
//! compile Python itself: it asks the host's `python3` (looked up on `PATH` away from the
//! workspace, as a syntax command is; isolated `-I -S -B`, in an empty temporary directory,
//! killed after [`TIMEOUT`]) to load the code object from the `.pyc` (`marshal.loads`, which
//! builds built-in objects and runs nothing) and compare it with `compile()` of the source,
//! with the optimisation level the file name says (`.opt-1`, `.opt-2`). Code objects compare
//! their bytecode, constants (nested code included), names and line tables, not the file name
//! they were compiled under. The `.pyc` must carry the host interpreter's magic number and its
//! name the host's cache tag (`cpython-311`): other bytecode cannot be checked here.
//!
//! Results are kept for the process by the two files' SHA-256, so a live referee asks once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::command::{self, Ran};
use super::CommandRule;

/// How long `python3` may take to load and compile.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// What `python3` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bytecode {
    /// The `.pyc` holds exactly the code of the source.
    Same,
    /// It holds other code (or what is no code object).
    Differs,
    /// It could not be told: why (no python3, another interpreter's bytecode, a timeout).
    Unknown(String),
}

const SCRIPT: &str = r#"import sys, marshal, importlib.util
pyc, src, tag, opt = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if tag != sys.implementation.cache_tag:
    print("bytecode of " + tag + ", the host's python3 is " + str(sys.implementation.cache_tag)); sys.exit(3)
data = open(pyc, "rb").read()
if data[:4] != importlib.util.MAGIC_NUMBER:
    print("not the magic number of the host's python3 (" + sys.version.split()[0] + ")"); sys.exit(3)
try:
    code = marshal.loads(data[16:])
except Exception as e:
    print("no code object: " + type(e).__name__); sys.exit(1)
ref = compile(open(src, "rb").read(), src, "exec", dont_inherit=True, optimize=opt)
sys.exit(0 if type(code) is type(ref) and code == ref else 1)
"#;

/// The cache tag and optimisation level a `__pycache__` file name says:
/// `orchestrator.cpython-311.opt-1.pyc` → (`cpython-311`, 1).
pub fn tag_of(file_name: &str) -> Option<(String, u8)> {
    let stem = file_name.strip_suffix(".pyc")?;
    let mut parts: Vec<&str> = stem.split('.').collect();
    let opt = match parts.last()?.strip_prefix("opt-") {
        Some(n) => {
            let n: u8 = n.parse().ok()?;
            parts.pop();
            n
        }
        None => 0,
    };
    // The module name, then the tag.
    if parts.len() < 2 {
        return None;
    }
    Some((parts.last()?.to_string(), opt))
}

/// What a comparison is kept by: the `.pyc`'s and the source's SHA-256, and the file name.
type MemoKey = (Vec<u8>, Vec<u8>, String);

/// Whether the bytecode `pyc` (its file named `file_name`) holds the code of `source`; `rel`
/// and `abs` are the `.pyc`'s place in the workspace (the workspace is where no program is run
/// from).
pub fn compare(pyc: &[u8], file_name: &str, source: &[u8], rel: &str, abs: &Path) -> Bytecode {
    static MEMO: OnceLock<Mutex<HashMap<MemoKey, Bytecode>>> = OnceLock::new();
    let key = (
        Sha256::digest(pyc).to_vec(),
        Sha256::digest(source).to_vec(),
        file_name.to_string(),
    );
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(known) = memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return known;
    }
    let (found, answered) = ask_python(pyc, file_name, source, rel, abs);
    // What python3 answered stands for these bytes; a python3 that could not be run (or did
    // not finish) is asked again next time.
    if answered {
        if let Ok(mut m) = memo.lock() {
            m.insert(key, found.clone());
        }
    }
    found
}

/// What python3 says, and whether it answered at all.
fn ask_python(
    pyc: &[u8],
    file_name: &str,
    source: &[u8],
    rel: &str,
    abs: &Path,
) -> (Bytecode, bool) {
    let not_asked = |why: &str| (Bytecode::Unknown(why.to_string()), false);
    let Some((tag, opt)) = tag_of(file_name) else {
        return (
            Bytecode::Unknown(format!("`{file_name}` is not named as cached bytecode")),
            true,
        );
    };
    let Ok(dir) = tempfile::tempdir() else {
        return not_asked("no temporary directory for python3");
    };
    let (pyc_path, src_path) = (dir.path().join("module.pyc"), dir.path().join("module.py"));
    if std::fs::write(&pyc_path, pyc).is_err() || std::fs::write(&src_path, source).is_err() {
        return not_asked("cannot write to a temporary directory");
    }
    let Some(src_str) = src_path.to_str() else {
        return not_asked("the temporary directory's path is not UTF-8");
    };
    let rule = CommandRule {
        ext: ".pyc".into(),
        argv: [
            "python3", "-I", "-S", "-B", "-c", SCRIPT, "{path}", src_str, &tag,
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([opt.to_string()])
        .collect(),
        timeout: TIMEOUT,
        replaces_builtin: false,
    };
    match command::execute(&rule, rel, abs, &pyc_path) {
        Ok(Ran { status, output, .. }) => match status.code() {
            Some(0) => (Bytecode::Same, true),
            Some(1) => (Bytecode::Differs, true),
            Some(3) => (
                Bytecode::Unknown(output.trim().lines().next().unwrap_or("").to_string()),
                true,
            ),
            _ => not_asked(&format!(
                "python3 could not compare it: {}",
                output.trim().lines().next().unwrap_or("no answer")
            )),
        },
        Err(super::Outcome::Inconclusive { why }) => not_asked(&why),
        Err(_) => not_asked("python3 could not be run"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_from_file_names() {
        assert_eq!(
            tag_of("orchestrator.cpython-311.pyc"),
            Some(("cpython-311".into(), 0))
        );
        assert_eq!(
            tag_of("__init__.cpython-312.opt-2.pyc"),
            Some(("cpython-312".into(), 2))
        );
        assert_eq!(tag_of("orchestrator.pyc"), None);
        assert_eq!(tag_of("x.cpython-311.opt-z.pyc"), None);
    }
}
