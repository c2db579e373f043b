// scan: the inclusive prefix sum, y[i] = x[0] + ... + x[i], as reduce-then-scan.
//
// The host runs, for each chunk of the input (a chunk is at most one storage binding):
//   1. scan_tile_sums over x: each workgroup adds its tile of TILE = WG * ITEMS elements into sums[tile];
//      the same entry point then runs over sums, one level up, until one tile holds a level's sums;
//   2. scan_tile from the top level down: each workgroup scans its tile and adds the inclusive scan of the tiles
//      before it (carries[tile - 1]), so the last dispatch writes y.
// A chunk after the first also adds the previous chunk's last output (prev[params.prev_last]).
//
// Why not one pass, as CUDA's decoupled look-back does: a single pass makes a workgroup wait, spinning, for an
// earlier workgroup to publish its sum. That is safe only if the earlier workgroup is sure to run meanwhile, and
// WGSL promises no such forward progress between workgroups (nor do Vulkan, Metal or DX12 in general): a driver may
// run workgroups in any order, or one at a time (lavapipe runs them on a few CPU threads), and a spinning
// workgroup could then wait forever. WGSL also has no memory-model fence across workgroups to order the published
// value before its flag. Reduce-then-scan needs only the ordering between dispatches, which WebGPU guarantees.
//
// Accuracy (core's Scan check): each thread adds its ITEMS elements in order (a chain of 4), the threads' totals are
// scanned by a tree in workgroup memory (Hillis-Steele over 256 values, depth 8), and the carries come from the
// same tree one level up: no float accumulates along the array.

struct Params {
    n: u32,            // elements of this level's input
    use_carries: u32,  // 1: tile t adds carries[t - 1]
    has_prev: u32,     // 1: every element adds prev[prev_last]
    prev_last: u32,    // the index of the previous chunk's last output in prev
}

const WG: u32 = 256u;
const ITEMS: u32 = 4u;
const TILE: u32 = 1024u; // WG * ITEMS

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> sums: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> carries: array<f32>;
@group(0) @binding(5) var<storage, read> prev: array<f32>;

var<workgroup> tile_values: array<f32, TILE>;
var<workgroup> totals: array<f32, WG>;

// The tile number of a workgroup in a grid folded into two dimensions.
fn tile_of(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return wid.x + wid.y * groups.x;
}

// Loads the tile (coalesced: element k * WG + lid of the tile), zero past n.
fn load_tile(tile: u32, lid: u32) {
    let base = tile * TILE;
    for (var k = 0u; k < ITEMS; k++) {
        let i = k * WG + lid;
        tile_values[i] = select(0.0, x[base + i], base + i < params.n);
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn scan_tile_sums(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let tile = tile_of(wid, groups);
    // Every invocation reaches the barriers; workgroups past the last tile load zeros and write nothing.
    load_tile(tile, lid);
    var v = 0.0;
    for (var k = 0u; k < ITEMS; k++) {
        v += tile_values[lid * ITEMS + k];
    }
    totals[lid] = v;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (lid < stride) {
            totals[lid] += totals[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid == 0u && tile * TILE < params.n) {
        sums[tile] = totals[0];
    }
}

@compute @workgroup_size(256)
fn scan_tile(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let tile = tile_of(wid, groups);
    load_tile(tile, lid);
    // This thread's ITEMS elements, scanned in order.
    var items: array<f32, ITEMS>;
    var run = 0.0;
    for (var k = 0u; k < ITEMS; k++) {
        run += tile_values[lid * ITEMS + k];
        items[k] = run;
    }
    // Hillis-Steele over the threads' totals in workgroup memory: inclusive.
    totals[lid] = run;
    workgroupBarrier();
    for (var offset = 1u; offset < WG; offset *= 2u) {
        let add = select(0.0, totals[max(lid, offset) - offset], lid >= offset);
        workgroupBarrier();
        totals[lid] += add;
        workgroupBarrier();
    }
    let before = select(0.0, totals[max(lid, 1u) - 1u], lid > 0u);
    var carry = 0.0;
    if (params.use_carries == 1u && tile > 0u) {
        carry = carries[tile - 1u];
    }
    if (params.has_prev == 1u) {
        carry += prev[params.prev_last];
    }
    for (var k = 0u; k < ITEMS; k++) {
        tile_values[lid * ITEMS + k] = (before + items[k]) + carry;
    }
    workgroupBarrier();
    let base = tile * TILE;
    for (var k = 0u; k < ITEMS; k++) {
        let i = k * WG + lid;
        if (base + i < params.n) {
            y[base + i] = tile_values[i];
        }
    }
}
