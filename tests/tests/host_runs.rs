//! A run on the CPU computes where the caller's data lies: for every workload and every CPU variant, a run allocates
//! less than a copy of its input and its output would take. The CPU's phases keep a copy of the input as their
//! resident data (a launch needs it), but a run from the host went through those phases once and copied 1 GiB to
//! sum it, a hundred times the sum's own time; this test fails for any workload whose run copies its input again.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_each_workload};

/// The system allocator, counting the bytes it hands out.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the counter only observes the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (so from `System`) with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size.saturating_sub(layout.size()), Ordering::Relaxed);
        // SAFETY: as `GlobalAlloc::realloc` requires of its caller.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

struct AllocatedByRuns {
    cpu: gpuworthy::Device,
    failures: Vec<String>,
}

impl WorkloadVisitor for AllocatedByRuns {
    type Output = ();

    fn visit<W: CommandLineWorkload>(&mut self) {
        // The largest size of the quick ladder: large enough that a copy of the input is not lost in the tasks'
        // small allocations.
        let Some(params) = W::quick_ladder().into_iter().max_by_key(|p| W::cost(p).bytes) else { return };
        let input = W::generate(&params, gpuworthy_tests::SEED).expect("the input is made");
        let whole = W::host_bytes(&params).expect("the sizes fit") as usize;
        // What a copy of the input takes, measured as one.
        let before = ALLOCATED.load(Ordering::Relaxed);
        let copy = input.clone();
        let input_bytes = ALLOCATED.load(Ordering::Relaxed) - before;
        drop(copy);
        // A run allocates its output (the rest of `whole`) and its tasks' small buffers; one that copies its input
        // allocates that copy too. Half the input apart, with the tasks' buffers allowed 1/16 of the whole.
        let limit = whole - input_bytes / 2 + whole / 16;
        for variant in self.cpu.variants::<W>() {
            // Once untimed, so that a first call's one-off allocations (a thread pool, a table) are not counted.
            self.cpu.run::<W>(variant, &input).expect("the CPU runs it");
            let before = ALLOCATED.load(Ordering::Relaxed);
            let output = self.cpu.run::<W>(variant, &input).expect("the CPU runs it");
            let allocated = ALLOCATED.load(Ordering::Relaxed) - before;
            drop(output);
            eprintln!(
                "{} {params} {variant}: {allocated} bytes allocated, input {input_bytes}, with output {whole}",
                W::NAME
            );
            if allocated >= limit {
                self.failures.push(format!(
                    "{} {params} {variant}: a run allocated {allocated} bytes, its input {input_bytes} and its input and \
                     output {whole}",
                    W::NAME
                ));
            }
        }
    }
}

#[test]
fn a_cpu_run_reads_its_input_where_it_lies() {
    let mut visitor = AllocatedByRuns { cpu: gpuworthy::Device::cpu().unwrap(), failures: Vec::new() };
    visit_each_workload(&mut visitor);
    assert!(visitor.failures.is_empty(), "{}", visitor.failures.join("\n"));
}
