// histogram: counts[b] = number of x[i] that fall in bin b, with bins equal slices of [0, 1).
//
// The lesson is atomics and contention:
//   histogram_global   every element does an atomicAdd on the global counts. When many values hit the same bin,
//                      those atomics serialise on one memory location.
//   histogram_private  each workgroup first counts into its own private copy of the histogram in workgroup
//                      memory (fast on-chip atomics, contention only within the workgroup), then adds its non-zero
//                      counts to the global histogram: one global atomic per bin per workgroup instead of one per
//                      element.
//
// Bin rule: NaN is not counted; otherwise bin = min(u32(clamp(x * bins, 0, bins)), bins - 1), so negative values
// and -inf land in bin 0 and values >= 1 and +inf in the last bin.

struct Params {
    n: u32,       // number of values
    bins: u32,    // number of bins, 1 to 65536
    _pad0: u32,
    _pad1: u32,
}

const WG: u32 = 256u;
// Bins held in workgroup memory at once (16 KiB of u32 counters).
const PRIVATE_BINS: u32 = 4096u;
// Returned by bin_of for values that are not counted.
const NO_BIN: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>>;
// x viewed as vec4s (histogram_private): only the n / 4 whole vec4s are read through it, never the padding.
@group(0) @binding(3) var<storage, read> x4: array<vec4<f32>>;

var<workgroup> private_counts: array<atomic<u32>, PRIVATE_BINS>;

// The bin of v, or NO_BIN for NaN. Infinities are classified on bit patterns: a float-to-u32 conversion of an
// infinity is not well defined in WGSL, and a compiler may assume floats are finite. The product is the same single
// f32 multiply as the reference; it can itself overflow to +-inf for huge finite v, so it is the product that is
// tested. Written with selects rather than early returns, so a warp's lanes never diverge here: this function runs
// once per value and its branches cost a fifth of histogram_private's time.
fn bin_of(v: f32, bins: u32) -> u32 {
    let fbins = f32(bins);
    let t = v * fbins;
    let tbits = bitcast<u32>(t);
    // Finite: clamp into [0, bins], truncate, and fold the value bins (x >= 1) into the last bin.
    var b = min(u32(clamp(t, 0.0, fbins)), bins - 1u);
    b = select(b, bins - 1u, tbits == 0x7f800000u); // +inf, or a product that overflowed upwards
    b = select(b, 0u, tbits == 0xff800000u); // -inf, or a product that overflowed downwards
    return select(b, NO_BIN, (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u); // NaN
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 1: one global atomic per element. A grid-stride loop lets the host launch any number of workgroups.
@compute @workgroup_size(WG)
fn histogram_global(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let wg = wid.x + wid.y * nwg.x;
    let total_threads = nwg.x * nwg.y * WG;
    let bins = params.bins;
    for (var i = wg * WG + lid.x; i < params.n; i += total_threads) {
        let b = bin_of(x[i], bins);
        if (b != NO_BIN) {
            atomicAdd(&counts[b], 1u);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Rung 2: privatisation in workgroup memory.
// Up to 65536 bins do not fit in workgroup memory, so the bins are processed in ranges of PRIVATE_BINS; for each
// range the workgroup sweeps its share of x again and counts only the values whose bin is in the range. With the
// default 256 bins there is a single range and a single sweep.
//
// With the atomics on chip, reading x becomes the limit, so the sweep reads it the way a bandwidth-bound kernel
// does: vec4 loads, four issued before any is counted, far faster than one value per trip on an H200 (measured:
// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). The up to three values after the last whole vec4 are
// read one by one.
//
// Every loop that contains a barrier has a trip count computed from uniform values only (params and the
// constant range size), so all threads of the workgroup reach the same barriers.

// Counts v into the private histogram if its bin is in the current range [base, base + range_bins). The unsigned
// subtraction wraps for b < base, so one comparison checks both ends of the range (NO_BIN also fails it).
fn count_private(v: f32, bins: u32, base: u32, range_bins: u32) {
    let local_bin = bin_of(v, bins) - base;
    if (local_bin < range_bins) {
        atomicAdd(&private_counts[local_bin], 1u);
    }
}

fn count_private4(v: vec4<f32>, bins: u32, base: u32, range_bins: u32) {
    count_private(v.x, bins, base, range_bins);
    count_private(v.y, bins, base, range_bins);
    count_private(v.z, bins, base, range_bins);
    count_private(v.w, bins, base, range_bins);
}

@compute @workgroup_size(WG)
fn histogram_private(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let thread = (wid.x + wid.y * nwg.x) * WG + lid.x;
    let total_threads = nwg.x * nwg.y * WG;
    let bins = params.bins;
    let n4 = params.n >> 2u;
    let num_ranges = (bins + PRIVATE_BINS - 1u) / PRIVATE_BINS;

    for (var r = 0u; r < num_ranges; r += 1u) {
        let base = r * PRIVATE_BINS;
        let range_bins = min(PRIVATE_BINS, bins - base);

        // 1. Clear the private histogram.
        for (var j = lid.x; j < PRIVATE_BINS; j += WG) {
            atomicStore(&private_counts[j], 0u);
        }
        workgroupBarrier();

        // 2. Count this workgroup's share of x into it: whole vec4s in a grid-stride loop, four loads in flight...
        for (var i = thread; i < n4; i += 4u * total_threads) {
            let i1 = i + total_threads;
            let i2 = i1 + total_threads;
            let i3 = i2 + total_threads;
            let v0 = x4[i];
            var v1 = vec4<f32>(0.0);
            var v2 = vec4<f32>(0.0);
            var v3 = vec4<f32>(0.0);
            if (i1 < n4) { v1 = x4[i1]; }
            if (i2 < n4) { v2 = x4[i2]; }
            if (i3 < n4) { v3 = x4[i3]; }
            count_private4(v0, bins, base, range_bins);
            if (i1 < n4) { count_private4(v1, bins, base, range_bins); }
            if (i2 < n4) { count_private4(v2, bins, base, range_bins); }
            if (i3 < n4) { count_private4(v3, bins, base, range_bins); }
        }
        // ... then the last n % 4 values, one per thread.
        let tail = 4u * n4 + thread;
        if (tail < params.n) {
            count_private(x[tail], bins, base, range_bins);
        }
        workgroupBarrier();

        // 3. Merge into the global histogram, skipping empty bins (common when the data is skewed or the
        //    workgroup saw few values).
        for (var j = lid.x; j < range_bins; j += WG) {
            let v = atomicLoad(&private_counts[j]);
            if (v != 0u) {
                atomicAdd(&counts[base + j], v);
            }
        }
        // The next range clears the private histogram: wait until every thread has read it.
        workgroupBarrier();
    }
}
