//! How the CPU backends of SpMV and SpMM share out a CSR matrix's rows: ranges of rows of about
//! equal work (entries plus rows, so runs of empty rows count too), and rows of [`PIECE`]
//! entries or more in pieces whose partial sums are added in order afterwards. Rows taken
//! whole, a task each, left one thread with a row of a million entries while the others
//! waited. The pieces are fixed in size, not in number, so a row's sum is the same bits on any
//! number of threads.

use std::ops::Range;

/// Entries of a task, and the length from which a row is cut into pieces of this many.
pub(crate) const PIECE: usize = 1 << 16;

/// One parallel task over a matrix's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Task {
    /// Whole rows, each shorter than [`PIECE`].
    Rows(Range<usize>),
    /// Entries `entries` of a long row, whose partial sum goes to `slot`.
    Piece {
        /// The row.
        row: usize,
        /// Entry positions in the matrix.
        entries: Range<usize>,
        /// Index of the partial sum.
        slot: usize,
    },
}

/// The tasks in row order, and each long row with the slots of its pieces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RowWork {
    pub tasks: Vec<Task>,
    pub long: Vec<(usize, Range<usize>)>,
}

impl RowWork {
    /// The work of the matrix with these row offsets.
    pub fn of(row_ptr: &[i64]) -> RowWork {
        let nrows = row_ptr.len().saturating_sub(1);
        // Work up to row i: strictly increasing, so a range's work is a difference.
        let work = |i: usize| row_ptr[i] as usize + i;
        let mut w = RowWork::default();
        let mut slots = 0;
        let mut r = 0;
        while r < nrows {
            let (start, end) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            if end - start >= PIECE {
                let first = slots;
                for s in (start..end).step_by(PIECE) {
                    w.tasks.push(Task::Piece {
                        row: r,
                        entries: s..(s + PIECE).min(end),
                        slot: slots,
                    });
                    slots += 1;
                }
                w.long.push((r, first..slots));
                r += 1;
                continue;
            }
            // The last row e with work(e) - work(r) <= PIECE: rows r..e hold no long row.
            let limit = work(r) + PIECE;
            let (mut lo, mut hi) = (r + 1, nrows);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if work(mid) <= limit {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            w.tasks.push(Task::Rows(r..lo));
            r = lo;
        }
        w
    }

    /// Partial sums the pieces need.
    pub fn slots(&self) -> usize {
        self.long.last().map_or(0, |(_, s)| s.end)
    }

    /// Each task with what it alone writes: its rows of `out` (rows `ld` apart, the last one
    /// possibly shorter), or its piece's `width` partial sums in `partial` (`slots() * width`
    /// long). The long rows' own outputs are in no task's share.
    pub fn outputs<'a, T>(
        &self,
        out: &'a mut [T],
        ld: usize,
        partial: &'a mut [T],
        width: usize,
    ) -> Vec<Out<'a, T>> {
        let (mut rest, mut rest_p) = (out, partial);
        let mut done = 0;
        let mut outs = Vec::with_capacity(self.tasks.len());
        for t in &self.tasks {
            match t {
                Task::Rows(r) => {
                    let (_, tail) = std::mem::take(&mut rest).split_at_mut((r.start - done) * ld);
                    let (mine, tail) = tail.split_at_mut((r.len() * ld).min(tail.len()));
                    rest = tail;
                    done = r.end;
                    outs.push(Out::Rows(r.clone(), mine));
                }
                Task::Piece { entries, .. } => {
                    let (p, tail) = std::mem::take(&mut rest_p).split_at_mut(width);
                    rest_p = tail;
                    outs.push(Out::Piece(entries.clone(), p));
                }
            }
        }
        outs
    }
}

/// What one task writes ([`RowWork::outputs`]).
pub(crate) enum Out<'a, T> {
    /// Rows `.0` and their outputs.
    Rows(Range<usize>, &'a mut [T]),
    /// A piece's entries and its partial sums.
    Piece(Range<usize>, &'a mut [T]),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ptr(lens: &[usize]) -> Vec<i64> {
        let mut p = vec![0i64];
        for &l in lens {
            p.push(p.last().unwrap() + l as i64);
        }
        p
    }

    /// Every row is in exactly one task or long row, in order; no task holds more than
    /// PIECE work; the pieces tile their rows.
    fn check(lens: &[usize]) -> RowWork {
        let p = ptr(lens);
        let w = RowWork::of(&p);
        let mut next_row = 0;
        let mut next_slot = 0;
        let mut long = w.long.iter();
        for t in &w.tasks {
            match t {
                Task::Rows(r) => {
                    assert_eq!(r.start, next_row, "{lens:?}");
                    assert!(r.end > r.start);
                    let work = (p[r.end] - p[r.start]) as usize + r.len();
                    assert!(work <= PIECE || r.len() == 1, "{lens:?}: {r:?}");
                    assert!(r.clone().all(|i| lens[i] < PIECE));
                    next_row = r.end;
                }
                Task::Piece { row, entries, slot } => {
                    assert_eq!(*slot, next_slot);
                    next_slot += 1;
                    if entries.start == p[*row] as usize {
                        assert_eq!(*row, next_row);
                        let (lr, s) = long.next().unwrap();
                        assert_eq!((*lr, s.start), (*row, *slot));
                    }
                    assert!(entries.len() <= PIECE && !entries.is_empty());
                    if entries.end == p[*row + 1] as usize {
                        next_row = row + 1;
                    }
                }
            }
        }
        assert_eq!(next_row, lens.len());
        assert_eq!(w.slots(), next_slot);
        assert!(long.next().is_none());
        w
    }

    #[test]
    fn rows_tile_the_matrix() {
        check(&[]);
        check(&[0]);
        check(&[0; 200_000]);
        check(&[3, 0, 7, 1]);
        check(&[PIECE - 1, PIECE, PIECE + 1, 0, 5, 3 * PIECE]);
        let w = check(&[1, 2 * PIECE + 3, 0, 0]);
        assert_eq!(w.long, vec![(1, 0..3)]);
        assert_eq!(w.tasks.len(), 5);
        let mut lens = vec![16; 100_000];
        lens[500] = 1_200_000;
        lens[501] = 1_200_000;
        let w = check(&lens);
        assert_eq!(w.long.len(), 2);
        // 1.6M entries and 100,000 rows of short work in tasks of at most PIECE.
        let short = w
            .tasks
            .iter()
            .filter(|t| matches!(t, Task::Rows(_)))
            .count();
        assert!((26..=30).contains(&short), "{short}");
    }
}
