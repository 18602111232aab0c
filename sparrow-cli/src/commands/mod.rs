//! One module per subcommand, and what they share.

pub mod bench;
pub mod complete;
pub mod cs;
pub mod demo;
pub mod info;
pub mod products;
pub mod recover;
pub mod seacells;
pub mod topk;
pub mod validate;

use indicatif::{ProgressBar, ProgressStyle};
use sparrow::device::DeviceSpec;
use sparrow::{Device, Result};

/// Global flags every command sees.
pub struct Ctx {
    pub device: DeviceSpec,
    pub explain: bool,
    pub json: bool,
}

impl Ctx {
    /// Opens the device named by `--device`, saying on stderr which one and why.
    pub fn open_device(&self) -> Result<Device> {
        let (device, why) = Device::open(self.device)?;
        eprintln!("device: {} ({why})", device.describe());
        Ok(device)
    }
}

/// A spinner on stderr (drawn only on a terminal).
pub fn spinner(msg: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}").expect("valid template"),
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb.set_message(msg.to_string());
    pb
}

/// Prints how the kernel modules reached this process (compiled now, or from the disk cache).
pub fn report_compiles(device: &Device) {
    if let Some(gpu) = device.gpu() {
        let st = gpu.compile_stats();
        for (m, s) in &st.compiled {
            eprintln!("kernels: compiled module {m} with NVRTC in {s:.3} s");
        }
        for (m, s) in &st.from_disk {
            eprintln!("kernels: loaded module {m} from the disk cache in {s:.3} s");
        }
    }
}

/// Where `p` would be written or read: its parent made absolute (symbolic links resolved) and its
/// file name, so two spellings of one file compare equal whether or not it exists yet.
fn resolved(p: &std::path::Path) -> std::path::PathBuf {
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let dir = parent
        .canonicalize()
        .unwrap_or_else(|_| parent.to_path_buf());
    match p.file_name() {
        Some(name) => dir.join(name),
        None => dir,
    }
}

/// Refuses outputs that name the same file as another output or as an input: the later write
/// would silently replace what the earlier one wrote, or the input itself. Each entry is an
/// argument name and its path, None where the argument was not given.
pub fn distinct_outputs(
    inputs: &[(&str, Option<&std::path::Path>)],
    outputs: &[(&str, Option<&std::path::Path>)],
) -> Result<()> {
    // Each given path resolved once, beside its argument and its spelling.
    type Given<'a> = Vec<(&'a str, &'a std::path::Path, std::path::PathBuf)>;
    fn given<'a>(list: &[(&'a str, Option<&'a std::path::Path>)]) -> Given<'a> {
        list.iter()
            .filter_map(|&(arg, p)| p.map(|p| (arg, p, resolved(p))))
            .collect()
    }
    let (ins, outs) = (given(inputs), given(outputs));
    for (i, (arg, p, r)) in outs.iter().enumerate() {
        if let Some((other, ..)) = outs[..i].iter().find(|(.., q)| q == r) {
            return Err(sparrow::Error::invalid(
                *arg,
                format!(
                    "{} is also {other}; give each output its own file",
                    p.display()
                ),
            ));
        }
        if let Some((other, ..)) = ins.iter().find(|(.., q)| q == r) {
            return Err(sparrow::Error::invalid(
                *arg,
                format!(
                    "{} is the {other} input; write the output elsewhere",
                    p.display()
                ),
            ));
        }
    }
    Ok(())
}
