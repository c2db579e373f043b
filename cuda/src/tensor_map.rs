//! Tensor maps: how a kernel on Hopper asks the tensor memory accelerator (TMA) for a box of a matrix
//! (`cp.async.bulk.tensor`) without computing a single address. The host describes the matrix once per launch (its
//! base, its sizes, its row pitch, the box a copy brings, the swizzle the box lands in) with the driver's
//! `cuTensorMapEncodeTiled`, a host-side call of a few microseconds, and passes the 128 opaque bytes by value as a
//! `__grid_constant__` kernel parameter: the accelerator reads the map from parameter space, which no kernel can
//! have written, so no fence is needed before the first copy.
//!
//! The map's rules are checked here, each with the rule named, before the driver sees them: the base address and
//! every row pitch a multiple of 16 bytes, sizes from 1 to 2^32 elements, a box no wider than its swizzle span (128
//! bytes) and no dimension of it past 256. Elements past the matrix's edges arrive as zeros, which is what a matmul's
//! partial tiles want.

use cudarc::driver::DeviceRepr;
use cudarc::driver::sys::{self, CUdeviceptr};
use gpuworthy_core::{BackendKind, Error, Result};

/// A tensor map (CUDA's `CUtensorMap`): 128 opaque bytes, passed by value to a kernel whose parameter is the
/// same size and alignment (`TmaTensorMap` in `matmul_tma.cu`).
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct TensorMap(sys::CUtensorMap);

// SAFETY: a `CUtensorMap` is plain bytes with no pointers the host owns; the launch copies its 128 bytes into the
// kernel's parameter of the same layout, which is what the driver documents for `__grid_constant__` tensor maps.
unsafe impl DeviceRepr for TensorMap {}

/// Whether the driver has tensor maps: `cuTensorMapEncodeTiled` arrived with CUDA 12.0's driver.
pub(crate) fn driver_has_tensor_maps() -> bool {
    let mut version = 0;
    // SAFETY: cuDriverGetVersion writes one int through a valid pointer; the driver library was found before.
    let status = unsafe { sys::cuDriverGetVersion(&mut version) };
    status == sys::CUresult::CUDA_SUCCESS && version >= 12000
}

/// The widest box row the 128-byte swizzle allows, in bytes.
const SWIZZLE_SPAN: u32 = 128;
/// The largest box dimension, in elements.
const MAX_BOX: u32 = 256;

/// The elements a tensor map describes: copied as bits, never converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Element {
    /// bf16 or fp16 values.
    Bits16,
    /// f32 values (which a TF32 product truncates).
    F32,
}

impl Element {
    fn bytes(self) -> u64 {
        match self {
            Element::Bits16 => 2,
            Element::F32 => 4,
        }
    }

    fn data_type(self) -> sys::CUtensorMapDataType {
        match self {
            Element::Bits16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            Element::F32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        }
    }
}

/// The tensor map of a row-major matrix of `element`s at `address`: `rows` × `columns` elements, `pitch` elements
/// from one row's start to the next; each copy brings a box of `box_columns` × `box_rows` elements into shared
/// memory in the 128-byte swizzle, with zeros for elements past the matrix's edges.
pub(crate) fn matrix(
    address: CUdeviceptr,
    element: Element,
    (rows, columns, pitch): (usize, usize, usize),
    (box_columns, box_rows): (u32, u32),
) -> Result<TensorMap> {
    let element_bytes = element.bytes();
    let refuse = |rule: String| Error::Device { backend: BackendKind::Cuda, message: format!("tensor map: {rule}") };
    if !address.is_multiple_of(16) {
        return Err(refuse(format!("the matrix's address {address:#x} is not a multiple of 16 bytes")));
    }
    for (what, size) in [("rows", rows), ("columns", columns)] {
        if size == 0 || size as u64 > 1 << 32 {
            return Err(refuse(format!("{size} {what}: a dimension holds 1 to 2^32 elements")));
        }
    }
    let pitch_bytes = pitch as u64 * element_bytes;
    if pitch < columns || !pitch_bytes.is_multiple_of(16) || pitch_bytes >= 1 << 40 {
        return Err(refuse(format!(
            "a row pitch of {pitch} elements for {columns} columns: it must hold the row and be a multiple of 16 \
             bytes below 2^40"
        )));
    }
    if u64::from(box_columns) * element_bytes > u64::from(SWIZZLE_SPAN)
        || box_columns == 0
        || box_rows == 0
        || box_rows > MAX_BOX
    {
        return Err(refuse(format!(
            "a box of {box_columns} x {box_rows}: rows of at most {SWIZZLE_SPAN} bytes (the swizzle's span), at \
             most {MAX_BOX} rows"
        )));
    }
    let dims = [columns as u64, rows as u64];
    let strides = [pitch_bytes];
    let boxes = [box_columns, box_rows];
    let element_steps = [1u32, 1];
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::uninit();
    // SAFETY: `map` is a writable CUtensorMap of the driver's size and alignment; the arrays hold the rank's (2)
    // sizes, its one stride, the box and the element steps; the address is device memory of at least `rows` rows
    // of `pitch` elements (the caller's allocation), and every rule the driver checks was checked above.
    let status = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            element.data_type(),
            2,
            address as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_steps.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if status != sys::CUresult::CUDA_SUCCESS {
        return Err(refuse(format!("cuTensorMapEncodeTiled for {rows} x {columns} (pitch {pitch}): {status:?}")));
    }
    // SAFETY: the driver filled the map on success.
    Ok(TensorMap(unsafe { map.assume_init() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The rules are checked before the driver is called, so they are testable on a machine without one.
    #[test]
    fn a_map_that_breaks_a_rule_is_refused_with_the_rule_named() {
        let refused = |r: Result<TensorMap>| match r {
            Err(Error::Device { message, .. }) => message,
            Ok(_) => panic!("refused"),
            Err(e) => panic!("{e}"),
        };
        assert!(refused(matrix(0x1008, Element::Bits16, (4, 8, 8), (64, 64))).contains("multiple of 16 bytes"));
        assert!(refused(matrix(0x1000, Element::Bits16, (0, 8, 8), (64, 64))).contains("0 rows"));
        assert!(refused(matrix(0x1000, Element::Bits16, (4, 7, 7), (64, 64))).contains("row pitch of 7"));
        assert!(refused(matrix(0x1000, Element::Bits16, (4, 9, 8), (64, 64))).contains("row pitch of 8"));
        assert!(refused(matrix(0x1000, Element::Bits16, (4, 8, 8), (128, 64))).contains("a box of 128 x 64"));
        assert!(refused(matrix(0x1000, Element::Bits16, (4, 8, 8), (64, 512))).contains("a box of 64 x 512"));
        assert!(refused(matrix(0x1000, Element::F32, (4, 6, 6), (32, 64))).contains("row pitch of 6"));
        assert!(refused(matrix(0x1000, Element::F32, (4, 8, 8), (64, 64))).contains("a box of 64 x 64"));
    }
}
