//! The dense allocations of recovery, completion and the phase transition are checked against
//! the memory the machine can give before they are made: with the limit lowered through
//! `SPARROW_MEMORY_LIMIT`, each ends in `Error::TooLarge` saying how much it needs. (One test in
//! its own binary: the limit is process-wide.)

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use sparrow::matrix::{Csr, Dense};
use sparrow::solvers::completion::Complete;
use sparrow::solvers::cs::phase::{run as run_phase, PhaseConfig};
use sparrow::solvers::cs::{Method, Recover};
use sparrow::{Device, Error};

fn too_large(r: sparrow::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(e @ Error::TooLarge { .. }) => e.to_string(),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn dense_work_past_the_memory_limit_is_too_large() {
    std::env::set_var("SPARROW_MEMORY_LIMIT", (4u64 << 20).to_string());
    // Recovery: Phi 50 x 20,000 is 7.6 MiB in f64 (the caller's copy is made before the limit
    // counts), and the solvers' working copy of it does not fit in 4 MiB.
    let (m, n) = (50, 20_000);
    let phi = Dense::from_rows(
        m,
        n,
        (0..m * n)
            .map(|e| ((e * 7919 % 101) as f64) - 50.0)
            .collect(),
    )
    .unwrap();
    let y = Dense::filled(m, 1, 1, 1.0).unwrap();
    let e = too_large(
        Recover::new(Method::Iht)
            .sparsity(5)
            .run(&Device::Cpu, &phi, &y),
    );
    assert!(e.contains("MiB") && e.contains("4.0 MiB available"), "{e}");
    eprintln!("{e}");
    // Completion: 2,000 x 2,000 needs several dense 32 MiB matrices.
    let obs = Csr::from_triplets(2_000, 2_000, &[0], &[0], &[1.0]).unwrap();
    let e = too_large(Complete::new(1).run(&obs));
    assert!(e.contains("MiB"), "{e}");
    eprintln!("{e}");
    // Phase transition: each cell's Phi for n = 4,000 at delta 0.9 is 110 MiB.
    let cfg = PhaseConfig {
        method: Method::Iht,
        n: 4_000,
        deltas: vec![0.9],
        rhos: vec![0.1],
        trials: 1,
        signs: true,
        max_iter: 10,
    };
    let e = too_large(run_phase(&Device::Cpu, &cfg, &mut |_, _| {}));
    assert!(e.contains("MiB"), "{e}");
    eprintln!("{e}");
    std::env::remove_var("SPARROW_MEMORY_LIMIT");
}
