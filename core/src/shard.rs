//! How one piece of work splits over the members of a device group, and how their results join.
//!
//! A workload that a group can run says so through [`Workload::sharding`](crate::Workload::sharding), a
//! [`Sharding`](crate::workload::Sharding): the units its
//! work splits along (elements of an array, rows of a matrix), how the input of a run of consecutive units is cut from
//! the whole input, and how the members' outputs, in order, make the whole output. The cut is a smaller instance of the
//! same workload, so a member runs it with its own variants, on its own device, checked by nothing new; only the join
//! is the group's own code, and the group's tests check it against the same reference as every other run.
//!
//! The split is contiguous and in proportion to shares ([`ranges`]), which a group takes from measurements of each
//! member, since equal parts leave the faster member idle.

use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};

/// `units` split into consecutive ranges in proportion to `shares` (one per member, non-negative, not all zero),
/// covering `0..units` exactly; a member whose share rounds to nothing gets an empty range.
///
/// ```
/// use gpuworthy_core::shard::ranges;
///
/// assert_eq!(ranges(10, &[3.0, 1.0]).unwrap(), vec![0..8, 8..10]);
/// assert_eq!(ranges(4, &[1.0, 0.0, 1.0]).unwrap(), vec![0..2, 2..2, 2..4]);
/// assert!(ranges(4, &[0.0, 0.0]).is_err());
/// ```
pub fn ranges(units: usize, shares: &[f64]) -> Result<Vec<Range<usize>>> {
    if shares.is_empty() {
        return Err(Error::invalid("a group needs at least one member's share"));
    }
    if let Some(bad) = shares.iter().find(|s| !s.is_finite() || **s < 0.0) {
        return Err(Error::invalid(format!("a share must be a finite number at least 0, not {bad}")));
    }
    let total: f64 = shares.iter().sum();
    if total <= 0.0 {
        return Err(Error::invalid("every share is 0: no member would run anything"));
    }
    let mut out = Vec::with_capacity(shares.len());
    let mut start = 0usize;
    let mut cumulative = 0.0;
    for (i, share) in shares.iter().enumerate() {
        cumulative += share;
        let end = if i + 1 == shares.len() {
            units
        } else {
            ((cumulative / total * units as f64).round() as usize).clamp(start, units)
        };
        out.push(start..end);
        start = end;
    }
    Ok(out)
}

/// `shares` applied to units of unequal cost: consecutive ranges over `costs` (one non-negative number per unit)
/// whose total costs are in proportion to `shares`, covering every unit exactly once. With equal costs it is
/// [`ranges`].
///
/// ```
/// use gpuworthy_core::shard::ranges_by_cost;
///
/// // The middle units cost nine times the outer ones: two equal shares cut where half the cost lies.
/// assert_eq!(ranges_by_cost(&[1.0, 9.0, 9.0, 1.0], &[1.0, 1.0]).unwrap(), vec![0..2, 2..4]);
/// assert_eq!(ranges_by_cost(&[1.0, 1.0, 1.0, 9.0], &[1.0, 1.0]).unwrap(), vec![0..3, 3..4]);
/// ```
pub fn ranges_by_cost(costs: &[f64], shares: &[f64]) -> Result<Vec<Range<usize>>> {
    let units = costs.len();
    // The checks on shares, and the answer when the costs say nothing.
    let even = ranges(units, shares)?;
    if let Some(bad) = costs.iter().find(|c| !c.is_finite() || **c < 0.0) {
        return Err(Error::invalid(format!("a unit's cost must be a finite number at least 0, not {bad}")));
    }
    let total_cost: f64 = costs.iter().sum();
    if total_cost <= 0.0 {
        return Ok(even);
    }
    let total_share: f64 = shares.iter().sum();
    let mut out = Vec::with_capacity(shares.len());
    let (mut start, mut unit, mut reached, mut wanted) = (0usize, 0usize, 0.0f64, 0.0f64);
    for (i, share) in shares.iter().enumerate() {
        wanted += share / total_share * total_cost;
        if i + 1 == shares.len() {
            unit = units;
        } else {
            // Take units while the cost reached stays nearer the target than it would be without the next one.
            while unit < units && (reached + costs[unit] - wanted).abs() <= (reached - wanted).abs() {
                reached += costs[unit];
                unit += 1;
            }
        }
        out.push(start..unit);
        start = unit;
    }
    Ok(out)
}

/// Pieces of a cut's or a join's copy one thread takes at a time.
const COPY_CHUNK: usize = 1 << 18;

/// An owned copy of `part`, made on every core: a member's cut of a large input. A fresh array's pages are mapped on
/// first touch, and one thread copying into them ran at a fraction of what the host's memory takes: on a two-H200
/// host, cutting each GPU's half of 2^28 floats took 370 ms and a run of `sum` at 2^30 spent 1.56 s cutting
/// (measured: docs/results/nvidia-h200-x2/groups/groups-runs-2.txt). The zeroed allocation maps no page; each thread
/// touches the pages it copies into.
pub fn copy_of<T: Copy + Default + Send + Sync>(part: &[T]) -> Vec<T> {
    let mut out = vec![T::default(); part.len()];
    out.par_chunks_mut(COPY_CHUNK).zip(part.par_chunks(COPY_CHUNK)).for_each(|(to, from)| to.copy_from_slice(from));
    out
}

/// Concatenates the parts' arrays in order: the join of workloads whose members each write their own consecutive
/// part of one array. Copied on every core, as [`copy_of`] cuts: joining two GPUs' halves of 2^28 floats on one thread
/// took 635 ms on the two-H200 host.
pub fn concatenate<T: Copy + Default + Send + Sync>(parts: Vec<(Range<usize>, Vec<T>)>) -> Vec<T> {
    if parts.len() == 1 {
        return parts.into_iter().next().map(|(_, part)| part).unwrap_or_default();
    }
    concatenate_slices(&parts.iter().map(|(_, part)| part.as_slice()).collect::<Vec<_>>())
}

/// `pieces` one after another in one new array, copied on every core ([`concatenate`]).
pub fn concatenate_slices<T: Copy + Default + Send + Sync>(pieces: &[&[T]]) -> Vec<T> {
    let total: usize = pieces.iter().map(|piece| piece.len()).sum();
    let mut out = vec![T::default(); total];
    let mut rest = out.as_mut_slice();
    let mut pairs = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let (here, after) = rest.split_at_mut(piece.len());
        pairs.push((here, *piece));
        rest = after;
    }
    pairs.into_par_iter().for_each(|(to, from)| {
        to.par_chunks_mut(COPY_CHUNK).zip(from.par_chunks(COPY_CHUNK)).for_each(|(t, f)| t.copy_from_slice(f));
    });
    out
}

/// The bytes of memory one task of [`zeroed`] maps in: one transparent huge page.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Arrays smaller than this are left to map their pages in as they are written ([`zeroed`]).
const SMALL_ARRAY_BYTES: usize = 2 * HUGE_PAGE_BYTES;

/// An array of `len` default values (zeros) whose pages are mapped in on every core before anything is written to
/// it: a download's output, a group's whole output that its members then write into at once.
///
/// A fresh large array is zero pages the kernel maps in on first touch, and mapping in 256 MiB costs more than
/// copying it (measured on the H200 machine's host: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so);
/// faulting them in during a copy puts that work on the copy's critical path. So the array is advised to use huge
/// pages (2 MiB: 128 faults for 256 MiB instead of 65 536), then touched once per 4 KiB page, one huge page per task
/// (tasks aligned to the huge pages, so that no two fault in the same one) on every core. Filling it with
/// `T::default()` in parallel instead took 49.4 ms for 1 GiB on a two-H200 host (measured:
/// docs/results/nvidia-h200-x2/groups/groups-runs-4.txt).
pub fn zeroed<T: Copy + Default + Send + Sync>(len: usize) -> Vec<T> {
    let mut out = vec![T::default(); len];
    if std::mem::size_of_val(out.as_slice()) < SMALL_ARRAY_BYTES {
        // A few pages map in on first touch for less than waking the thread pool costs: a reduction's few partial
        // values are downloaded into such an array on every launch.
        return out;
    }
    prefer_huge_pages(&mut out);
    let to_boundary = (out.as_ptr() as usize).next_multiple_of(HUGE_PAGE_BYTES) - out.as_ptr() as usize;
    let (head, rest) = out.split_at_mut((to_boundary / size_of::<T>().max(1)).min(len));
    rayon::join(
        || touch_pages(head),
        || rest.par_chunks_mut((HUGE_PAGE_BYTES / size_of::<T>().max(1)).max(1)).for_each(touch_pages),
    );
    out
}

/// Writes one element of every 4 KiB of `task`, which maps its pages in.
fn touch_pages<T: Copy + Default>(task: &mut [T]) {
    for page in task.chunks_mut((4096 / size_of::<T>().max(1)).max(1)) {
        // A volatile write of the value already there: the compiler may not drop it, and it maps the page in.
        // SAFETY: `page` is a non-empty, aligned, initialised slice of this array, borrowed mutably here.
        unsafe { std::ptr::write_volatile(page.as_mut_ptr(), T::default()) };
    }
}

/// Asks the kernel to back `buffer`'s untouched pages with 2 MiB pages where it can (Linux's transparent huge pages
/// in `madvise` mode). Elsewhere, and for small buffers, nothing.
fn prefer_huge_pages<T>(buffer: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        let start = buffer.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(buffer);
        let (first, last) = (start.next_multiple_of(HUGE_PAGE_BYTES), end / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES);
        if last > first {
            // SAFETY: [first, last) lies inside `buffer`'s allocation, which this function borrows mutably; the
            // advice changes how its pages are backed, never their contents. A failure (no transparent huge pages)
            // leaves the pages as they were, which is only slower.
            unsafe { libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buffer;
}

/// The elements `units` of `array`: a group member's part of an input, read where it lies; units past the array's
/// end are an error that says so.
pub fn units_of<T>(array: &[T], units: Range<usize>) -> Result<&[T]> {
    let len = array.len();
    array.get(units.clone()).ok_or_else(|| Error::invalid(format!("units {units:?} of an array of {len} elements")))
}

/// `previous` where it holds `len` values (its contents do not matter: the members overwrite every one), else a fresh
/// [`zeroed`] array: a group's output kept from one run to the next.
pub fn reused_or_zeroed<T: Copy + Default + Send + Sync>(previous: Option<Vec<T>>, len: usize) -> Vec<T> {
    match previous {
        Some(kept) if kept.len() == len => kept,
        _ => zeroed(len),
    }
}

/// `from` copied into `to` (of the same length) on every core: a member's part written into its place in a group's
/// whole output.
pub fn copy_into<T: Copy + Send + Sync>(to: &mut [T], from: &[T]) {
    to.par_chunks_mut(COPY_CHUNK).zip(from.par_chunks(COPY_CHUNK)).for_each(|(t, f)| t.copy_from_slice(f));
}

/// `whole` split into one slice per range of units, each `per_unit` values a unit: the parts' places in a group's
/// whole output. The ranges are consecutive from 0 (as [`ranges`] makes them); values past the last range stay out of
/// every slice.
pub fn split_units<'a, T>(whole: &'a mut [T], ranges: &[Range<usize>], per_unit: usize) -> Vec<&'a mut [T]> {
    let mut rest = whole;
    let mut slices = Vec::with_capacity(ranges.len());
    for range in ranges {
        let len = (range.len() * per_unit).min(rest.len());
        let (here, after) = std::mem::take(&mut rest).split_at_mut(len);
        slices.push(here);
        rest = after;
    }
    slices
}

/// A member's output as bytes, for members in processes of their own that hand their parts to one another through
/// a rendezvous (a directory, later a socket): little-endian, with the lengths the reader needs to refuse a part that
/// was cut short.
pub trait PartBytes: Sized {
    /// The bytes of the part.
    fn to_part_bytes(&self) -> Vec<u8>;
    /// The part read back; bytes of the wrong length or form are an error that says so.
    fn from_part_bytes(bytes: &[u8]) -> Result<Self>;
}

/// `bytes` read as little-endian 4-byte values; a length that is not a multiple of 4 is an error.
fn four_byte_values<T>(bytes: &[u8], what: &str, from: fn([u8; 4]) -> T) -> Result<Vec<T>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::invalid(format!("a part of {what} holds {} bytes, not a multiple of 4", bytes.len())));
    }
    Ok(bytes.chunks_exact(4).map(|c| from([c[0], c[1], c[2], c[3]])).collect())
}

impl PartBytes for Vec<f32> {
    fn to_part_bytes(&self) -> Vec<u8> {
        self.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
    fn from_part_bytes(bytes: &[u8]) -> Result<Self> {
        four_byte_values(bytes, "f32 values", f32::from_le_bytes)
    }
}

impl PartBytes for Vec<u32> {
    fn to_part_bytes(&self) -> Vec<u8> {
        self.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
    fn from_part_bytes(bytes: &[u8]) -> Result<Self> {
        four_byte_values(bytes, "counts", u32::from_le_bytes)
    }
}

impl PartBytes for f64 {
    fn to_part_bytes(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_part_bytes(bytes: &[u8]) -> Result<Self> {
        let array: [u8; 8] =
            bytes.try_into().map_err(|_| Error::invalid(format!("a partial sum is 8 bytes, not {}", bytes.len())))?;
        Ok(f64::from_le_bytes(array))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_every_unit_once_in_proportion() {
        for units in [0usize, 1, 7, 1000, 1 << 20] {
            for shares in [vec![1.0], vec![1.0, 1.0], vec![0.7, 0.3], vec![5.0, 0.0, 1.0, 2.0]] {
                let r = ranges(units, &shares).unwrap();
                assert_eq!(r.len(), shares.len());
                assert_eq!(r.first().unwrap().start, 0);
                assert_eq!(r.last().unwrap().end, units);
                assert!(r.windows(2).all(|w| w[0].end == w[1].start), "{r:?}");
                let total: f64 = shares.iter().sum();
                for (range, share) in r.iter().zip(&shares) {
                    let wanted = share / total * units as f64;
                    assert!((range.len() as f64 - wanted).abs() <= 1.0, "{units} {shares:?}: {r:?}");
                }
            }
        }
    }

    #[test]
    fn bad_shares_are_refused_with_the_reason() {
        assert!(ranges(8, &[]).unwrap_err().to_string().contains("at least one"));
        assert!(ranges(8, &[1.0, f64::NAN]).unwrap_err().to_string().contains("finite"));
        assert!(ranges(8, &[1.0, -1.0]).unwrap_err().to_string().contains("at least 0"));
        assert!(ranges(8, &[0.0]).unwrap_err().to_string().contains("every share is 0"));
    }

    #[test]
    fn concatenation_keeps_the_order() {
        assert_eq!(concatenate(vec![(0..2, vec![1, 2]), (2..2, vec![]), (2..3, vec![3])]), vec![1, 2, 3]);
    }

    /// The copies on every core give what a one-thread copy gives, across chunk boundaries and with empty pieces.
    #[test]
    fn parallel_cuts_and_joins_copy_every_element_in_order() {
        let whole: Vec<u32> = (0..(3 * COPY_CHUNK as u32 + 17)).collect();
        for range in [0..0, 5..6, 0..whole.len(), COPY_CHUNK - 3..2 * COPY_CHUNK + 5] {
            assert_eq!(copy_of(&whole[range.clone()]), whole[range].to_vec());
        }
        let cuts = [0, 0, 7, COPY_CHUNK + 1, COPY_CHUNK + 1, whole.len()];
        let parts: Vec<(Range<usize>, Vec<u32>)> =
            cuts.windows(2).map(|w| (w[0]..w[1], whole[w[0]..w[1]].to_vec())).collect();
        assert_eq!(concatenate(parts), whole);
        let pieces: Vec<&[u32]> = vec![&whole[..3], &[], &whole[3..]];
        assert_eq!(concatenate_slices(&pieces), whole);
    }

    /// Small arrays and large ones (touched a huge page a task, from an unaligned start) are zeros of their length,
    /// and a kept array of the right length is reused as it is.
    #[test]
    fn fresh_arrays_are_zeros_and_kept_ones_are_reused() {
        for len in [0, 1, 1000, SMALL_ARRAY_BYTES / 4 + 3, 3 * HUGE_PAGE_BYTES / 4 + 5] {
            let array = zeroed::<f32>(len);
            assert_eq!(array.len(), len);
            assert!(array.iter().all(|v| *v == 0.0), "{len}");
        }
        let kept = vec![7u16; 10];
        let address = kept.as_ptr();
        let reused = reused_or_zeroed(Some(kept), 10);
        assert_eq!((reused.as_ptr(), reused[3]), (address, 7));
        assert_eq!(reused_or_zeroed(Some(reused), 11), vec![0u16; 11]);
    }

    #[test]
    fn units_split_a_whole_output_into_consecutive_places() {
        let mut whole: Vec<u32> = (0..12).collect();
        let slices = split_units(&mut whole, &[0..1, 1..1, 1..4], 3);
        let seen: Vec<Vec<u32>> = slices.into_iter().map(|s| s.to_vec()).collect();
        assert_eq!(seen, vec![vec![0, 1, 2], vec![], (3..12).collect::<Vec<_>>()]);
        assert_eq!(units_of(&[1, 2, 3], 1..3).unwrap(), [2, 3]);
        assert!(units_of(&[1, 2, 3], 2..4).unwrap_err().to_string().contains("array of 3 elements"));
        let mut to = vec![0u32; 2 * COPY_CHUNK + 3];
        let from: Vec<u32> = (0..to.len() as u32).collect();
        copy_into(&mut to, &from);
        assert_eq!(to, from);
    }

    #[test]
    fn parts_round_trip_through_bytes_and_a_short_one_is_refused() {
        let floats = vec![1.5f32, -0.0, f32::INFINITY];
        assert_eq!(Vec::<f32>::from_part_bytes(&floats.to_part_bytes()).unwrap(), floats);
        assert_eq!(Vec::<u32>::from_part_bytes(&vec![7u32, 0].to_part_bytes()).unwrap(), vec![7, 0]);
        assert_eq!(f64::from_part_bytes(&2.5f64.to_part_bytes()).unwrap(), 2.5);
        assert!(Vec::<f32>::from_part_bytes(&[0, 0, 0]).is_err());
        assert!(f64::from_part_bytes(&[0; 4]).is_err());
    }

    #[test]
    fn ranges_by_cost_balance_the_cost_and_cover_every_unit_once() {
        let costs: Vec<f64> = (0..1000).map(|i| 1.0 + ((i as f64 - 500.0) / 100.0).powi(2)).collect();
        for shares in [vec![1.0], vec![1.0, 1.0], vec![0.7, 0.3], vec![5.0, 0.0, 1.0, 2.0]] {
            let r = ranges_by_cost(&costs, &shares).unwrap();
            assert_eq!((r.first().unwrap().start, r.last().unwrap().end), (0, costs.len()));
            assert!(r.windows(2).all(|w| w[0].end == w[1].start), "{r:?}");
            let (total, total_share): (f64, f64) = (costs.iter().sum(), shares.iter().sum());
            let largest = costs.iter().copied().fold(0.0, f64::max);
            for (range, share) in r.iter().zip(&shares) {
                let cost: f64 = costs[range.clone()].iter().sum();
                assert!((cost - share / total_share * total).abs() <= 2.0 * largest, "{shares:?}: {r:?}");
            }
        }
        assert_eq!(ranges_by_cost(&[0.0; 4], &[1.0, 1.0]).unwrap(), vec![0..2, 2..4]);
        assert!(ranges_by_cost(&[1.0, f64::NAN], &[1.0]).unwrap_err().to_string().contains("cost"));
        assert!(ranges_by_cost(&[1.0], &[0.0]).is_err());
    }
}
