//! The files a command reads and writes, checked before any work and written all or nothing.
//!
//! Before a command computes anything, [`Files::check`] resolves every path through its symbolic
//! links (every component, the last included), refuses an output that names an input or another
//! output, an output whose folder is missing or not writable, and an output that is a folder.
//! Outputs are then written to temporary files beside their destinations and renamed into
//! place together by [`Files::commit`]; until then an earlier file of the same name is
//! untouched, and a failed or interrupted run leaves no partial file (the temporaries are
//! removed when [`Files`] is dropped).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use sparrow::{Error, Result};

/// Symbolic links followed before a path is refused as a loop.
const MAX_LINKS: usize = 40;

/// `p` made absolute with every symbolic link resolved, whether or not its last component
/// exists yet (a dangling link resolves to where it points).
pub fn resolve(p: &Path) -> std::io::Result<PathBuf> {
    let mut p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    for _ in 0..MAX_LINKS {
        if let Ok(c) = p.canonicalize() {
            return Ok(c);
        }
        let name = match p.file_name() {
            Some(n) => n.to_os_string(),
            None => return Ok(p),
        };
        let parent = p.parent().unwrap_or(Path::new("/"));
        let dir = parent.canonicalize()?;
        let here = dir.join(&name);
        match std::fs::read_link(&here) {
            // A dangling link: follow it (relative targets start at its folder).
            Ok(target) => p = dir.join(target),
            Err(_) => return Ok(here),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// One checked output: the argument that named it, the path as given, and where it resolves.
struct Output {
    arg: String,
    given: PathBuf,
    target: PathBuf,
    staged: Option<PathBuf>,
}

/// The outputs of one run, checked up front and committed together.
pub struct Files {
    outputs: Vec<Output>,
    /// Files of an earlier run in an output folder that this run does not write; removed on
    /// commit so a folder never mixes two runs.
    stale: Vec<PathBuf>,
}

impl Files {
    /// Checks `inputs` and `outputs` (argument name and path; None where not given) before any
    /// work: each output's folder exists and takes a new file, no output is a folder, and no
    /// two of them, nor an output and an input, are the same file.
    pub fn check(
        inputs: &[(&str, Option<&Path>)],
        outputs: &[(&str, Option<&Path>)],
    ) -> Result<Files> {
        let ins: Vec<(&str, &Path, PathBuf)> = inputs
            .iter()
            .filter_map(|&(arg, p)| p.map(|p| (arg, p)))
            .map(|(arg, p)| Ok((arg, p, resolve(p).map_err(|e| Error::io(p, e))?)))
            .collect::<Result<_>>()?;
        let mut checked: Vec<Output> = Vec::new();
        let mut folders: Vec<PathBuf> = Vec::new();
        for &(arg, p) in outputs {
            let Some(p) = p else { continue };
            let target = resolve(p).map_err(|e| {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    format!("the folder {} does not exist", dir.display())
                } else {
                    format!("the folder {} cannot be reached ({e})", dir.display())
                };
                Error::invalid(arg, format!("{}: {why}", p.display()))
            })?;
            if target.is_dir() {
                return Err(Error::invalid(
                    arg,
                    format!("{} is a folder; name a file", p.display()),
                ));
            }
            if let Some(o) = checked.iter().find(|o| o.target == target) {
                return Err(Error::invalid(
                    arg,
                    format!(
                        "{} is also {}; give each output its own file",
                        p.display(),
                        o.arg
                    ),
                ));
            }
            if let Some((other, ..)) = ins.iter().find(|(.., r)| *r == target) {
                return Err(Error::invalid(
                    arg,
                    format!(
                        "{} is the {other} input; write the output elsewhere",
                        p.display()
                    ),
                ));
            }
            let dir = target.parent().unwrap_or(Path::new("/")).to_path_buf();
            if !folders.contains(&dir) {
                writable(arg, p, &dir)?;
                folders.push(dir);
            }
            checked.push(Output {
                arg: arg.to_string(),
                given: p.to_path_buf(),
                target,
                staged: None,
            });
        }
        Ok(Files {
            outputs: checked,
            stale: Vec::new(),
        })
    }

    /// Removes, on commit, the files of `names` in `dir` that this run does not write (the
    /// outputs of an earlier run into the same folder).
    pub fn replace_earlier(&mut self, dir: &Path, names: &[&str]) {
        for n in names {
            let p = dir.join(n);
            let Ok(r) = resolve(&p) else { continue };
            if !self.outputs.iter().any(|o| o.target == r) {
                self.stale.push(r);
            }
        }
    }

    /// The temporary path to write the output named by `arg` to (created by the writer).
    pub fn path(&mut self, arg: &str) -> PathBuf {
        static SERIAL: AtomicUsize = AtomicUsize::new(0);
        let o = self
            .outputs
            .iter_mut()
            .find(|o| o.arg == arg)
            .unwrap_or_else(|| panic!("{arg} was not checked as an output"));
        if let Some(s) = &o.staged {
            return s.clone();
        }
        let name = o.target.file_name().unwrap_or_default().to_string_lossy();
        let tmp = o.target.with_file_name(format!(
            ".{name}.{}.{}.sparrow-partial",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        o.staged = Some(tmp.clone());
        tmp
    }

    /// Renames every written output into place and removes an earlier run's leftovers.
    pub fn commit(mut self) -> Result<()> {
        for o in &mut self.outputs {
            if let Some(tmp) = o.staged.take() {
                if let Err(e) = std::fs::rename(&tmp, &o.target) {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(Error::io(&o.given, e));
                }
            }
        }
        for s in std::mem::take(&mut self.stale) {
            match std::fs::remove_file(&s) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&s, e)),
            }
        }
        Ok(())
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        for o in &self.outputs {
            if let Some(tmp) = &o.staged {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

/// Whether a new file can be made in `dir`: tried by making and removing one, since the
/// permission bits do not tell (a privileged user, a read-only mount, a full quota).
fn writable(arg: &str, given: &Path, dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(Error::invalid(
            arg,
            format!(
                "{}: the folder {} does not exist",
                given.display(),
                dir.display()
            ),
        ));
    }
    let probe = dir.join(format!(".sparrow-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::invalid(
            arg,
            format!(
                "{}: cannot write in the folder {} ({e})",
                given.display(),
                dir.display()
            ),
        )),
    }
}

/// Appends `lines` to the file at `path` (made if missing) all at once: the old contents and
/// the new lines go to a temporary file that replaces the old one, so a failed write leaves the
/// file as it was.
pub fn append_lines(path: &Path, lines: &[String]) -> Result<()> {
    use std::io::Write;
    let mut files = Files::check(&[], &[("--jsonl", Some(path))])?;
    let tmp = files.path("--jsonl");
    let target = &files.outputs[0].target;
    let write = || -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        match std::fs::File::open(target) {
            Ok(mut old) => {
                std::io::copy(&mut old, &mut w)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        for l in lines {
            writeln!(w, "{l}")?;
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    };
    write().map_err(|e| Error::io(path, e))?;
    files.commit()
}
