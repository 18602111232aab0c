//! One module per subcommand, and what they share.

pub mod bench;
pub mod complete;
pub mod cs;
pub mod demo;
pub mod files;
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

/// The value type that holds every given input exactly: f64 when any file holds f64 (or when
/// none says, as integer arrays and MatrixMarket text do not), else f32.
pub fn wider(stored: &[Option<&'static str>]) -> &'static str {
    let floats: Vec<&str> = stored.iter().flatten().copied().collect();
    if !floats.is_empty() && floats.iter().all(|&t| t == "f32") {
        "f32"
    } else {
        "f64"
    }
}

/// What a dense (.npy) or sparse (.npz, .mtx) input file stores, when it says.
pub fn stored_type(path: &std::path::Path) -> Result<Option<&'static str>> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("npy") => sparrow::matrix::io::dense_value_dtype(path),
        _ => sparrow::matrix::io::sparse_value_dtype(path),
    }
}
