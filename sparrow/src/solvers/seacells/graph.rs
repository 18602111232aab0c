//! Connected components of the fit's graphs (the kernel's kNN graph, the diffusion map's graph),
//! by union-find over a CSR: O(nnz) time, O(n) memory.
//!
//! An entry (i, j) joins i and j when its weight is positive: a weight that underflowed to 0
//! (cells far apart relative to their bandwidths) connects nothing, in the graph as in the
//! arithmetic on it. Rows and columns are read alike, so an asymmetric pattern joins its cells
//! as its symmetrisation would.

use crate::matrix::Csr;

/// The connected components of a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Components {
    /// How many components there are (0 only for a graph of no vertices).
    pub count: usize,
    /// Per vertex, its component, numbered from 0 in order of each component's lowest vertex.
    pub labels: Vec<u32>,
}

impl Components {
    /// The vertices of each component, ascending, components in label order.
    pub fn members(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.count];
        for (i, &l) in self.labels.iter().enumerate() {
            out[l as usize].push(i);
        }
        out
    }
}

fn find(parent: &mut [u32], mut i: u32) -> u32 {
    // Path halving: every other vertex on the way up points at its grandparent.
    while parent[i as usize] != i {
        let p = parent[i as usize];
        parent[i as usize] = parent[p as usize];
        i = parent[i as usize];
    }
    i
}

/// The connected components of the square graph `g` (n at most 2^32 vertices, as the fit's
/// cell indices), its edges the entries of positive weight off the diagonal.
pub fn connected_components(g: &Csr<f64>) -> Components {
    let n = g.nrows();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let (cols, vals) = (g.col_idx(), g.values());
    for i in 0..n {
        for p in g.row_range(i) {
            let j = cols[p] as usize;
            // `> 0.0` is false for NaN as for 0: neither joins anything.
            if j == i || j >= n || vals[p] <= 0.0 || vals[p].is_nan() {
                continue;
            }
            let (a, b) = (find(&mut parent, i as u32), find(&mut parent, j as u32));
            // The lower root wins, so a component's root is its lowest vertex.
            match a.cmp(&b) {
                std::cmp::Ordering::Less => parent[b as usize] = a,
                std::cmp::Ordering::Greater => parent[a as usize] = b,
                std::cmp::Ordering::Equal => {}
            }
        }
    }
    let mut labels = vec![0u32; n];
    let mut count = 0usize;
    for i in 0..n {
        let r = find(&mut parent, i as u32) as usize;
        // A root is its component's lowest vertex, met before any other of its vertices.
        labels[i] = if r == i {
            count += 1;
            (count - 1) as u32
        } else {
            labels[r]
        };
    }
    Components { count, labels }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(usize, usize, f64)]) -> Csr<f64> {
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n {
            r.push(i);
            c.push(i);
            v.push(1.0);
        }
        for &(a, b, w) in edges {
            r.extend([a, b]);
            c.extend([b, a]);
            v.extend([w, w]);
        }
        Csr::from_triplets(n, n, &r, &c, &v).unwrap()
    }

    #[test]
    fn components_are_numbered_by_their_lowest_vertex() {
        // {0, 3, 5}, {1, 4}, {2}, {6, 7}; the edge 2-6 has weight 0 and joins nothing.
        let g = graph(
            8,
            &[
                (5, 3, 0.5),
                (3, 0, 0.1),
                (4, 1, 1.0),
                (2, 6, 0.0),
                (7, 6, 2.0),
            ],
        );
        let c = connected_components(&g);
        assert_eq!(c.count, 4);
        assert_eq!(c.labels, vec![0, 1, 2, 0, 1, 0, 3, 3]);
        assert_eq!(
            c.members(),
            vec![vec![0, 3, 5], vec![1, 4], vec![2], vec![6, 7]]
        );
    }

    #[test]
    fn a_chain_in_reverse_is_one_component() {
        let n = 1000;
        let edges: Vec<(usize, usize, f64)> = (1..n).rev().map(|i| (i, i - 1, 1.0)).collect();
        let c = connected_components(&graph(n, &edges));
        assert_eq!(c.count, 1);
        assert!(c.labels.iter().all(|&l| l == 0));
        let empty = connected_components(&Csr::empty(0, 0).unwrap());
        assert_eq!((empty.count, empty.labels.len()), (0, 0));
    }
}
