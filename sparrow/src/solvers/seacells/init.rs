//! Initial archetypes, as SEACells: waypoints by max-min sampling in each diffusion component
//! (palantir's `_max_min_sampling`, floor(N / components) points per component from a seeded
//! random start), then greedy column-subset selection on K (SEACells' `_get_greedy_centers`)
//! for N - waypoints + 10 more, the first N distinct cells kept.
//!
//! The greedy selection ([`super::greedy`]) keeps its vectors sparse, local to their centres.

pub use super::greedy::greedy_css;
use crate::matrix::{Csr, Rng};

/// Entries per parallel task of a max-min pass.
const CHUNK: usize = 16_384;

/// Max-min (farthest point) sampling in one dimension per component: a random start, then
/// repeatedly the cell farthest from those chosen (lowest index on ties). A pass over the cells
/// takes the point chosen last into every distance and finds the next farthest at once, in
/// parallel: N passes over n cells, which dominated the initialisation serially at 500,000
/// cells.
pub fn max_min(components: &[Vec<f64>], per_component: usize, rng: &mut Rng) -> Vec<usize> {
    use rayon::prelude::*;
    /// The farther of two (cell, distance) candidates, `a` from lower cells on ties.
    fn farther(a: (usize, f64), b: (usize, f64)) -> (usize, f64) {
        if b.1 > a.1 || (b.1 == a.1 && b.0 < a.0) {
            b
        } else {
            a
        }
    }
    let none = (usize::MAX, f64::NEG_INFINITY);
    let mut out = Vec::new();
    for v in components {
        let n = v.len();
        if n == 0 || per_component == 0 {
            continue;
        }
        let start = rng.below(n as u64) as usize;
        out.push(start);
        let mut min_d = vec![0.0; n];
        let mut last: Option<usize> = None;
        for _ in 1..per_component {
            let vb = v[last.unwrap_or(start)];
            let first = last.is_none();
            let (best, _) = min_d
                .par_chunks_mut(CHUNK)
                .zip(v.par_chunks(CHUNK))
                .enumerate()
                .map(|(c, (d, x))| {
                    let mut b = none;
                    for (j, (dj, &xj)) in d.iter_mut().zip(x).enumerate() {
                        let e = (xj - vb).abs();
                        *dj = if first { e } else { dj.min(e) };
                        if *dj > b.1 {
                            b = (c * CHUNK + j, *dj);
                        }
                    }
                    b
                })
                .reduce(|| none, farther);
            // No finite distance above -inf (NaN everywhere): the first cell, as a scan would.
            let best = if best == usize::MAX { 0 } else { best };
            out.push(best);
            last = Some(best);
        }
    }
    out
}

/// The initial archetypes: waypoints from the diffusion components, then greedy centres, the
/// first `n_meta` distinct cells.
pub fn initial_archetypes(
    m: &Csr<f64>,
    components: &[Vec<f64>],
    n_meta: usize,
    seed: u64,
) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let per = if components.is_empty() {
        0
    } else {
        n_meta / components.len()
    };
    complete(m, max_min(components, per, &mut rng), n_meta)
}

/// Shares of `total` in proportion to `sizes` by largest remainders (ties to the lower index);
/// they sum to `total` when any size is positive.
pub fn shares(total: usize, sizes: &[usize]) -> Vec<usize> {
    let all: usize = sizes.iter().sum();
    if all == 0 {
        return vec![0; sizes.len()];
    }
    let exact: Vec<(usize, usize)> = sizes
        .iter()
        .map(|&s| {
            let t = total as u128 * s as u128;
            ((t / all as u128) as usize, (t % all as u128) as usize)
        })
        .collect();
    let mut out: Vec<usize> = exact.iter().map(|e| e.0).collect();
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    let left = total - out.iter().sum::<usize>();
    for &p in order.iter().take(left) {
        out[p] += 1;
    }
    out
}

/// [`initial_archetypes`] on a diffusion graph that falls apart into `pieces` (components from
/// [`super::diffusion::multiscale_by_piece`]): the metacells are shared among the pieces in
/// proportion to their cells ([`shares`]), and each piece's waypoints are max-min sampled in its
/// own coordinates, among its own cells, as SEACells would on that piece alone; the greedy
/// centres on K then complete the set over all cells. Max-min sampling over all cells at once
/// would compare coordinates of different pieces' maps, which mean nothing to each other.
pub fn initial_archetypes_by_piece(
    m: &Csr<f64>,
    components: &[Vec<f64>],
    pieces: &[Vec<usize>],
    n_meta: usize,
    seed: u64,
) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let sizes: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
    let mut waypoints = Vec::new();
    for (cells, share) in pieces.iter().zip(shares(n_meta, &sizes)) {
        let per = if components.is_empty() {
            0
        } else {
            share / components.len()
        };
        if per == 0 {
            continue;
        }
        let own: Vec<Vec<f64>> = components
            .iter()
            .map(|v| cells.iter().map(|&c| v[c]).collect())
            .collect();
        waypoints.extend(max_min(&own, per, &mut rng).into_iter().map(|i| cells[i]));
    }
    complete(m, waypoints, n_meta)
}

/// The first `n_meta` distinct waypoints, then greedy centres, then the lowest unused cells.
fn complete(m: &Csr<f64>, waypoints: Vec<usize>, n_meta: usize) -> Vec<usize> {
    let n = m.nrows();
    let mut seen = vec![false; n];
    let mut out = Vec::new();
    for w in waypoints {
        if !seen[w] && out.len() < n_meta {
            seen[w] = true;
            out.push(w);
        }
    }
    if out.len() < n_meta {
        let more = greedy_css(m, n_meta - out.len() + 10, &out);
        for c in more {
            if !seen[c] && out.len() < n_meta {
                seen[c] = true;
                out.push(c);
            }
        }
    }
    // Fewer distinct candidates than N (tiny inputs): the lowest unused cells.
    let mut j = 0;
    while out.len() < n_meta && j < n {
        if !seen[j] {
            seen[j] = true;
            out.push(j);
        }
        j += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serial scan max-min sampling was: the oracle.
    fn max_min_serial(components: &[Vec<f64>], per: usize, rng: &mut Rng) -> Vec<usize> {
        let mut out = Vec::new();
        for v in components {
            if v.is_empty() || per == 0 {
                continue;
            }
            let start = rng.below(v.len() as u64) as usize;
            out.push(start);
            let mut min_d: Vec<f64> = v.iter().map(|x| (x - v[start]).abs()).collect();
            for _ in 1..per {
                let (best, _) =
                    min_d
                        .iter()
                        .enumerate()
                        .fold((0usize, f64::NEG_INFINITY), |acc, (i, &d)| {
                            if d > acc.1 {
                                (i, d)
                            } else {
                                acc
                            }
                        });
                out.push(best);
                let vb = v[best];
                min_d
                    .iter_mut()
                    .zip(v)
                    .for_each(|(d, x)| *d = d.min((x - vb).abs()));
            }
        }
        out
    }

    /// The parallel passes pick the serial scan's cells: smooth values, values with many
    /// ties (a few levels, so distances tie and run out), several chunks, a single cell.
    #[test]
    fn parallel_max_min_equals_the_serial_scan() {
        let mut rng = Rng::new(9);
        let smooth: Vec<f64> = (0..70_000).map(|_| rng.uniform()).collect();
        let levels: Vec<f64> = (0..50_000).map(|_| rng.below(7) as f64).collect();
        let comps = vec![smooth, levels, vec![3.0]];
        for per in [1, 2, 40, 300] {
            let want = max_min_serial(&comps, per, &mut Rng::new(per as u64));
            let got = max_min(&comps, per, &mut Rng::new(per as u64));
            assert_eq!(got, want, "per = {per}");
        }
    }
}
