//! SEACells on the GPU against the CPU: the kNN exactly (several distance tiles, duplicate
//! cells), the B update step for step, and whole fits' assignments and RSS.

use sparrow::matrix::Csr;
use sparrow::matrix::Rng;
use sparrow::matrix::{io, Dense};
use sparrow::solvers::seacells::fit::{fit_on, gaussian_mixture, Config};
use sparrow::solvers::seacells::fw::{kb_cols, update_a, update_b, update_b_with};
use sparrow::solvers::seacells::gpu::GpuSteps;
use sparrow::solvers::seacells::gpu::{knn_tiled, BPath, KatSource, Solver, B_CHUNK, ROW_MAX_COLS};
use sparrow::solvers::seacells::kernel::{kernel_from_knn, knn, Symmetrize};
use sparrow::solvers::seacells::rows::transpose;
use sparrow::solvers::seacells::sparse::SpVec;
use sparrow::Device;

use super::gpu;

/// A mixture with some cells copied onto others, so exact distance ties and zero distances
/// to other cells occur.
fn mixture_with_duplicates(n: usize, d: usize) -> Dense<f64> {
    let (x, _) = gaussian_mixture(n, d, 7, 3);
    let mut v: Vec<f64> = (0..n).flat_map(|i| x.row(i).to_vec()).collect();
    for i in (0..n).step_by(97) {
        let j = (i * 31 + 5) % n;
        let row: Vec<f64> = v[j * d..(j + 1) * d].to_vec();
        v[i * d..(i + 1) * d].copy_from_slice(&row);
    }
    Dense::from_rows(n, d, v).unwrap()
}

#[test]
fn small_seacells_knn_is_the_cpus() {
    let g = gpu();
    let x = mixture_with_duplicates(1_500, 13);
    let want = knn(&x, 30).unwrap();
    // One tile, then tiles of 200 rows with a short last one.
    for tile in [1usize << 27, 200 * 1_500] {
        let got = knn_tiled(&g, &x, 30, tile).unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_eq!(a, b, "cell {i}, tile {tile}");
        }
    }
    // f32 input is widened as on the CPU.
    let x32 = Dense::from_rows(
        300,
        13,
        (0..300)
            .flat_map(|i| x.row(i).iter().map(|&v| v as f32).collect::<Vec<_>>())
            .collect(),
    )
    .unwrap();
    assert_eq!(
        knn_tiled(&g, &x32, 7, 1 << 27).unwrap(),
        knn(&x32, 7).unwrap()
    );
    assert!(knn_tiled(&g, &x32, 301, 1 << 27).is_err());
}

/// Several gradient chunks (300 archetypes), every step taken (no early stop): the picks,
/// hence B, match the CPU's on at least 99% of archetypes.
#[test]
fn seacells_b_update_matches_the_cpu() {
    let g = gpu();
    let (x, _) = gaussian_mixture(3_000, 10, 20, 1);
    let nb = knn(&x, 15).unwrap();
    let m = kernel_from_knn(&nb, 15, Symmetrize::Union).unwrap();
    let (n, nm) = (3_000usize, 300usize);
    assert!(nm > 2 * B_CHUNK);
    // B: one cell per archetype (every tenth); A: each cell split over two or three.
    let every_tenth: Vec<usize> = (0..n).step_by(10).collect();
    let (a, b) = b_problem(n, nm, &every_tenth);
    let cpu = update_b(&m, &a, &b, 12, 12, 0.0);
    let solver = Solver::new(&g, &m).unwrap();
    let got = solver
        .update_b_on(BPath::Chunked, &m, &a, &b, 12, 12, 0.0)
        .unwrap();
    assert_eq!(got.steps, cpu.steps);
    let same = got.b.iter().zip(&cpu.b).filter(|(p, q)| {
        p.len() == q.len()
            && p.iter()
                .zip(q.iter())
                .all(|(u, v)| u.0 == v.0 && (u.1 - v.1).abs() <= 1e-12)
    });
    let same = same.count();
    assert!(same * 100 >= nm * 99, "{same} of {nm} archetypes agree");
    // K B comes back for the new B.
    assert_eq!(got.kb.len(), nm);
}

/// A and B for a fused-update test over `nm` archetypes: B one cell per archetype, all
/// from `cells` (so K B misses the other clusters' cells); A splits each cell over two or
/// three archetypes.
fn b_problem(n: usize, nm: usize, cells: &[usize]) -> (Vec<SpVec>, Vec<SpVec>) {
    let b: Vec<SpVec> = (0..nm)
        .map(|c| vec![(cells[c % cells.len()] as u32, 1.0)])
        .collect();
    let a: Vec<SpVec> = (0..n)
        .map(|i| {
            let c = (i / 10) % nm;
            let mut v = vec![(c as u32, 0.7), (((c + 1) % nm) as u32, 0.3)];
            if i % 3 == 0 {
                v = vec![
                    (c as u32, 0.5),
                    (((c + 1) % nm) as u32, 0.3),
                    (((c + 7) % nm) as u32, 0.2),
                ];
            }
            v.sort_by_key(|e| e.0);
            v.dedup_by_key(|e| e.0);
            v
        })
        .collect();
    (a, b)
}

/// Random rows over `ncols` columns, `per_row` draws each (ascending, duplicates merged), some
/// rows empty.
fn random_rows(n: usize, ncols: usize, per_row: usize, seed: u64) -> Vec<SpVec> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            if i % 11 == 5 {
                return Vec::new();
            }
            let mut r: SpVec = (0..per_row)
                .map(|_| (rng.below(ncols as u64) as u32, 0.05 + rng.uniform()))
                .collect();
            r.sort_by_key(|e| e.0);
            r.dedup_by_key(|e| e.0);
            r
        })
        .collect()
}

/// The CPU's M (M X) for X by rows (`kb_cols` over X's columns), as rows, negated by `sign`
/// and in `order` where given.
fn cpu_m_m_times(
    m: &Csr<f64>,
    x: &[SpVec],
    ncols: usize,
    order: Option<&[u32]>,
    sign: f64,
) -> Vec<SpVec> {
    let n = x.len();
    let rows = transpose(&kb_cols(m, &transpose(x, ncols)), n);
    let signed = |r: &SpVec| -> SpVec { r.iter().map(|&(c, v)| (c, sign * v)).collect() };
    match order {
        Some(o) => o.iter().map(|&i| signed(&rows[i as usize])).collect(),
        None => rows.iter().map(signed).collect(),
    }
}

fn assert_bits(got: &[SpVec], want: &[SpVec], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: rows");
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        let bits =
            |v: &SpVec| -> Vec<(u32, u64)> { v.iter().map(|&(c, x)| (c, x.to_bits())).collect() };
        assert_eq!(bits(g), bits(w), "{what}: row {r}");
    }
}

/// The B update's products on the device, M (M X) by rows, are the CPU's kb_cols bit for
/// bit: B-like and A-like operands over a mixture's kernel (n not a multiple of the block's
/// four warps, rows in a permuted order and in cell order, negated and not), rows long enough
/// that some outgrow the hash set and take the dense row (1,500 columns), and an error, not
/// a wrong answer, past the most columns a dense row holds.
#[test]
fn seacells_row_products_are_the_cpus() {
    let g = gpu();
    let n = 3_001;
    let (x, _) = gaussian_mixture(n, 10, 20, 2);
    let nb = knn(&x, 15).unwrap();
    let m = kernel_from_knn(&nb, 15, Symmetrize::Union).unwrap();
    let solver = Solver::new(&g, &m).unwrap();
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut rng = Rng::new(9);
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (ncols, per_row, what) in [
        (300usize, 3usize, "A-like"),
        (40, 1, "B-like"),
        (1_500, 60, "long rows"),
    ] {
        let xr = random_rows(n, ncols, per_row, ncols as u64);
        for (ord, sign) in [(None, -1.0), (Some(&order[..]), 1.0)] {
            let got = solver.m_m_times_rows(&xr, ncols, ord, sign).unwrap();
            let want = cpu_m_m_times(&m, &xr, ncols, ord, sign);
            assert_bits(&got, &want, what);
        }
        if what == "long rows" {
            // Some rows outgrew the hash set's 768 columns.
            let want = cpu_m_m_times(&m, &xr, ncols, None, 1.0);
            assert!(
                want.iter().any(|r| r.len() > 768),
                "no row took the dense path"
            );
        }
    }
    // At the bound the dense path holds ROW_MAX_COLS sums in shared memory; one past it is
    // refused.
    let at = random_rows(n, ROW_MAX_COLS, 60, 5);
    let got = solver.m_m_times_rows(&at, ROW_MAX_COLS, None, 1.0).unwrap();
    assert_bits(
        &got,
        &cpu_m_m_times(&m, &at, ROW_MAX_COLS, None, 1.0),
        "at ROW_MAX_COLS",
    );
    let wide = random_rows(n, ROW_MAX_COLS + 1, 60, 4);
    match solver.m_m_times_rows(&wide, ROW_MAX_COLS + 1, None, 1.0) {
        Err(sparrow::Error::Unsupported { .. }) => {}
        other => panic!("{} columns: {:?}", ROW_MAX_COLS + 1, other.map(|r| r.len())),
    }
}

/// The fused B update is the CPU's update bit for bit, with the CPU's K A^T and K B and with
/// the device's: two columns a thread with many blocks of cells (3,000 cells, 300
/// archetypes) and eight columns a thread (300 cells, 1,100 archetypes), B drawn from one
/// cluster so many cells have no K B entries, with and without the early stop. The chunked
/// SpMM path's picks agree on at least 99% of archetypes.
#[test]
fn seacells_fused_b_update_is_the_cpus() {
    let g = gpu();
    for (n, nm) in [(3_000usize, 300usize), (300, 1_100)] {
        let (x, labels) = gaussian_mixture(n, 10, 20, 1);
        let nb = knn(&x, 15).unwrap();
        let m = kernel_from_knn(&nb, 15, Symmetrize::Union).unwrap();
        let one: Vec<usize> = (0..n).filter(|&i| labels[i] == 3).collect();
        let (a, b) = b_problem(n, nm, &one);
        let solver = Solver::new(&g, &m).unwrap();
        assert_eq!(solver.b_path(nm), BPath::Fused(KatSource::Device));
        for (steps, min_steps, tol) in [(12usize, 12usize, 0.0), (50, 10, 1e-3)] {
            let cpu = update_b(&m, &a, &b, steps, min_steps, tol);
            let mut on = GpuSteps::new(&solver, nm, KatSource::Host).unwrap();
            let host = update_b_with(&m, &a, &b, steps, min_steps, tol, &mut on).unwrap();
            let (by_bound, by_all) = on.steps_by();
            println!("n {n} nm {nm} steps {steps}: {by_bound} steps read by the bound, {by_all} over every cell");
            // With more archetypes than cells most columns stay open to the bound.
            assert!(n < nm || by_bound > 0);
            assert_eq!(by_bound + by_all, host.steps.min(steps - 1) + 1);
            assert_eq!(host.steps, cpu.steps, "n {n} nm {nm}");
            assert_eq!(host.b, cpu.b, "n {n} nm {nm} steps {steps}");
            assert_eq!(host.kb, cpu.kb, "n {n} nm {nm} steps {steps}");
            // The device's K A^T and K B sum in the CPU's order: the same update bit for bit.
            let dev = solver
                .update_b_on(
                    BPath::Fused(KatSource::Device),
                    &m,
                    &a,
                    &b,
                    steps,
                    min_steps,
                    tol,
                )
                .unwrap();
            assert_eq!(dev.steps, cpu.steps, "device n {n} nm {nm}");
            assert_eq!(dev.b, cpu.b, "device n {n} nm {nm} steps {steps}");
            assert_eq!(dev.kb, cpu.kb, "device n {n} nm {nm} steps {steps}");
            {
                let path = BPath::Chunked;
                let got = solver
                    .update_b_on(path, &m, &a, &b, steps, min_steps, tol)
                    .unwrap();
                let same = got
                    .b
                    .iter()
                    .zip(&cpu.b)
                    .filter(|(p, q)| {
                        p.len() == q.len()
                            && p.iter()
                                .zip(q.iter())
                                .all(|(u, v)| u.0 == v.0 && (u.1 - v.1).abs() <= 1e-12)
                    })
                    .count();
                println!("n {n} nm {nm} steps {steps} {path:?}: {same} of {nm} columns of B agree, steps {} / {}", got.steps, cpu.steps);
                assert!(same * 100 >= nm * 99, "{path:?}: {same} of {nm} agree");
            }
        }
    }
}

/// Exact ties across the fused kernel's blocks go to the lowest cell. With M = I, K B = B
/// and K A^T = A^T; every cell has the one atom i % nm, and B's column c holds cell c, so
/// G[i, c] = -1 for every later cell with i % nm = c: the pick is c + nm. Small enough
/// for compute-sanitizer at 300 archetypes; the wider cases reach the 4-, 16- and
/// 32-column kernels.
#[test]
fn small_seacells_fused_b_ties_to_the_lowest_cell() {
    for (n, nm) in [
        (2_000usize, 300usize),
        (1_500, 700),
        (4_300, 2_100),
        (8_200, 4_100),
    ] {
        fused_ties(n, nm);
    }
}

fn fused_ties(n: usize, nm: usize) {
    let g = gpu();
    let m = Csr::new(
        n,
        n,
        (0..=n as i64).collect(),
        (0..n as i32).collect(),
        vec![1.0f64; n],
    )
    .unwrap();
    let a: Vec<SpVec> = (0..n).map(|i| vec![((i % nm) as u32, 1.0)]).collect();
    let b: Vec<SpVec> = (0..nm).map(|c| vec![(c as u32, 1.0)]).collect();
    let solver = Solver::new(&g, &m).unwrap();
    // B's own cell at full weight has G = t1[c, c] - 1 >= 0, so the bound cannot read the
    // column; at weight 0.1 it is negative and the bound reads it. Every column at full
    // weight: the fused kernel reads the step; every 16th: the bound, with those columns
    // read at every cell by the open-column kernel; none: the bound alone.
    for (every, bounded) in [(1usize, false), (16, true), (usize::MAX, true)] {
        let b: Vec<SpVec> = b
            .iter()
            .enumerate()
            .map(|(c, col)| vec![(col[0].0, if c % every == 0 { 1.0 } else { 0.1 })])
            .collect();
        fused_ties_with(&solver, &m, &a, &b, nm, bounded);
    }
}

fn fused_ties_with(
    solver: &Solver,
    m: &Csr<f64>,
    a: &[SpVec],
    b: &[SpVec],
    nm: usize,
    bounded: bool,
) {
    let cpu = update_b(m, a, b, 1, 1, 0.0);
    for src in [KatSource::Host, KatSource::Device] {
        let mut on = GpuSteps::new(solver, nm, src).unwrap();
        let got = update_b_with(m, a, b, 1, 1, 0.0, &mut on).unwrap();
        let want_by = if bounded { (1, 0) } else { (0, 1) };
        assert_eq!(on.steps_by(), want_by, "{src:?}");
        assert_eq!(got.b, cpu.b, "{src:?}");
        for (c, col) in got.b.iter().enumerate() {
            // gamma = 1 at the first step: the pick carries all the weight.
            let held: Vec<(u32, f64)> = col.iter().copied().filter(|e| e.1 > 0.0).collect();
            assert_eq!(held, vec![((c + nm) as u32, 1.0)], "{src:?} column {c}");
        }
    }
}

/// Random sparse K B rows (some cells without any) and a symmetric t1 with a dominant
/// diagonal, for an A update over nm archetypes.
fn a_problem(n: usize, nm: usize, seed: u64) -> (Vec<SpVec>, Vec<f64>) {
    let mut rng = Rng::new(seed);
    let kb: Vec<SpVec> = (0..n)
        .map(|i| {
            if i % 37 == 5 {
                return Vec::new();
            }
            let mut v: SpVec = (0..6)
                .map(|_| ((rng.next_u64() % nm as u64) as u32, rng.uniform()))
                .collect();
            v.sort_by_key(|e| e.0);
            v.dedup_by_key(|e| e.0);
            v
        })
        .collect();
    let mut t1 = vec![0.0; nm * nm];
    for r in 0..nm {
        t1[r * nm + r] = 1.0 + rng.uniform();
        for _ in 0..4 {
            let c = (rng.next_u64() % nm as u64) as usize;
            if c != r {
                let v = 0.2 * rng.uniform();
                t1[r * nm + c] = v;
                t1[c * nm + r] = v;
            }
        }
    }
    (kb, t1)
}

/// The A update's atoms are the CPU's bit for bit: several archetypes per thread
/// (nm = 1,100 > 256) and many cells, from uniform and from previous weights, and a long
/// run whose first atoms fall under the pruning threshold.
#[test]
fn seacells_a_update_is_the_cpus() {
    let g = gpu();
    // The solver's M only sets the cell count here.
    let kernel_for = |n: usize| {
        let (x, _) = gaussian_mixture(n, 5, 3, 2);
        kernel_from_knn(&knn(&x, 15).unwrap(), 15, Symmetrize::Union).unwrap()
    };
    for (n, nm, steps) in [
        (3_000usize, 300usize, 50usize),
        (300, 1_100, 50),
        (300, 40, 4_500),
    ] {
        let (kb, t1) = a_problem(n, nm, nm as u64);
        // The GPU takes K B by archetype.
        let kb_cols = transpose(&kb, nm);
        let solver = Solver::new(&g, &kernel_for(n)).unwrap();
        let first = update_a(&kb, &t1, nm, None, steps);
        assert_eq!(solver.update_a(&kb_cols, &t1, None, steps).unwrap(), first);
        let again = update_a(&kb, &t1, nm, Some(&first), steps);
        let got = solver.update_a(&kb_cols, &t1, Some(&first), steps).unwrap();
        assert_eq!(got, again, "n {n}, nm {nm}, steps {steps}");
        if steps > 1_000 {
            // Pruning ran: no atom is lighter than the threshold, weights sum to 1.
            for col in &got {
                assert!(col
                    .iter()
                    .all(|a| a.1 >= sparrow::solvers::seacells::fw::PRUNE));
                let s: f64 = col.iter().map(|a| a.1).sum();
                assert!((s - 1.0).abs() < 1e-9);
            }
        }
    }
}

/// Small enough for compute-sanitizer: the A update's shared-memory state over several
/// archetypes per thread, and a run long enough to prune.
#[test]
fn small_seacells_a_update_sanitize() {
    let g = gpu();
    let (x, _) = gaussian_mixture(64, 4, 2, 2);
    let m = kernel_from_knn(&knn(&x, 8).unwrap(), 8, Symmetrize::Union).unwrap();
    let solver = Solver::new(&g, &m).unwrap();
    for (nm, steps) in [(300usize, 40usize), (12, 4_600)] {
        let (kb, t1) = a_problem(64, nm, 7);
        let want = update_a(&kb, &t1, nm, None, steps);
        let got = solver
            .update_a(&transpose(&kb, nm), &t1, None, steps)
            .unwrap();
        assert_eq!(got, want, "nm {nm}, steps {steps}");
    }
}

/// The B update's argmin kernels on a hand-made gradient: ties across and within the
/// 4,096-cell ranges go to the lowest cell, a column of equal values to cell 0, and the gap
/// share is B's weighted sum minus the minimum.
#[test]
fn small_seacells_pick_ties_to_the_lowest_cell() {
    use sparrow::device::{Args, LaunchShape};
    use sparrow::kernels::SEACELLS;
    let g = gpu();
    let (n, ld, nc, span) = (10_000usize, 4usize, 3usize, 4_096usize);
    let mut gr = vec![1.0f64; n * ld];
    for i in [9_000usize, 5_000, 4_095, 100, 4_096] {
        gr[i * ld] = -2.0;
    }
    gr[9_999 * ld + 1] = -5.0;
    gr[5 * ld + 1] = -4.0;
    for i in 0..n {
        gr[i * ld + 2] = 0.25;
    }
    let parts = n.div_ceil(span);
    let gd = g.upload(&gr).unwrap();
    let pv = g.alloc_zeroed::<f64>(nc * parts).unwrap();
    let pi = g.alloc_zeroed::<i64>(nc * parts).unwrap();
    let pick = g.kernel(&SEACELLS, "seacells_b_pick").unwrap();
    unsafe {
        g.launch(
            &pick,
            LaunchShape {
                grid: [nc as u32, parts as u32, 1],
                block: [256, 1, 1],
                smem: 0,
                cluster: None,
                pdl: false,
            },
            Args::new()
                .ptr(g.ptr(&gd))
                .i64(n as i64)
                .i64(ld as i64)
                .i64(span as i64)
                .ptr(g.ptr(&pv))
                .ptr(g.ptr(&pi)),
        )
    }
    .unwrap();
    // B by archetype: column 0 holds cells 7 and 100, column 1 cell 9,999, column 2 none.
    let bptr = g.upload(&[0i64, 2, 3, 3]).unwrap();
    let bcell = g.upload(&[7i32, 100, 9_999]).unwrap();
    let bw = g.upload(&[0.5f64, 0.5, 1.0]).unwrap();
    let picks = g.upload(&[-1i32; 3]).unwrap();
    let gaps = g.upload(&[f64::NAN; 3]).unwrap();
    let gap = g.kernel(&SEACELLS, "seacells_b_gap").unwrap();
    unsafe {
        g.launch(
            &gap,
            LaunchShape::linear(1, 256),
            Args::new()
                .ptr(g.ptr(&gd))
                .i64(ld as i64)
                .i64(0)
                .i64(nc as i64)
                .i64(parts as i64)
                .ptr(g.ptr(&pv))
                .ptr(g.ptr(&pi))
                .ptr(g.ptr(&bptr))
                .ptr(g.ptr(&bcell))
                .ptr(g.ptr(&bw))
                .ptr(g.ptr(&picks))
                .ptr(g.ptr(&gaps)),
        )
    }
    .unwrap();
    assert_eq!(g.download(&picks, 3).unwrap(), vec![100, 9_999, 0]);
    let got = g.download(&gaps, 3).unwrap();
    assert_eq!(
        got,
        vec![0.5 * 1.0 + 0.5 * -2.0 - -2.0, -5.0 - -5.0, 0.0 - 0.25]
    );
}

fn agree<T: sparrow::Scalar>(x: &Dense<T>, nm: usize, what: &str) {
    let g = gpu();
    let cfg = Config::new(nm);
    let cpu = fit_on(&Device::Cpu, x, &cfg, &mut |_| {}).unwrap();
    let dev = Device::Cuda(g.clone());
    let got = fit_on(&dev, x, &cfg, &mut |_| {}).unwrap();
    let n = cpu.assignments.len();
    let same = cpu
        .assignments
        .iter()
        .zip(&got.assignments)
        .filter(|(a, b)| a == b)
        .count();
    let (rc, rg) = (cpu.rss[cpu.rss.len() - 1], got.rss[got.rss.len() - 1]);
    println!(
        "{what}: {same} of {n} hard assignments agree; RSS CPU {rc:.9e} GPU {rg:.9e}; iterations {} / {}",
        cpu.iterations, got.iterations
    );
    assert!(same * 100 >= n * 99, "{what}: {same} of {n} agree");
    assert!((rc - rg).abs() <= 1e-4 * rc, "{what}: RSS {rc} vs {rg}");
    // The same seed repeats on the GPU.
    let again = fit_on(&dev, x, &cfg, &mut |_| {}).unwrap();
    assert_eq!(
        again.assignments, got.assignments,
        "{what}: a second GPU run differs"
    );
    assert_eq!(again.rss, got.rss, "{what}: a second GPU run differs");
}

#[test]
fn seacells_gpu_fit_agrees_with_the_cpu() {
    let (x, _) = gaussian_mixture(3_000, 20, 10, 5);
    agree(&x, 100, "mixture 3,000 x 20, 100 metacells");
    // SPARROW_DATA names the folder holding pbmc68k_reduced (the bundle ships it).
    let dir = std::env::var("SPARROW_DATA")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../data").to_string());
    let path = std::path::Path::new(&dir).join("pbmc68k_reduced/X_pca.npy");
    let x: Dense<f32> = io::read_dense(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    agree(&x, 24, "pbmc68k_reduced, 24 metacells");
}

#[test]
fn seacells_gpu_fit_agrees_with_the_cpu_on_branching_trajectories() {
    let (x, _) = sparrow::solvers::seacells::synthetic::branching_trajectories(20_000, 30, 4, 0);
    agree(&x, 266, "branching trajectories 20,000 x 30, 266 metacells");
}
