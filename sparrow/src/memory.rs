//! Guards for allocations whose size comes from user input (a header, a flag, a shape): each is
//! sized with checked arithmetic and compared with the memory this machine can give before any
//! byte is allocated, so one large number ends in [`Error::TooLarge`], never in an abort.

use crate::{Error, Result};

/// Bytes of `dims` elements of `elem` bytes each; an overflow is [`Error::TooLarge`].
pub fn bytes_of(what: &str, dims: &[usize], elem: usize) -> Result<u64> {
    dims.iter()
        .try_fold(elem as u64, |acc, &d| acc.checked_mul(d as u64))
        .ok_or_else(|| Error::TooLarge {
            what: what.to_string(),
            needed: u64::MAX,
            limit: format!(
                "its shape {} overflows 64 bits",
                dims.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(" x ")
            ),
        })
}

/// The bytes this process may still allocate: the kernel's MemAvailable (Linux), capped by
/// `SPARROW_MEMORY_LIMIT` (bytes) when that is set; `u64::MAX / 2` where neither says.
pub fn available() -> u64 {
    let cap = std::env::var("SPARROW_MEMORY_LIMIT")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let avail = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    });
    match (avail, cap) {
        (Some(a), Some(c)) => a.min(c),
        (Some(a), None) => a,
        (None, Some(c)) => c,
        (None, None) => u64::MAX / 2,
    }
}

/// Refuses `bytes` for `what` when they exceed what [`available`] reports.
pub fn ensure_fits(what: &str, bytes: u64) -> Result<()> {
    let avail = available();
    if bytes > avail {
        return Err(Error::TooLarge {
            what: what.to_string(),
            needed: bytes,
            limit: format!(
                "this machine has {} available",
                crate::error::human_bytes(avail)
            ),
        });
    }
    Ok(())
}

/// Checks that `dims` elements of `elem` bytes fit, returning their count.
pub fn ensure_elems(what: &str, dims: &[usize], elem: usize) -> Result<usize> {
    let bytes = bytes_of(what, dims, elem)?;
    ensure_fits(what, bytes)?;
    Ok((bytes / elem.max(1) as u64) as usize)
}

/// A vector of `n` copies of `fill`, refused with [`Error::TooLarge`] rather than aborting when
/// the machine cannot hold it.
pub fn try_filled<T: Clone>(what: &str, n: usize, fill: T) -> Result<Vec<T>> {
    let bytes = bytes_of(what, &[n], std::mem::size_of::<T>())?;
    ensure_fits(what, bytes)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::TooLarge {
        what: what.to_string(),
        needed: bytes,
        limit: "the allocator refused it".to_string(),
    })?;
    v.resize(n, fill);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_shapes_are_too_large() {
        let e = bytes_of("a grid", &[usize::MAX, 3], 8).unwrap_err();
        assert!(e.to_string().contains("too large"), "{e}");
        assert!(e.to_string().contains("overflows"), "{e}");
    }

    #[test]
    fn requests_past_the_machine_are_refused_with_their_size() {
        let e = ensure_fits("a matrix", u64::MAX - 1).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("a matrix is too large") && s.contains("PiB"),
            "{s}"
        );
        assert!(try_filled("v", 1 << 62, 0u8).is_err());
        assert_eq!(try_filled("v", 3, 7u8).unwrap(), vec![7, 7, 7]);
    }
}
