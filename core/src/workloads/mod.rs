//! The workloads of the specification, each a [`crate::Workload`].
//!
//! Each file holds one workload: its parameters and input types, generator, scalar reference, check and cost. The
//! size ladders shared by several workloads live here.

// One module per workload, named after it, each re-exported here: `mod square; pub use square::*;` and so on.
crate::for_each_workload!(crate::workload_modules; pub use);

/// 2^25 + 5 `f32` values: 128 MiB and a little, with an odd tail. Past the storage-binding limit of lavapipe (and of
/// many integrated GPUs), where a backend must split its buffers into chunks (the sizes of
/// [`crate::Workload::large_params`]).
pub const BEYOND_128_MIB: usize = (1 << 25) + 5;

use std::fmt;

use crate::workload::{Part, Sharding, Workload};

/// The length of a 1D input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Len(pub usize);

/// The least count of the form 3 x 2^k that is at least `at_least` (3 at the least): a size that no ladder of
/// powers of two holds, for [`crate::Workload::streaming_probe`].
pub fn off_ladder_count(at_least: u64) -> usize {
    let mut count: u64 = 3;
    while count < at_least {
        count = count.saturating_mul(2);
    }
    usize::try_from(count).unwrap_or(usize::MAX)
}

/// `make(count)` for the least [`off_ladder_count`] whose cost is at least `bytes`, the cost growing by `make(1)`'s
/// with each count (an element, a row): the probe of [`crate::Workload::streaming_probe`].
pub fn off_ladder_params<W: crate::Workload>(bytes: u64, make: impl Fn(usize) -> W::Params) -> W::Params {
    let per_count = W::cost(&make(1)).bytes.max(1);
    make(off_ladder_count(bytes.div_ceil(per_count)))
}

/// The split of a workload over one array of `n` elements: contiguous elements, each cut a copy of its slice, the
/// parts' outputs joined by `join` (square, sum and scan differ only there).
pub(crate) fn element_sharding<W>(join: fn(&Vec<f32>, Vec<Part<W>>) -> W::Output) -> Sharding<W>
where
    W: Workload<Params = Len, Input = Vec<f32>>,
{
    Sharding {
        unit: "elements",
        units: |p| p.0,
        part: |_, r| Len(r.len()),
        cut: |x, r| crate::shard::copy_of(&x[r]),
        join,
        unit_costs: None,
        in_place: None,
    }
}

impl fmt::Display for Len {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The shape of a row-major 2D array: `rows x cols` (height x width for images).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shape2 {
    /// Rows (image height).
    pub rows: usize,
    /// Columns (image width).
    pub cols: usize,
}

impl Shape2 {
    /// A `rows x cols` shape.
    pub const fn new(rows: usize, cols: usize) -> Self {
        Shape2 { rows, cols }
    }

    /// A square `side x side` shape.
    pub const fn square(side: usize) -> Self {
        Shape2 { rows: side, cols: side }
    }
}

impl fmt::Display for Shape2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// The 1D sweep ladder: 2^10, 2^12, …, 2^28.
pub fn ladder_1d() -> Vec<usize> {
    (10..=28).step_by(2).map(|e| 1usize << e).collect()
}

/// The 1D quick ladder.
pub fn quick_ladder_1d() -> Vec<usize> {
    vec![1 << 12, 1 << 16, 1 << 20, 1 << 22]
}

/// The 1D conformance sizes: empty, tiny, around the power-of-two boundaries, past 2^16, and one above 2^22 (odd, so
/// that every vector tail is exercised).
pub fn conformance_1d() -> Vec<usize> {
    vec![0, 1, 2, 31, 1000, 1023, 1024, 1025, 65537, (1 << 22) + 3]
}

/// The 2D conformance shapes: empty both ways, 1x1, a single row, a single column, odd shapes, and a power of two.
pub fn conformance_2d() -> Vec<Shape2> {
    [(0, 5), (5, 0), (1, 1), (1, 1000), (1000, 1), (17, 33), (64, 64), (100, 257)]
        .into_iter()
        .map(|(r, c)| Shape2::new(r, c))
        .collect()
}

/// Square shapes `side x side` for side in `from..=to` by powers of two.
pub fn square_ladder(from: usize, to: usize) -> Vec<Shape2> {
    std::iter::successors(Some(from), |s| Some(s * 2)).take_while(|&s| s <= to).map(Shape2::square).collect()
}

#[cfg(test)]
mod tests {
    //! Every check must reject a wrong answer: one element off by 1.0, and the output shifted by one index.

    use super::*;
    use crate::{Precision, Workload};

    /// Every workload's malformed inputs are refused by its own validation, with the word its list promises.
    #[test]
    fn every_invalid_input_is_refused_with_its_reason() {
        macro_rules! each {
            ([] $($name:ident: $workload:ty),* $(,)?) => {$(
                for (what, input, needle) in <$workload>::invalid_inputs() {
                    let err = <$workload>::validate(&input).expect_err(what).to_string();
                    assert!(err.contains(needle), "{} {what}: {err}", <$workload>::NAME);
                }
            )*};
        }
        crate::for_each_workload!(each);
    }

    /// Every workload splits, and the references of its cuts, joined, pass its check against its reference: with
    /// one part, equal parts, uneven parts and a part given nothing; a join that loses its last part fails; and
    /// where the workload writes in place, the cuts filled into their places make the joined output.
    #[test]
    fn every_workload_splits_and_its_cuts_join_into_its_reference() {
        fn splits<W: Workload>() {
            let sharding = W::sharding().unwrap_or_else(|| panic!("{} splits over a device group", W::NAME));
            for params in W::conformance_params() {
                let input = W::generate(&params, 7).unwrap();
                let expected = W::reference(&input).unwrap();
                for shares in [&[1.0][..], &[1.0, 1.0], &[0.6, 0.3, 0.1], &[1.0, 0.0, 2.0]] {
                    let parts = sharding.split(&params, shares).unwrap();
                    let outputs: Vec<_> = parts
                        .iter()
                        .map(|r| {
                            let cut = (sharding.cut)(&input, r.clone());
                            // The part's parameters cost what the cut's do (a histogram's cut cannot tell how its
                            // values were drawn, so its parameters may differ in that).
                            let part = (sharding.part)(&params, r.clone());
                            assert_eq!(W::cost(&W::params(&cut)), W::cost(&part), "{} {params}", W::NAME);
                            (r.clone(), W::reference(&cut).unwrap())
                        })
                        .collect();
                    let joined = (sharding.join)(&input, outputs.clone());
                    let checked = W::check(&input, &expected, &joined, Precision::Fp32);
                    assert!(checked.is_ok(), "{} {params} {shares:?}: {checked:?}", W::NAME);
                    // Written in place, each cut's output filled into its place makes the joined output exactly.
                    if let Some((in_place, mut whole)) =
                        sharding.in_place.as_ref().and_then(|p| Some((p, (p.output)(&input, None)?)))
                    {
                        let places = (in_place.split)(&input, &mut whole, &parts);
                        assert_eq!(places.len(), parts.len(), "{} {params}: a place per part", W::NAME);
                        for ((range, output), mut place) in outputs.iter().zip(places) {
                            (in_place.fill)(&input, range.clone(), output, &mut place).unwrap();
                        }
                        assert_eq!(format!("{whole:?}"), format!("{joined:?}"), "{} {params} {shares:?}", W::NAME);
                    }
                    let nonempty = outputs.iter().filter(|(r, _)| !r.is_empty()).count();
                    if nonempty >= 2 {
                        let lost: Vec<_> =
                            outputs.into_iter().filter(|(r, _)| !r.is_empty()).take(nonempty - 1).collect();
                        let lost = (sharding.join)(&input, lost);
                        assert!(
                            format!("{lost:?}") == format!("{expected:?}")
                                || W::check(&input, &expected, &lost, Precision::Fp32).is_err(),
                            "{} {params} {shares:?}: a join missing its last part passed",
                            W::NAME
                        );
                    }
                }
            }
        }
        macro_rules! each {
            ([] $($name:ident: $workload:ty),* $(,)?) => {$( splits::<$workload>(); )*};
        }
        crate::for_each_workload!(each);
    }

    /// A Mandelbrot band draws its rows exactly as the whole image does, and the bands through the set are split
    /// by cost: two equal shares of the default image give the middle rows to neither alone.
    #[test]
    fn mandelbrot_bands_are_exact_and_split_by_cost() {
        let whole = MandelbrotParams::new(96, 64);
        let all = Mandelbrot::reference(&whole).unwrap();
        let band = whole.rows(20..37);
        assert_eq!(Mandelbrot::reference(&band).unwrap(), all[20 * 96..37 * 96]);
        assert_eq!(band.rows(2..5), whole.rows(22..25), "a band of a band is a band of the image");
        assert!(band.to_string().contains("rows 20..37 of 64"), "{band}");
        let outside = crate::workloads::Band { first_row: 60, image_height: 64 };
        assert!(Mandelbrot::validate(&MandelbrotParams { band: Some(outside), ..whole.rows(0..5) }).is_err());
        // Above the set's top the rows are cheap: a CPU given a third of the work gets more than a third of the rows.
        let tall = MandelbrotParams::new(64, 300);
        let parts = Mandelbrot::sharding().unwrap().split(&tall, &[1.0, 2.0]).unwrap();
        let costs = tall.row_costs();
        let first: f64 = costs[parts[0].clone()].iter().sum();
        let total: f64 = costs.iter().sum();
        assert!(parts[0].len() > 100 && (first / total - 1.0 / 3.0).abs() < 0.05, "{parts:?} {}", first / total);
    }

    /// A streaming probe moves at least the bytes asked and is on none of the workload's ladders.
    fn probe_is_off_the_ladder<W: Workload>() {
        for bytes in [64u64 << 20, 600 << 20] {
            let probe = W::streaming_probe(bytes).unwrap_or_else(|| panic!("{} has a probe", W::NAME));
            assert!(W::cost(&probe).bytes >= bytes, "{}: {probe} moves {}", W::NAME, W::cost(&probe).bytes);
            assert!(W::cost(&probe).bytes < 3 * bytes, "{}: {probe} is far larger than asked", W::NAME);
            assert!(!W::ladder().contains(&probe) && !W::quick_ladder().contains(&probe), "{}: {probe}", W::NAME);
        }
    }

    #[test]
    fn memory_bound_workloads_have_streaming_probes_off_their_ladders() {
        probe_is_off_the_ladder::<Square>();
        probe_is_off_the_ladder::<Saxpy>();
        probe_is_off_the_ladder::<Sum>();
        probe_is_off_the_ladder::<Histogram>();
        probe_is_off_the_ladder::<Softmax>();
        probe_is_off_the_ladder::<Stencil>();
        assert!(Matmul::streaming_probe(1 << 30).is_none() && Mandelbrot::streaming_probe(1 << 30).is_none());
        assert_eq!(
            (off_ladder_count(0), off_ladder_count(3), off_ladder_count(4), off_ladder_count(13)),
            (3, 3, 6, 24)
        );
    }

    /// The reference passes its own check; a copy with one element changed by `+1` fails; a copy shifted by one
    /// index fails.
    fn rejects_wrong_answers<W, T>(params: W::Params, bump: impl Fn(&mut T))
    where
        W: Workload<Output = Vec<T>>,
        T: Clone,
    {
        let input = W::generate(&params, 11).unwrap();
        let good = W::reference(&input).unwrap();
        assert!(W::check(&input, &good, &good, Precision::Fp32).is_ok(), "{} rejects its reference", W::NAME);

        let mut off_by_one = good.clone();
        let middle = off_by_one.len() / 2;
        bump(&mut off_by_one[middle]);
        let err = W::check(&input, &good, &off_by_one, Precision::Fp32);
        assert!(err.is_err(), "{} {params} accepts an element off by 1", W::NAME);

        let mut shifted = good.clone();
        shifted.rotate_left(1);
        assert!(W::check(&input, &good, &shifted, Precision::Fp32).is_err(), "{} accepts a shift", W::NAME);

        assert!(
            W::check(&input, &good, &good[1..].to_vec(), Precision::Fp32).is_err(),
            "{} accepts a short output",
            W::NAME
        );
    }

    fn add_one(v: &mut f32) {
        *v += 1.0;
    }

    #[test]
    fn checks_reject_wrong_answers() {
        rejects_wrong_answers::<Square, f32>(Len(1000), add_one);
        rejects_wrong_answers::<Saxpy, f32>(SaxpyParams::new(1000), add_one);
        rejects_wrong_answers::<Softmax, f32>(Shape2::new(17, 33), add_one);
        rejects_wrong_answers::<Matmul, f32>(MatmulParams::new(17, 33, 65), add_one);
        rejects_wrong_answers::<Stencil, f32>(Shape2::new(17, 33), add_one);
        // Every mandelbrot pixel is looked at: one wrong count fails unless its pixel depends on the rounding.
        rejects_wrong_answers::<Mandelbrot, u32>(MandelbrotParams::new(9, 9), |c| {
            *c = (*c + 1) % 257;
        });
        rejects_wrong_answers::<Histogram, u32>(HistogramParams::new(1000), |c| *c += 1);
    }

    #[test]
    fn a_shifted_large_mandelbrot_is_rejected() {
        let params = MandelbrotParams::new(256, 256);
        let good = Mandelbrot::reference(&params).unwrap();
        let mut shifted = good.clone();
        shifted.rotate_left(1);
        assert!(Mandelbrot::check(&params, &good, &shifted, Precision::Fp32).is_err());
    }

    #[test]
    fn sum_check_rejects_an_answer_off_by_one() {
        let input = Sum::generate(&Len(1000), 3).unwrap();
        let good = Sum::reference(&input).unwrap();
        assert!(Sum::check(&input, &good, &good, Precision::Fp32).is_ok());
        assert!(Sum::check(&input, &good, &(good + 1.0), Precision::Fp32).is_err());
        let without_last: f64 = input[..999].iter().map(|&x| x as f64).sum();
        assert!(Sum::check(&input, &good, &without_last, Precision::Fp32).is_err());
        assert!(Sum::check(&vec![], &0.0, &0.0, Precision::Fp32).is_ok());
    }

    #[test]
    fn a_sequential_f32_sum_fails_beyond_2_to_the_20() {
        let input = Sum::generate(&Len(1 << 24), 1).unwrap();
        let expected = Sum::reference(&input).unwrap();
        let mut naive = 0.0f32;
        for &x in &input {
            naive += x;
        }
        assert!(Sum::check(&input, &expected, &(naive as f64), Precision::Fp32).is_err());
    }

    /// Each check is fed a result computed with one term or element missing, the mistake a kernel makes when a loop
    /// stops one trip early or a thread skips its element, at sizes where the specification's arithmetic says the
    /// tolerance must tell it from rounding.
    #[test]
    fn checks_reject_a_result_with_one_term_missing() {
        let full = Precision::Fp32;

        // square and saxpy: one element never written (left at zero, or at the input y for saxpy's in-place update).
        for n in [1000, 65537] {
            let x = Square::generate(&Len(n), 5).unwrap();
            let good = Square::reference(&x).unwrap();
            let mut missing = good.clone();
            missing[n / 2] = 0.0;
            assert!(Square::check(&x, &good, &missing, full).is_err(), "square {n}: an unwritten element passes");

            let input = Saxpy::generate(&SaxpyParams::new(n), 5).unwrap();
            let good = Saxpy::reference(&input).unwrap();
            let mut missing = good.clone();
            missing[n / 2] = input.y[n / 2];
            assert!(Saxpy::check(&input, &good, &missing, full).is_err(), "saxpy {n}: an element not updated passes");
        }

        // sum: the largest element left out, at every conformance size where it is more than the tolerance.
        for n in [2, 31, 1000, 1023, 1024, 1025, 65537] {
            let x = Sum::generate(&Len(n), 5).unwrap();
            let good = Sum::reference(&x).unwrap();
            let largest = x.iter().copied().fold(0.0f32, f32::max) as f64;
            assert!(Sum::check(&x, &good, &(good - largest), full).is_err(), "sum {n}: a dropped element passes");
        }

        // softmax: the denominator without the row's largest term (a reduction that stops one trip early).
        for shape in [Shape2::new(17, 33), Shape2::new(100, 257), Shape2::new(3, 65537)] {
            let input = Softmax::generate(&shape, 5).unwrap();
            let good = Softmax::reference(&input).unwrap();
            let mut missing = good.clone();
            for y in missing.chunks_exact_mut(shape.cols) {
                let largest = y.iter().copied().fold(0.0f32, f32::max) as f64;
                y.iter_mut().for_each(|v| *v = (*v as f64 / (1.0 - largest)) as f32);
            }
            assert!(Softmax::check(&input, &good, &missing, full).is_err(), "softmax {shape}: a dropped term passes");
        }

        // matmul: every entry without the product of one k (a K loop one trip short), K up to 65537.
        for (m, k, n) in [(17, 33, 65), (64, 64, 64), (2, 65537, 3)] {
            let input = Matmul::generate(&MatmulParams::new(m, k, n), 5).unwrap();
            let good = Matmul::reference(&input).unwrap();
            let dropped = k - 1;
            let missing: Vec<f32> = (0..m * n)
                .map(|e| {
                    let (i, j) = (e / n, e % n);
                    good[e] - input.a[i * k + dropped] * input.b[dropped * n + j]
                })
                .collect();
            assert!(
                Matmul::check(&input, &good, &missing, full).is_err(),
                "matmul {m}x{k}x{n}: a dropped product passes"
            );
        }

        // stencil: the centre left out of every 3x3 sum.
        for shape in [Shape2::new(17, 33), Shape2::new(100, 257)] {
            let input = Stencil::generate(&shape, 5).unwrap();
            let good = Stencil::reference(&input).unwrap();
            let missing: Vec<f32> = good.iter().zip(&input.data).map(|(y, x)| y - x / 9.0).collect();
            assert!(Stencil::check(&input, &good, &missing, full).is_err(), "stencil {shape}: a dropped term passes");
        }

        // histogram: one element not counted.
        let input = Histogram::generate(&HistogramParams::new(65537), 5).unwrap();
        let good = Histogram::reference(&input).unwrap();
        let mut missing = good.clone();
        missing[bin_of(input.x[7], input.bins).unwrap()] -= 1;
        assert!(Histogram::check(&input, &good, &missing, full).is_err(), "histogram: an uncounted element passes");

        // mandelbrot: one pixel not computed.
        let params = MandelbrotParams::new(9, 9);
        let good = Mandelbrot::reference(&params).unwrap();
        let mut missing = good.clone();
        let pixel = good.iter().position(|&c| c > 0).unwrap();
        missing[pixel] = 0;
        assert!(Mandelbrot::check(&params, &good, &missing, full).is_err(), "mandelbrot: a missing pixel passes");
    }

    #[test]
    fn histogram_check_rejects_a_lost_count_and_a_moved_count() {
        let input = Histogram::generate(&HistogramParams::new(1000), 3).unwrap();
        let good = Histogram::reference(&input).unwrap();
        let mut moved = good.clone();
        moved[10] -= 1;
        moved[11] += 1;
        let err = Histogram::check(&input, &good, &moved, Precision::Fp32).unwrap_err();
        assert!(err.message.contains("bin 10"), "{err}");
    }

    #[test]
    fn bad_input_is_invalid_input_naming_the_problem() {
        let cases: Vec<(crate::Error, &str)> = vec![
            (Saxpy::validate(&SaxpyInput { a: 1.0, x: vec![1.0; 3], y: vec![1.0; 4] }).unwrap_err(), "same length"),
            (Softmax::validate(&SoftmaxInput { rows: 2, cols: 3, data: vec![0.0; 5] }).unwrap_err(), "2 x 3"),
            (Histogram::validate(&HistogramInput { bins: 0, x: vec![0.5] }).unwrap_err(), "bins"),
            (
                Matmul::validate(&MatmulInput { m: 2, k: 3, n: 2, a: vec![0.0; 6], b: vec![0.0; 4] }).unwrap_err(),
                "inner dimensions",
            ),
            (Stencil::validate(&StencilInput { height: 0, width: 5, data: vec![0.0; 3] }).unwrap_err(), "0 x 5"),
            (Softmax::reference(&SoftmaxInput { rows: usize::MAX, cols: 2, data: vec![] }).unwrap_err(), "overflows"),
        ];
        for (err, needle) in cases {
            assert!(matches!(err, crate::Error::InvalidInput(_)), "{err:?}");
            assert!(err.to_string().contains(needle), "`{err}` does not mention `{needle}`");
        }
    }

    #[test]
    fn special_references_follow_the_specification() {
        let softmax = &Softmax::special_inputs()[0].1;
        let y = Softmax::reference(softmax).unwrap();
        let cols = softmax.cols;
        assert!(y[..2 * cols].iter().all(|v| v.is_nan()), "NaN and +inf rows are NaN");
        assert_eq!(y[2 * cols + 5], 0.0, "exp(-inf) is 0");
        assert!(y[3 * cols..4 * cols].iter().all(|v| v.is_nan()), "an all -inf row is NaN");
        assert!(y[4 * cols..].iter().all(|v| v.is_finite()));

        let histogram = HistogramInput::new(4, vec![-1.0, f32::NEG_INFINITY, 1.0, f32::INFINITY, f32::NAN, 0.5]);
        assert_eq!(Histogram::reference(&histogram.unwrap()).unwrap(), vec![2, 0, 1, 2]);

        let stencil = &Stencil::special_inputs()[0].1;
        let y = Stencil::reference(stencil).unwrap();
        assert_eq!(y[0], f32::INFINITY);
        assert!(y[4 * 11 + 4].is_nan() && y[6 * 11 + 6].is_nan() && y[3 * 11 + 3].is_finite());

        assert!(
            Mandelbrot::reference(&MandelbrotParams { max_iter: 0, ..MandelbrotParams::new(5, 5) })
                .unwrap()
                .iter()
                .all(|&c| c == 0)
        );
    }
}
