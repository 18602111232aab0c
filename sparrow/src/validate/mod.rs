//! `sparrow validate`: every GPU kernel of the project run against its reference on the present
//! device. Each op contributes a file of cases to [`registry`]; without a GPU, the CPU
//! backends are validated against the oracles instead.

mod cs;
mod products;
mod topk;

use crate::{Device, Result};

/// How strong the reference of a case is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Reference {
    /// The naive, obviously correct oracle.
    NaiveOracle,
    /// An independent re-derivation of the result (another algorithm).
    Rederivation,
    /// Agreement between two backends.
    CrossBackend,
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reference::NaiveOracle => "naive oracle",
            Reference::Rederivation => "re-derivation",
            Reference::CrossBackend => "cross-backend",
        })
    }
}

/// The outcome of one validated kernel on one input.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// The kernel or backend validated.
    pub kernel: String,
    /// What it was compared with.
    pub reference: Reference,
    /// The input shapes, in words.
    pub shapes: String,
    /// Worst error relative to the summed magnitudes.
    pub max_rel: f64,
    /// Worst absolute error.
    pub max_abs: f64,
    /// The tolerance on `max_rel`.
    pub tolerance: f64,
    /// Whether it passed (also false when an output element was never written).
    pub pass: bool,
    /// Anything else worth saying (a failure's first bad element, an error).
    pub note: String,
}

/// A named group of validation cases.
pub struct Case {
    /// The case's name, such as `spmm/f32`.
    pub name: &'static str,
    /// Runs the case on a device.
    pub run: fn(&Device) -> Result<Vec<Outcome>>,
}

/// Every case of the project. A new op adds its file's cases here.
pub fn registry() -> Vec<Case> {
    let mut v = products::cases();
    v.extend(topk::cases());
    v.extend(cs::cases());
    v
}

/// Runs every case on `device`; a case that errors is reported as a failure, not propagated,
/// so one broken kernel does not hide the others.
pub fn run_all(device: &Device, progress: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    // Outputs sentinel-filled, so an element no kernel wrote fails its case.
    let was = device.gpu().map(|g| g.sentinels());
    if let Some(g) = device.gpu() {
        g.set_sentinels(true);
    }
    let mut out = Vec::new();
    for case in registry() {
        progress(case.name);
        match (case.run)(device) {
            Ok(v) => out.extend(v),
            Err(e) => out.push(Outcome {
                kernel: case.name.to_string(),
                reference: Reference::NaiveOracle,
                shapes: String::new(),
                max_rel: f64::INFINITY,
                max_abs: f64::INFINITY,
                tolerance: 0.0,
                pass: false,
                note: e.to_string(),
            }),
        }
    }
    if let (Some(g), Some(was)) = (device.gpu(), was) {
        g.set_sentinels(was);
    }
    out
}
