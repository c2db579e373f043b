//! The [`Workload`] trait: one compute task, defined once and independent of where it runs.
//!
//! A workload owns everything that must be identical on every backend: the parameters and their ladders of sizes,
//! the seeded input generator (so that every backend sees the same bytes), the scalar reference, the check with its
//! tolerance, and the cost (bytes a perfect implementation moves, flops it computes) from which throughput follows.

use std::fmt;
use std::ops::Range;

use crate::error::Result;
pub use crate::precision::Precision;

/// One member's output with the units it covered, as a [`Sharding::join`] receives it.
pub type Part<W> = (Range<usize>, <W as Workload>::Output);

/// Each unit's relative cost, for [`Sharding::unit_costs`].
pub type UnitCosts<W> = fn(&<W as Workload>::Params) -> Vec<f64>;

/// How `W` splits over a device group's members and how their outputs join ([`crate::shard`] says how a group
/// uses it).
pub struct Sharding<W: Workload> {
    /// What the work splits along: elements, rows.
    pub unit: &'static str,
    /// How many units an instance has.
    pub units: fn(&W::Params) -> usize,
    /// The parameters of the cut of the units in `range` (what a member runs, for predictions made before there is
    /// any data).
    pub part: fn(&W::Params, Range<usize>) -> W::Params,
    /// The input of the units in `range`, as an instance of its own (with whatever neighbours the units need, such
    /// as a stencil's halo rows).
    pub cut: fn(&W::Input, Range<usize>) -> W::Input,
    /// The whole output from the outputs of consecutive cuts that cover the input, in order, each with its range.
    pub join: fn(&W::Input, Vec<Part<W>>) -> W::Output,
    /// Each unit's relative cost where units differ in cost (a Mandelbrot row inside the set iterates far longer
    /// than one outside it), so that shares split the work rather than the units; `None` where every unit costs
    /// the same.
    pub unit_costs: Option<UnitCosts<W>>,
    /// Where the whole output is made of the parts' outputs laid one after another ([`InPlace`]): the members write
    /// their parts straight into one output, and the group joins nothing. `None` where a join computes (a
    /// reduction's combine, a histogram's sum).
    pub in_place: Option<InPlace<W>>,
}

/// A part's own slices of a group's whole output, borrowed: one per output array, in order. What
/// [`crate::Implements::run_part`] writes into.
#[derive(Debug)]
pub enum PartOutput<'a> {
    /// Slices of `f32` arrays.
    F32(Vec<&'a mut [f32]>),
    /// Slices of `u32` arrays (counts).
    U32(Vec<&'a mut [u32]>),
    /// Slices of arrays of 16-bit elements, as their bits.
    Bits(Vec<&'a mut [u16]>),
}

/// The element types a [`PartOutput`] holds, for [`PartOutput::fill`].
pub trait PartElement: Copy + Send + Sync + 'static {
    /// The slices of this type in `output`, or `None` where it holds another type.
    fn slices<'b, 'a>(output: &'b mut PartOutput<'a>) -> Option<&'b mut Vec<&'a mut [Self]>>;
}

impl PartElement for f32 {
    fn slices<'b, 'a>(output: &'b mut PartOutput<'a>) -> Option<&'b mut Vec<&'a mut [f32]>> {
        if let PartOutput::F32(slices) = output { Some(slices) } else { None }
    }
}

impl PartElement for u32 {
    fn slices<'b, 'a>(output: &'b mut PartOutput<'a>) -> Option<&'b mut Vec<&'a mut [u32]>> {
        if let PartOutput::U32(slices) = output { Some(slices) } else { None }
    }
}

impl PartElement for u16 {
    fn slices<'b, 'a>(output: &'b mut PartOutput<'a>) -> Option<&'b mut Vec<&'a mut [u16]>> {
        if let PartOutput::Bits(slices) = output { Some(slices) } else { None }
    }
}

impl<'a> PartOutput<'a> {
    /// A part's own output (`arrays`, as a run of the cut made them) copied into these slices on every core; arrays
    /// of another type, number or length than the slices are an error that says so, never a partial copy passed off
    /// as whole.
    pub fn fill<T: PartElement>(&mut self, arrays: &[&[T]]) -> Result<()> {
        let Some(slices) = T::slices(self) else {
            return Err(crate::Error::invalid(format!(
                "a member's part of {} values for an output of another type",
                std::any::type_name::<T>()
            )));
        };
        let lengths = |lens: Vec<usize>| lens.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        if slices.len() != arrays.len() || slices.iter().zip(arrays).any(|(s, a)| s.len() != a.len()) {
            return Err(crate::Error::invalid(format!(
                "a member's part has arrays of [{}] elements where its place in the output holds [{}]",
                lengths(arrays.iter().map(|a| a.len()).collect()),
                lengths(slices.iter().map(|s| s.len()).collect()),
            )));
        }
        for (slice, array) in slices.iter_mut().zip(arrays) {
            crate::shard::copy_into(slice, array);
        }
        Ok(())
    }

    /// The one `f32` slice of a place in a one-array output, which must hold `len` values: a place of another type
    /// or shape is an error that says so.
    pub fn single_f32(&mut self, len: usize) -> Result<&mut [f32]> {
        let slices = self.f32_slices()?;
        let shape: Vec<usize> = slices.iter().map(|s| s.len()).collect();
        match slices.as_mut_slice() {
            [out] if out.len() == len => Ok(&mut **out),
            _ => {
                Err(crate::Error::invalid(format!("a part of {len} values into a place of arrays of {shape:?} values")))
            }
        }
    }

    /// The bytes of each slice: what a caller page-locks ([`crate::Backend::page_lock`]).
    pub fn bytes(&self) -> Vec<&[u8]> {
        match self {
            PartOutput::F32(slices) => slices.iter().map(|s| bytemuck::cast_slice(s)).collect(),
            PartOutput::U32(slices) => slices.iter().map(|s| bytemuck::cast_slice(s)).collect(),
            PartOutput::Bits(slices) => slices.iter().map(|s| bytemuck::cast_slice(s)).collect(),
        }
    }

    /// The `f32` slices, for a backend that writes them directly; an output of another type is an error.
    pub fn f32_slices<'b>(&'b mut self) -> Result<&'b mut Vec<&'a mut [f32]>> {
        match self {
            PartOutput::F32(slices) => Ok(slices),
            _ => Err(crate::Error::invalid("an output of f32 values was expected")),
        }
    }
}

/// The whole output for an input, reusing an earlier one, for [`InPlace::output`].
pub type WholeOutput<W> =
    fn(&<W as Workload>::Input, Option<<W as Workload>::Output>) -> Option<<W as Workload>::Output>;

/// A whole output borrowed as one place per range of units, for [`InPlace::split`].
pub type SplitOutput<W> =
    for<'a> fn(&<W as Workload>::Input, &'a mut <W as Workload>::Output, &[Range<usize>]) -> Vec<PartOutput<'a>>;

/// The bytes of an input's host arrays, for [`InPlace::input_bytes`].
pub type InputBytes<W> = for<'a> fn(&'a <W as Workload>::Input) -> Vec<&'a [u8]>;

/// A part's output copied into its place, for [`InPlace::fill`].
pub type FillPlace<W> =
    fn(&<W as Workload>::Input, Range<usize>, &<W as Workload>::Output, &mut PartOutput<'_>) -> Result<()>;

/// How a group's members write their parts straight into one whole output ([`Sharding::in_place`]): the output
/// allocated once, borrowed by each member for its range of units, so that nothing joins the parts afterwards (on a
/// two-H200 host, joining two GPUs' halves of 2^28 floats cost 46.7 ms of a 277 ms run; measured:
/// docs/results/nvidia-h200-x2/groups/groups-runs-3.txt).
pub struct InPlace<W: Workload> {
    /// The whole output of `input`, at its full size and with unspecified values, for the members to write into:
    /// `previous` (an earlier run's output, kept as NumPy's `out=` keeps one) where its shape is this input's, else a
    /// fresh one; `None` where this input's output is not its parts' outputs laid end to end (an expression that
    /// reduces).
    pub output: WholeOutput<W>,
    /// The whole output (made by `output` for `input`) borrowed as one [`PartOutput`] per range of units, in order;
    /// the ranges are consecutive from unit 0 and cover every unit.
    pub split: SplitOutput<W>,
    /// The output of a run of the cut of `units` (as [`Sharding::cut`] makes it) copied into its place: what a
    /// backend that cannot write into the caller's memory does ([`crate::Implements::run_part`]'s default).
    pub fill: FillPlace<W>,
    /// The bytes of each of `input`'s host arrays (none for an input made of parameters alone, as Mandelbrot's): what
    /// a caller page-locks so that devices copy straight from them.
    pub input_bytes: InputBytes<W>,
}

/// The [`InPlace`] of a workload whose output is one array of `f32` or `u32` (`F32`, `U32`: the [`PartOutput`]
/// variant): `len` gives its length for an input, `per_unit` the values a unit of the split holds (1 for elements, a
/// matrix's width for rows), and `inputs` the input's host arrays as bytes; all are closures of the input that capture
/// nothing.
#[macro_export]
macro_rules! array_in_place {
    ($variant:ident, len: $len:expr, per_unit: $per_unit:expr, inputs: $inputs:expr $(,)?) => {
        $crate::workload::InPlace {
            output: |input, previous| Some($crate::shard::reused_or_zeroed(previous, $len(input))),
            split: |input, output, ranges| {
                $crate::shard::split_units(output.as_mut_slice(), ranges, $per_unit(input))
                    .into_iter()
                    .map(|slice| $crate::workload::PartOutput::$variant(vec![slice]))
                    .collect()
            },
            fill: |_, _, part, slices| slices.fill(&[part.as_slice()]),
            input_bytes: $inputs,
        }
    };
}

impl<W: Workload> Sharding<W> {
    /// The units of an instance with `params`, split in proportion to `shares` ([`crate::shard::ranges`]), by cost
    /// where units differ in it ([`crate::shard::ranges_by_cost`]).
    pub fn split(&self, params: &W::Params, shares: &[f64]) -> Result<Vec<Range<usize>>> {
        match self.unit_costs {
            Some(costs) => crate::shard::ranges_by_cost(&costs(params), shares),
            None => crate::shard::ranges((self.units)(params), shares),
        }
    }
}

/// One compute task (square, saxpy, sum, softmax, matmul, mandelbrot, histogram, stencil, scan).
pub trait Workload: Sized + Send + Sync + 'static {
    /// The stable name used in benchmark ids, on the command line and in reports.
    const NAME: &'static str;
    /// The GPU-programming lesson this workload teaches, in one line.
    const LESSON: &'static str;

    /// Shape and parameters: `n`, `rows x cols`, `M x K x N`, bins, region. Displayed in benchmark ids and tables.
    type Params: Clone + PartialEq + fmt::Debug + fmt::Display + Send + Sync;
    /// Host input data, carrying its own shape.
    type Input: Clone + fmt::Debug + Send + Sync;
    /// Host output data.
    type Output: Clone + fmt::Debug + Send + Sync;

    /// The parameters an input was made with (its shape).
    fn params(input: &Self::Input) -> Self::Params;

    /// Checks that the input is computable as given (shape matches data, parameters in range). Every backend calls
    /// it before uploading, so a bad input is the same clear [`crate::Error::InvalidInput`] everywhere.
    fn validate(input: &Self::Input) -> Result<()>;

    /// Makes the input for `params`, reproducibly from `seed`: the same bytes on every machine and backend.
    fn generate(params: &Self::Params, seed: u64) -> Result<Self::Input>;

    /// The scalar reference: sequential, accumulating in `f64` where it matters. Validates the input first.
    fn reference(input: &Self::Input) -> Result<Self::Output>;

    /// Compares a backend's output with the reference at the workload's tolerance for `precision`.
    fn check(
        input: &Self::Input,
        expected: &Self::Output,
        actual: &Self::Output,
        precision: Precision,
    ) -> std::result::Result<(), Mismatch>;

    /// The bytes the input and output at `params` occupy on the host, in checked arithmetic: `None` when the count
    /// overflows. Generators check it against the machine's memory before allocating ([`crate::memory`]).
    fn host_bytes(params: &Self::Params) -> Option<u64>;

    /// What a perfect implementation moves and computes for `params`.
    fn cost(params: &Self::Params) -> Cost;

    /// The bytes `backend`'s `variant` really moves for `params`, where that differs from [`Workload::cost`]'s
    /// (a row read twice, an output whose lines are read before they are overwritten: [`crate::traffic`]). The cost
    /// model grows a kernel's time past its calibrated sizes by these bytes. The cost's bytes by default.
    fn traffic(params: &Self::Params, backend: crate::BackendKind, variant: &str) -> u64 {
        let _ = (backend, variant);
        Self::cost(params).bytes
    }

    /// The work of checking a result at `params` against the reference, in the flops of a plain `f32` reference:
    /// sweeps check results up to a budget of it. The cost's flops by default; a workload whose reference costs more
    /// per element (an expression's, evaluated in `f64` with an error bound per value) says so, so that a sweep
    /// stops checking where the check would take longer than the measurement.
    fn check_work(params: &Self::Params) -> u64 {
        Self::cost(params).flops
    }

    /// How the work splits over the members of a device group and how their outputs join ([`Sharding`]);
    /// `None` for a workload no group runs yet.
    fn sharding() -> Option<Sharding<Self>> {
        None
    }

    /// The cost of a run that produced `output`, for workloads whose work depends on the data (mandelbrot counts
    /// the iterations actually run). Defaults to [`Workload::cost`].
    fn cost_of_run(params: &Self::Params, output: &Self::Output) -> Cost {
        let _ = output;
        Self::cost(params)
    }

    /// The sweep ladder: the sizes benchmarks and `gpuworthy sweep` use by default, smallest first.
    fn ladder() -> Vec<Self::Params>;

    /// A short ladder for quick runs.
    fn quick_ladder() -> Vec<Self::Params>;

    /// A size on none of the workload's ladders whose data is at least `bytes`, shaped like its largest sizes, where
    /// the workload is bound by memory: calibration runs it on every device at two such sizes above its ladder, one
    /// past the CPU's last-level cache, to learn how this workload streams from memory there
    /// ([`crate::workloads::off_ladder_count`] makes such sizes). Each
    /// workload streams at a rate of its own (on the GPU machines' 16-core hosts softmax and stencil ran slower past
    /// the cache than a copy), so a prediction past the cache from the copy's rate came out too fast (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). `None` (the default) for a workload bound by its
    /// arithmetic, or one with no such size.
    fn streaming_probe(bytes: u64) -> Option<Self::Params> {
        let _ = bytes;
        None
    }

    /// Sizes of the full ladder that calibration measures besides the short one: where a GPU's time from the host
    /// bends between two short-ladder sizes, so that the model's curves interpolate across the bend instead of
    /// through it. None by default.
    fn calibration_extra() -> Vec<Self::Params> {
        Vec::new()
    }

    /// A size past the quick ladder and on none of the workload's ladders, where a workload bound by its arithmetic
    /// is timed on each GPU once more when calibrated: a GPU that its largest calibrated size does not yet fill runs
    /// larger ones faster per flop than that size did, and a prediction grown from it with the flops comes out slow
    /// (WGSL's matmul on an H100 at 2048^3; measured: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so).
    /// Sizes between the ladder and the probe are interpolated along the flops. `None` (the default) for a
    /// workload bound by memory, whose [`Workload::streaming_probe`] plays this part.
    fn compute_probe() -> Option<Self::Params> {
        None
    }

    /// The sizes every variant must pass at, empty ones included.
    fn conformance_params() -> Vec<Self::Params>;

    /// Sizes whose buffers exceed 128 MiB ([`crate::workloads::BEYOND_128_MIB`]), the storage-binding limit of
    /// lavapipe and of many integrated GPUs: a backend must split these into chunks and still give the right answer.
    /// Empty (the default) where the workload refuses such sizes with the limit named rather than splitting them.
    fn large_params() -> Vec<Self::Params> {
        Vec::new()
    }

    /// Hand-made inputs holding the special values the specification defines (NaN, infinities, values out of
    /// range), each with a short label naming what it tests.
    fn special_inputs() -> Vec<(&'static str, Self::Input)>;

    /// Malformed inputs, each with a label and a word its error must name: every backend refuses each at upload with
    /// [`crate::Error::InvalidInput`], never a panic. Empty (the default) where every input is computable.
    fn invalid_inputs() -> Vec<(&'static str, Self::Input, &'static str)> {
        Vec::new()
    }

    /// For a workload whose instances are different computations (each expression is its own), the name of this
    /// instance in a calibration: two parameters with the same instance compute the same thing at different sizes.
    /// `None` (the default): every instance is the workload itself.
    fn instance(params: &Self::Params) -> Option<String> {
        let _ = params;
        None
    }

    /// For an instance a calibration never measured, what predicts it: the calibrated instance it resembles, at what
    /// cost, and the work it does beyond it ([`Resemblance`]). `None` (the default): only the workload's own
    /// calibration predicts it.
    fn resemblance(params: &Self::Params) -> Option<Resemblance> {
        let _ = params;
        None
    }
}

/// How an instance that was never calibrated is predicted: as the calibrated instance `like` at cost `cost` (the same
/// bytes moved), plus, per element, `extra_flops` arithmetic operations and the special-function calls `calls`, priced
/// at the rates calibration measured on each device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resemblance {
    /// The calibrated instance whose curves give the memory traffic's and the launch's time.
    pub like: String,
    /// That instance's cost at the same bytes as this one.
    pub cost: Cost,
    /// Elements computed (the calls and flops below are per element).
    pub elements: u64,
    /// Arithmetic operations per element beyond the resembled instance's.
    pub extra_flops: u64,
    /// Special-function calls per element, by function name.
    pub calls: Vec<(&'static str, u64)>,
}

/// What a perfect implementation of one run moves and computes: the denominators of throughput.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cost {
    /// Bytes read from and written to memory, counting each input and output once.
    pub bytes: u64,
    /// Floating-point operations (or equivalent integer operations for histogram).
    pub flops: u64,
    /// Output elements produced (pixels, bins, matrix entries): the unit of "elements per second".
    pub elements: u64,
}

impl Cost {
    /// Flops per byte moved: the roofline's x-axis.
    pub fn arithmetic_intensity(&self) -> f64 {
        if self.bytes == 0 { 0.0 } else { self.flops as f64 / self.bytes as f64 }
    }
}

/// Why a backend's output failed its check: where, what was expected, what came, and the tolerance.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// What went wrong, naming the index or row and the values.
    pub message: String,
}

impl Mismatch {
    /// A mismatch with this description.
    pub fn new(message: impl Into<String>) -> Self {
        Mismatch { message: message.into() }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Mismatch {}

/// A float tolerance of the form `|actual − expected| ≤ absolute + relative·|expected|`.
///
/// NaN matches NaN and an infinity matches the same infinity; anything else against a non-finite expectation fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// The absolute part.
    pub absolute: f64,
    /// The part relative to the expected value's magnitude.
    pub relative: f64,
}

impl Tolerance {
    /// Whether `actual` is within tolerance of `expected`.
    pub fn accepts(&self, expected: f64, actual: f64) -> bool {
        if expected.is_nan() || actual.is_nan() {
            return expected.is_nan() && actual.is_nan();
        }
        if expected.is_infinite() || actual.is_infinite() {
            return expected == actual;
        }
        (actual - expected).abs() <= self.absolute + self.relative * expected.abs()
    }

    /// Checks two equally long slices element by element, reporting the first element out of tolerance.
    /// `describe` turns a flat index into a position (e.g. `row 3, column 7`).
    pub fn check_slices(
        &self,
        expected: &[f32],
        actual: &[f32],
        describe: impl Fn(usize) -> String,
    ) -> std::result::Result<(), Mismatch> {
        check_lengths(expected.len(), actual.len())?;
        match expected.iter().zip(actual).position(|(&e, &a)| !self.accepts(e as f64, a as f64)) {
            None => Ok(()),
            Some(i) => Err(Mismatch::new(format!(
                "{}: expected {:e}, got {:e} (tolerance {:e} + {:e}·|expected|)",
                describe(i),
                expected[i],
                actual[i],
                self.absolute,
                self.relative
            ))),
        }
    }
}

/// Fails when an output's length differs from the reference's.
pub fn check_lengths(expected: usize, actual: usize) -> std::result::Result<(), Mismatch> {
    if expected == actual {
        Ok(())
    } else {
        Err(Mismatch::new(format!("output has {actual} elements, expected {expected}")))
    }
}

/// Describes a flat index of a row-major matrix with `cols` columns as `row r, column c`.
pub fn describe_2d(cols: usize) -> impl Fn(usize) -> String {
    move |i| format!("row {}, column {}", i / cols.max(1), i % cols.max(1))
}

/// Describes a flat index as `element i`.
pub fn describe_1d(i: usize) -> String {
    format!("element {i}")
}

/// `rows × cols` as a checked product, or an [`crate::Error::InvalidInput`] naming what overflowed.
pub fn checked_area(what: &str, rows: usize, cols: usize) -> Result<usize> {
    rows.checked_mul(cols)
        .ok_or_else(|| crate::Error::invalid(format!("{what} {rows} x {cols} overflows the address space")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part is copied into its place whole or not at all: another type, count or length is refused by name.
    #[test]
    fn a_part_fills_its_place_only_when_their_shapes_match() {
        let mut whole = vec![0.0f32; 6];
        let (first, second) = whole.split_at_mut(2);
        let mut place = PartOutput::F32(vec![second]);
        let short = place.fill(&[&[1.0f32, 2.0][..]]).unwrap_err().to_string();
        assert!(short.contains("[2]") && short.contains("[4]"), "{short}");
        assert!(place.fill(&[&[1u32, 2, 3, 4][..]]).unwrap_err().to_string().contains("another type"));
        assert!(place.fill::<f32>(&[]).is_err(), "no arrays for one place");
        place.fill(&[&[1.0f32, 2.0, 3.0, 4.0][..]]).unwrap();
        assert!(PartOutput::F32(vec![first]).single_f32(3).is_err());
        assert_eq!(whole, [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn tolerance_handles_special_values() {
        let t = Tolerance { absolute: 1e-6, relative: 1e-6 };
        assert!(t.accepts(f64::NAN, f64::NAN));
        assert!(!t.accepts(f64::NAN, 1.0));
        assert!(!t.accepts(1.0, f64::NAN));
        assert!(t.accepts(f64::INFINITY, f64::INFINITY));
        assert!(!t.accepts(f64::INFINITY, f64::NEG_INFINITY));
        assert!(!t.accepts(f64::INFINITY, 1e30));
        assert!(t.accepts(1.0, 1.0 + 1e-6));
        assert!(!t.accepts(1.0, 1.0 + 1e-5));
    }

    #[test]
    fn slice_check_names_the_first_bad_element() {
        let t = Tolerance { absolute: 0.0, relative: 1e-6 };
        let err = t.check_slices(&[1.0, 2.0, 3.0], &[1.0, 2.5, 3.0], describe_1d).unwrap_err();
        assert!(err.message.contains("element 1"), "{err}");
        assert!(t.check_slices(&[1.0], &[1.0, 2.0], describe_1d).is_err());
    }
}
