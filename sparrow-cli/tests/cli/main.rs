//! The command line end to end on the CPU: files in, files out, and bad input answered with one
//! readable line and a non-zero exit, never a panic.
//!
//! One binary, a module per command: `products` (spmm, spmv), `errors` (bad input across the
//! commands), `device` (info, validate, demo and a missing GPU), `topk`, `cs` (recover, cs
//! phase-transition), `complete`, `seacells` and `bench`.

use std::path::PathBuf;
use std::process::{Command, Output};

mod bench;
mod complete;
mod cs;
mod device;
mod errors;
mod products;
mod seacells;
mod topk;

fn sparrow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sparrow"))
        .args(args)
        .output()
        .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sparrow-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// The one line the CLI prints on failure.
fn failure(out: &Output) -> String {
    assert!(!out.status.success(), "expected failure, got {out:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(lines.len(), 1, "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}
