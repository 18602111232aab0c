//! `sparrow validate`.

use std::process::ExitCode;

use sparrow::validate::run_all;
use sparrow::{Device, Result};

pub fn run(ctx: &super::Ctx) -> Result<ExitCode> {
    let device = ctx.open_device()?;
    if let Device::Cpu = device {
        eprintln!("no GPU: validating the CPU backends against the oracles");
    }
    let pb = super::spinner("validating");
    let outcomes = run_all(&device, &mut |name| {
        pb.set_message(format!("validating {name}"))
    });
    pb.finish_and_clear();
    super::report_compiles(&device);
    let failed = outcomes.iter().filter(|o| !o.pass).count();
    if ctx.json {
        for o in &outcomes {
            println!("{}", serde_json::to_string(o).expect("outcome serializes"));
        }
    } else {
        println!(
            "{:<28} {:<13} {:<52} {:>10} {:>10} {:>6}",
            "kernel", "reference", "shapes", "max rel", "max abs", "result"
        );
        for o in &outcomes {
            println!(
                "{:<28} {:<13} {:<52} {:>10.2e} {:>10.2e} {:>6}{}",
                o.kernel,
                o.reference.to_string(),
                o.shapes,
                o.max_rel,
                o.max_abs,
                if o.pass { "pass" } else { "FAIL" },
                if o.note.is_empty() {
                    String::new()
                } else {
                    format!("  {}", o.note)
                }
            );
        }
        println!("{} passed, {} failed", outcomes.len() - failed, failed);
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
