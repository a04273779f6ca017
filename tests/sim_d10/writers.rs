//! The writers: each puts files into the build directory the way a real tool does (real
//! processes for `dd`, `cp`, `rsync`, `tar` and python's `mmap`), including the files tools
//! leave beside them (temp files, backups, swap and lock files).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::model::Writer;
use crate::render::{encode, Body, File};
use crate::text::Encoding;

/// Where a run writes: the build directory and a staging folder beside it (outside the build).
pub struct Ctx {
    pub build: PathBuf,
    pub stage: PathBuf,
    pub rng: fastrand::Rng,
    /// The next write must be newer than this (an integrative report after its auditors): plain
    /// writers wait for the file clock to pass it; copies that keep mtimes (`tar` keeps whole
    /// seconds) stamp their files a second after it.
    pub after: Option<SystemTime>,
    n: u64,
}

impl Ctx {
    pub fn new(build: PathBuf, stage: PathBuf, seed: u64) -> Ctx {
        Ctx {
            build,
            stage,
            rng: fastrand::Rng::with_seed(seed ^ 0x0515_7d10),
            after: None,
            n: 0,
        }
    }

    fn fresh(&mut self, what: &str) -> PathBuf {
        self.n += 1;
        self.stage.join(format!("{what}-{}", self.n))
    }

    fn pause(&mut self, max_ms: u64) {
        let ms = self.rng.u64(0..=max_ms);
        if ms > 0 {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
}

fn enc_of(w: Writer) -> Encoding {
    match w {
        Writer::PowerShell => Encoding::Utf16Bom,
        Writer::Crlf => Encoding::Crlf,
        _ => Encoding::Utf8,
    }
}

fn mkparent(p: &Path) -> io::Result<()> {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d)?;
    }
    Ok(())
}

fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{cmd:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

/// Waits (on the file system's own clock, not a fixed sleep) until a new file's mtime is later
/// than `t`: file times tick coarsely, and an artifact whose order matters must be newer.
pub fn wait_clock_past(ctx: &mut Ctx, t: SystemTime) -> io::Result<()> {
    let probe = ctx.stage.join("clock-probe");
    for _ in 0..2000 {
        fs::write(&probe, b"t")?;
        if fs::metadata(&probe)?.modified()? > t {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err(io::Error::other("the file clock did not advance"))
}

/// Writes `files` with `w`. `barrier` is called between the preparation of an eventless write
/// and the write itself (the live runner waits there for the referee to catch up).
pub fn write(
    ctx: &mut Ctx,
    files: &[File],
    w: Writer,
    barrier: &mut dyn FnMut(),
) -> io::Result<()> {
    let enc = enc_of(w);
    if let Some(t) = ctx.after {
        if !matches!(w, Writer::CpA | Writer::Rsync | Writer::Tar) {
            wait_clock_past(ctx, t)?;
        }
    }
    match w {
        Writer::CpA | Writer::Rsync | Writer::Tar => return group(ctx, files, w),
        Writer::Cp if files.len() > 1 => return group(ctx, files, w),
        _ => {}
    }
    for f in files {
        let bytes = encode(&f.body, enc);
        let dst = ctx.build.join(&f.path);
        mkparent(&dst)?;
        let binary = matches!(f.body, Body::Bytes(_));
        match w {
            Writer::Atomic | Writer::Crlf => atomic(ctx, &dst, &bytes)?,
            Writer::Truncate | Writer::PowerShell => {
                let mut fh = fs::File::create(&dst)?;
                let half = bytes.len() / 2;
                fh.write_all(&bytes[..half])?;
                fh.flush()?;
                ctx.pause(20);
                fh.write_all(&bytes[half..])?;
            }
            Writer::Stream => {
                let mut fh = fs::File::create(&dst)?;
                if binary {
                    fh.write_all(&bytes)?;
                } else {
                    for line in bytes.split_inclusive(|b| *b == b'\n') {
                        fh.write_all(line)?;
                        fh.flush()?;
                        ctx.pause(3);
                    }
                }
            }
            Writer::Chunked => {
                let mut fh = fs::File::create(&dst)?;
                let mut rest: &[u8] = &bytes;
                while !rest.is_empty() {
                    let n = ctx.rng.usize(1..=rest.len().max(3) / 3 + 1).min(rest.len());
                    fh.write_all(&rest[..n])?;
                    fh.flush()?;
                    rest = &rest[n..];
                    ctx.pause(8);
                }
            }
            Writer::Dd => {
                let mut child = Command::new("dd")
                    .arg(format!("of={}", dst.display()))
                    .args(["bs=64", "status=none"])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()?;
                {
                    let mut sin = child
                        .stdin
                        .take()
                        .ok_or_else(|| io::Error::other("dd stdin"))?;
                    for chunk in bytes.chunks(ctx.rng.usize(100..600)) {
                        sin.write_all(chunk)?;
                        sin.flush()?;
                        ctx.pause(6);
                    }
                }
                let st = child.wait()?;
                if !st.success() {
                    return Err(io::Error::other(format!("dd: {st}")));
                }
            }
            Writer::Cp => {
                let src = ctx.fresh("cp");
                fs::write(&src, &bytes)?;
                run(Command::new("cp").arg(&src).arg(&dst))?;
            }
            Writer::EditorBackup => {
                // vim: swap file, the 4913 probe, the old file renamed to NAME~, the new one
                // written, the backup removed.
                let dir = dst.parent().unwrap_or(&ctx.build).to_path_buf();
                let name = file_name(&dst);
                let swap = dir.join(format!(".{name}.swp"));
                fs::write(&swap, b"b0VIM 9.0\0\0\0\0swap\0")?;
                let probe = dir.join("4913");
                fs::write(&probe, b"")?;
                fs::remove_file(&probe)?;
                let backup = dir.join(format!("{name}~"));
                if dst.exists() {
                    fs::rename(&dst, &backup)?;
                }
                let mut fh = fs::File::create(&dst)?;
                let half = bytes.len() / 2;
                fh.write_all(&bytes[..half])?;
                fh.flush()?;
                ctx.pause(10);
                fh.write_all(&bytes[half..])?;
                drop(fh);
                let _ = fs::remove_file(&backup);
                fs::remove_file(&swap)?;
            }
            Writer::EditorRemove => {
                let dir = dst.parent().unwrap_or(&ctx.build).to_path_buf();
                let swap = dir.join(format!(".{}.swp", file_name(&dst)));
                fs::write(&swap, b"b0VIM 9.0\0\0\0\0swap\0")?;
                if dst.exists() {
                    fs::remove_file(&dst)?;
                }
                ctx.pause(10);
                let mut fh = fs::File::create(&dst)?;
                let half = bytes.len() / 2;
                fh.write_all(&bytes[..half])?;
                fh.flush()?;
                ctx.pause(10);
                fh.write_all(&bytes[half..])?;
                drop(fh);
                fs::remove_file(&swap)?;
            }
            Writer::Emacs => {
                // A dangling lock link while the buffer is modified; the first save renames the
                // old file to NAME~ (left behind) and writes the new one.
                let dir = dst.parent().unwrap_or(&ctx.build).to_path_buf();
                let name = file_name(&dst);
                let lock = dir.join(format!(".#{name}"));
                let _ = fs::remove_file(&lock);
                symlink("sim@localhost.4242:1764000000", &lock)?;
                if dst.exists() {
                    fs::rename(&dst, dir.join(format!("{name}~")))?;
                }
                let mut fh = fs::File::create(&dst)?;
                fh.write_all(&bytes)?;
                drop(fh);
                ctx.pause(5);
                fs::remove_file(&lock)?;
            }
            Writer::HardLink => hard_link(ctx, &dst, &bytes, barrier)?,
            Writer::Mmap => mmap(ctx, &dst, &bytes, barrier)?,
            Writer::CpA | Writer::Rsync | Writer::Tar => unreachable!("grouped above"),
        }
    }
    Ok(())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn atomic(ctx: &mut Ctx, dst: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = dst.parent().unwrap_or(&ctx.build);
    let tmp = dir.join(format!(".{}.tmp{}", file_name(dst), ctx.rng.u32(..)));
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, dst)
}

/// `cp -a`, `rsync -a`, `tar` (shuffled order) or `cp -r` of the files, staged outside the build
/// with mtimes in the order they were written.
fn group(ctx: &mut Ctx, files: &[File], w: Writer) -> io::Result<()> {
    let root = ctx.fresh("group");
    fs::create_dir_all(&root)?;
    let mut t0 = SystemTime::now();
    if let Some(after) = ctx.after {
        t0 = t0.max(after + Duration::from_secs(1));
    }
    let mut paths = Vec::new();
    for (k, f) in files.iter().enumerate() {
        let p = root.join(&f.path);
        mkparent(&p)?;
        fs::write(&p, encode(&f.body, Encoding::Utf8))?;
        let t = t0 + Duration::from_millis(5 * k as u64);
        filetime::set_file_mtime(&p, filetime::FileTime::from_system_time(t))?;
        paths.push(f.path.clone());
    }
    match w {
        Writer::CpA => run(Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", root.display()))
            .arg(&ctx.build))?,
        Writer::Cp => run(Command::new("cp")
            .arg("-r")
            .arg(format!("{}/.", root.display()))
            .arg(&ctx.build))?,
        // `--checksum`: rsync's quick check skips a file of the same size and the same mtime
        // second, so a same-length edit staged within the second of the last write (an
        // auditor's time moved earlier) would never land, while the reference model has it
        // on disk (seeds 0xd10a003e5, 0xd10a003bc, 0xd10a001db in a 1,000-run sweep).
        Writer::Rsync => run(Command::new("rsync")
            .arg("-a")
            .arg("--checksum")
            .arg(format!("{}/", root.display()))
            .arg(format!("{}/", ctx.build.display())))?,
        Writer::Tar => {
            ctx.rng.shuffle(&mut paths);
            let tar = ctx.fresh("tar");
            run(Command::new("tar")
                .arg("-cf")
                .arg(&tar)
                .arg("-C")
                .arg(&root)
                .args(&paths))?;
            run(Command::new("tar")
                .arg("-xf")
                .arg(&tar)
                .arg("-C")
                .arg(&ctx.build))?;
        }
        _ => unreachable!("not a group writer"),
    }
    Ok(())
}

/// The file in the build becomes a hard link to one outside (an event, same content), then the
/// new content is written through the outside path: no event in the build directory.
fn hard_link(ctx: &mut Ctx, dst: &Path, bytes: &[u8], barrier: &mut dyn FnMut()) -> io::Result<()> {
    let outside = ctx.fresh("linked");
    let old = fs::read(dst).unwrap_or_default();
    fs::write(&outside, &old)?;
    let tmp = dst.with_file_name(format!(".{}.ln{}", file_name(dst), ctx.rng.u32(..)));
    fs::hard_link(&outside, &tmp)?;
    fs::rename(&tmp, dst)?;
    barrier();
    let mut fh = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&outside)?;
    fh.write_all(bytes)
}

/// Changed in place through python's `mmap` (the file is first given room, with an event, when
/// the new text is longer).
fn mmap(ctx: &mut Ctx, dst: &Path, bytes: &[u8], barrier: &mut dyn FnMut()) -> io::Result<()> {
    let old = fs::read(dst).unwrap_or_default();
    let utf16 = old.starts_with(&[0xFF, 0xFE]);
    if old.len() < bytes.len() + 2 || utf16 {
        // Room for the new text: the old text re-encoded as UTF-8, padded with blanks.
        let mut room = if utf16 {
            let units: Vec<u16> = old[2..]
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16_lossy(&units).into_bytes()
        } else {
            old.clone()
        };
        let want = bytes.len().max(room.len()) + 64;
        room.resize(want, b' ');
        room.push(b'\n');
        atomic(ctx, dst, &room)?;
        barrier();
    }
    let len = fs::metadata(dst)?.len() as usize;
    let mut new = bytes.to_vec();
    new.resize(len.saturating_sub(1), b' ');
    new.push(b'\n');
    let src = ctx.fresh("mmap-bytes");
    fs::write(&src, &new)?;
    run(Command::new("python3")
        .arg("-c")
        .arg(
            "import mmap,sys\n\
         data=open(sys.argv[2],'rb').read()\n\
         f=open(sys.argv[1],'r+b')\n\
         m=mmap.mmap(f.fileno(),0)\n\
         m[:len(data)]=data\n\
         m.flush()\n\
         m.close()\n",
        )
        .arg(dst)
        .arg(&src))
}
