//! How a command's words are read: its options and their values, its operands, the in-place
//! flags of `sed` and `perl`, and the wrappers in front of it (`sudo`, `env`, `timeout`, …).

use super::{base_name, normalise, Dir, Val};

/// The wrappers in front of a command (`sudo`, `env A=B`, `nice -n 5`, `timeout 10`, …), and
/// leading assignments, taken away; `env -C DIR` moves.
pub(super) fn strip_wrappers(words: &mut Vec<Val>, cwd: &mut Dir) {
    loop {
        let Some(first) = words.first() else { return };
        let Some(name) = first.lit().map(base_name) else {
            return;
        };
        let skip = match name {
            "sudo" | "doas" => {
                1 + option_span(
                    &words[1..],
                    &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
                )
            }
            "env" => {
                let mut n = 1;
                while let Some(w) = words.get(n) {
                    match w.opt() {
                        "-u" | "--unset" | "-S" => n += 2,
                        "-C" | "--chdir" => {
                            *cwd = match (words.get(n + 1), &*cwd) {
                                (Some(Val::Lit(d)), Dir::Known(c)) => {
                                    Dir::Known(normalise(&c.join(d)))
                                }
                                _ => Dir::Unknown,
                            };
                            n += 2;
                        }
                        o if o.starts_with('-') || (o.contains('=') && !o.starts_with('=')) => {
                            n += 1
                        }
                        _ => break,
                    }
                }
                n
            }
            "nice" => 1 + option_span(&words[1..], &["-n", "--adjustment"]),
            "ionice" => 1 + option_span(&words[1..], &["-c", "-n", "-p", "--class", "--classdata"]),
            "stdbuf" => 1 + option_span(&words[1..], &["-i", "-o", "-e"]),
            "timeout" => {
                let n = 1 + option_span(&words[1..], &["-s", "--signal", "-k", "--kill-after"]);
                n + 1 // the duration
            }
            "nohup" | "time" | "command" | "builtin" | "exec" | "noglob" => {
                1 + option_span(&words[1..], &["-a"])
            }
            _ if first.opt().contains('=') && !first.opt().starts_with('-') => 1,
            _ => return,
        };
        let skip = skip.min(words.len());
        words.drain(..skip);
    }
}

/// How many words at the start of `words` are options (with the values of `valued` ones).
fn option_span(words: &[Val], valued: &[&str]) -> usize {
    let mut n = 0;
    while let Some(w) = words.get(n) {
        let o = w.opt();
        if o == "--" {
            return n + 1;
        }
        if !o.starts_with('-') || o == "-" {
            break;
        }
        n += if valued.contains(&o) { 2 } else { 1 };
    }
    n
}

/// The values of the options `names` (`-o F`, `-oF`, `--output=F`, `--output F`).
pub(super) fn option_values(args: &[Val], names: &[&str]) -> Vec<Val> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let o = args[i].opt();
        if o == "--" {
            break;
        }
        if names.contains(&o) {
            if let Some(v) = args.get(i + 1) {
                out.push(v.clone());
            }
            i += 2;
            continue;
        }
        for n in names {
            if n.starts_with("--") {
                if let Some(v) = o.strip_prefix(&format!("{n}=")) {
                    out.push(Val::Lit(v.to_string()));
                }
            } else if n.len() == 2 && o.len() > 2 && o.starts_with(n) && !o.starts_with("--") {
                out.push(Val::Lit(o[2..].to_string()));
            }
        }
        i += 1;
    }
    out
}

/// The files of an in-place `sed`: none unless `-i` is given; the first operand is the script
/// unless one came with `-e`/`-f` (or `--expression`/`--file`).
pub(super) fn in_place_sed(args: &[Val]) -> Vec<Val> {
    let mut inplace = false;
    let mut script_given = false;
    let mut ops = Vec::new();
    let mut it = args.iter();
    while let Some(v) = it.next() {
        let a = v.opt();
        if v.lit().is_none() {
            ops.push(v.clone());
            continue;
        }
        if a == "--" {
            ops.extend(it.by_ref().cloned());
            break;
        }
        if a == "-i" || a == "--in-place" || a.starts_with("--in-place=") {
            inplace = true;
        } else if matches!(a, "-e" | "-f" | "--expression" | "--file") {
            script_given = true;
            it.next();
        } else if a.starts_with("--expression=") || a.starts_with("--file=") {
            script_given = true;
        } else if a.starts_with("--") {
            // `-s`, `--posix`, `-n`, …: flags.
        } else if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            // `-i`, `-i.bak`, `-ni`, `-Ei`, `-ie` (suffix `e`): a cluster naming `i`, whose
            // suffix follows it; `-e`/`-f` in a cluster take the next word.
            let mut chars = flags.chars();
            while let Some(c) = chars.next() {
                if c == 'i' {
                    inplace = true;
                    break;
                }
                if c == 'e' || c == 'f' {
                    script_given = true;
                    if chars.as_str().is_empty() {
                        it.next();
                    }
                    break;
                }
            }
        } else {
            ops.push(v.clone());
        }
    }
    if !inplace {
        return Vec::new();
    }
    if !script_given && !ops.is_empty() {
        ops.remove(0);
    }
    ops
}

/// `perl -i -pe 'script' FILES`, `perl -pi -e …`, `perl -i.bak -p -e …`, `ruby -pi -e …`.
pub(super) fn in_place_perl(args: &[Val]) -> Vec<Val> {
    let mut inplace = false;
    let mut ops = Vec::new();
    let mut script_given = false;
    let mut it = args.iter();
    while let Some(v) = it.next() {
        let a = v.opt();
        if v.lit().is_none() {
            ops.push(v.clone());
            continue;
        }
        if a == "--" {
            ops.extend(it.by_ref().cloned());
            break;
        }
        if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            // Switches cluster until one that takes the rest of the word (`-i.bak`, `-e…`).
            let mut chars = flags.chars();
            while let Some(c) = chars.next() {
                match c {
                    'i' => {
                        inplace = true;
                        break; // the rest is the backup suffix
                    }
                    'e' | 'E' => {
                        script_given = true;
                        if chars.as_str().is_empty() {
                            it.next();
                        }
                        break;
                    }
                    // `-0[octal]`, `-l[octal]`: a number, then more switches.
                    '0' | 'l' => {
                        while chars.clone().next().is_some_and(|d| d.is_ascii_hexdigit()) {
                            chars.next();
                        }
                    }
                    // Switches whose value is the rest of the word.
                    'I' | 'M' | 'm' | 'x' | 'C' | 'F' | 'd' | 'D' => break,
                    _ => {}
                }
            }
        } else {
            ops.push(v.clone());
        }
    }
    if !inplace {
        return Vec::new();
    }
    if !script_given && !ops.is_empty() {
        ops.remove(0);
    }
    ops
}

/// The words that are not options (nor the values of `valued` options).
pub(super) fn operands(args: &[Val], valued: &[&str]) -> Vec<Val> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(v) = it.next() {
        let a = v.opt();
        if v.lit().is_some() && a == "--" {
            out.extend(it.by_ref().cloned());
            break;
        }
        if valued.contains(&a) {
            it.next();
        } else if v.lit().is_none() || !a.starts_with('-') || a == "-" {
            out.push(v.clone());
        }
    }
    out.retain(|a| a.lit() != Some("-"));
    out
}
