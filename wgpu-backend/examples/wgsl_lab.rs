//! A bench for trying shapes of a WGSL kernel without rebuilding: it compiles a shader file at run time and times
//! each entry point named on the command line, with the workgroup grid and buffer sizes given there.
//!
//! ```text
//! cargo run --release -p gpuworthy-wgpu --example wgsl_lab -- FILE.wgsl 'ENTRY GX GY IN OUT MOVED [P0 P1 P2 P3]'...
//! ```
//!
//! `FILE` may name several files joined by `+` (`expr_helpers.wgsl+half_sum.wgsl`): they are read as one module, so
//! that shapes sharing helpers keep one copy of them.
//!
//! Every entry point sees the same bindings: 0 a uniform of four `u32` (`P0..P3`, zero when left out), 1 a read-only
//! storage buffer of `IN` bytes holding uniform random floats in [0, 1), 2 a read-write storage buffer of `OUT`
//! bytes. `MOVED` is the number of bytes the kernel reads and writes, for the bandwidth column. The entry `@copy`
//! times a buffer-to-buffer copy command of `IN` bytes instead. The lab checks nothing: the results of a kernel
//! shape found here are checked by the conformance tests once the shape is moved into `shaders/`.
//!
//! The shader gets the run-time checks the backend would give it: `GPUWORTHY_WGPU_CHECKS` chooses them (see
//! `ShaderChecks`).

use std::time::Instant;

use gpuworthy_wgpu::ShaderChecks;

const REPEATS: usize = 25;

struct Spec {
    entry: String,
    grid: (u32, u32),
    in_bytes: u64,
    out_bytes: u64,
    moved_bytes: f64,
    params: [u32; 4],
}

fn parse(text: &str) -> Result<Spec, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() < 6 {
        return Err(format!("`{text}`: expected ENTRY GX GY IN OUT MOVED [P0 P1 P2 P3]"));
    }
    let number = |w: &str| w.parse::<u64>().map_err(|e| format!("`{w}` in `{text}`: {e}"));
    let mut params = [0u32; 4];
    for (slot, w) in params.iter_mut().zip(&words[6..]) {
        *slot = number(w)? as u32;
    }
    Ok(Spec {
        entry: words[0].to_owned(),
        grid: (number(words[1])? as u32, number(words[2])? as u32),
        in_bytes: number(words[3])?.max(16),
        out_bytes: number(words[4])?.max(16),
        moved_bytes: number(words[5])? as f64,
        params,
    })
}

fn median(mut samples: Vec<f64>) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    (samples[0], samples[samples.len() / 2], samples[samples.len() - 1])
}

fn main() -> std::process::ExitCode {
    // Errors are printed as text (a shader's validation error spans several lines, with the source quoted), not as
    // the debug form of a string.
    match lab() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wgsl_lab: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn lab() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (file, specs) = args.split_first().ok_or("usage: wgsl_lab FILE.wgsl 'ENTRY GX GY IN OUT MOVED [P..]'...")?;
    let specs: Vec<Spec> = specs.iter().map(|s| parse(s)).collect::<Result<_, _>>()?;
    let parts = file.split('+').map(|part| std::fs::read_to_string(part).map_err(|e| format!("{part}: {e}")));
    let source = parts.collect::<Result<Vec<_>, _>>()?.join("\n");

    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| format!("no adapter: {e}"))?;
    let info = adapter.get_info();
    let wanted =
        wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS | wgpu::Features::SUBGROUP;
    let features = adapter.features() & wanted;
    if !features.contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS) {
        return Err(format!("{} has no timestamp queries inside encoders", info.name));
    }
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("wgsl lab"),
        required_features: features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| format!("device: {e}"))?;
    println!("{} ({:?}, {} {})", info.name, info.backend, info.driver, info.driver_info);

    let descriptor =
        wgpu::ShaderModuleDescriptor { label: Some(file), source: wgpu::ShaderSource::Wgsl(source.into()) };
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let checks = ShaderChecks::from_env().map_err(|e| e.to_string())?;
    println!("shader checks: {checks}");
    let module = if checks == ShaderChecks::ALL {
        device.create_shader_module(descriptor)
    } else {
        // SAFETY: the shader's author vouches for the checks left out, as the backend does for `shaders/` (and
        // for wgpu's loop bounding, the default leaves out, every loop must end).
        unsafe { device.create_shader_module_trusted(descriptor, checks.runtime_checks()) }
    };
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(format!("{file}: {e}"));
    }
    let storage = |read_only| wgpu::BindingType::Buffer {
        ty: wgpu::BufferBindingType::Storage { read_only },
        has_dynamic_offset: false,
        min_binding_size: None,
    };
    let entry =
        |binding, ty| wgpu::BindGroupLayoutEntry { binding, visibility: wgpu::ShaderStages::COMPUTE, ty, count: None };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &[
            entry(
                0,
                wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
            ),
            entry(1, storage(true)),
            entry(2, storage(false)),
        ],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let queries =
        device.create_query_set(&wgpu::QuerySetDescriptor { label: None, ty: wgpu::QueryType::Timestamp, count: 2 });
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let period = queue.get_timestamp_period() as f64;

    // One input and one output buffer, as large as the largest spec asks for, shared by all.
    let in_bytes = specs.iter().map(|s| s.in_bytes).max().unwrap_or(16).next_multiple_of(16);
    let out_bytes = specs.iter().map(|s| s.out_bytes.max(s.in_bytes)).max().unwrap_or(16).next_multiple_of(16);
    let input = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("in"),
        size: in_bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("out"),
        size: out_bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let chunk: Vec<f32> = (0..(1 << 22))
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    let chunk_bytes: &[u8] = bytemuck::cast_slice(&chunk);
    let mut offset = 0;
    while offset < in_bytes {
        let len = (in_bytes - offset).min(chunk_bytes.len() as u64);
        queue.write_buffer(&input, offset, &chunk_bytes[..len as usize]);
        offset += len;
    }
    queue.submit([]);
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;

    println!("{:<28} {:>13} {:>10} {:>10} {:>10} {:>9}", "entry", "grid", "min µs", "median µs", "max µs", "GB/s");
    for spec in &specs {
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 16,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        queue.write_buffer(&uniform, 0, bytemuck::cast_slice(&spec.params));
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let copy = spec.entry == "@copy";
        let pipeline = (!copy).then(|| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&spec.entry),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(&spec.entry),
                compilation_options: Default::default(),
                cache: None,
            })
        });
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &input,
                        offset: 0,
                        size: wgpu::BufferSize::new(spec.in_bytes),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &output,
                        offset: 0,
                        size: wgpu::BufferSize::new(spec.out_bytes),
                    }),
                },
            ],
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(format!("{}: {e}", spec.entry));
        }
        let mut samples = Vec::new();
        let mut wall = Vec::new();
        for repeat in 0..REPEATS + 3 {
            let mut encoder = device.create_command_encoder(&Default::default());
            encoder.clear_buffer(&output, 0, Some(spec.out_bytes.next_multiple_of(4)));
            encoder.write_timestamp(&queries, 0);
            match &pipeline {
                Some(pipeline) => {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, &group, &[]);
                    pass.dispatch_workgroups(spec.grid.0, spec.grid.1, 1);
                }
                None => encoder.copy_buffer_to_buffer(&input, 0, &output, 0, spec.in_bytes / 4 * 4),
            }
            encoder.write_timestamp(&queries, 1);
            encoder.resolve_query_set(&queries, 0..2, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, 16);
            let start = Instant::now();
            queue.submit([encoder.finish()]);
            readback.map_async(wgpu::MapMode::Read, .., |_| {});
            device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
            let elapsed = start.elapsed().as_secs_f64();
            let ticks: Vec<u64> =
                bytemuck::pod_collect_to_vec(&readback.get_mapped_range(..).map_err(|e| e.to_string())?);
            readback.unmap();
            if repeat >= 3 {
                samples.push(ticks[1].saturating_sub(ticks[0]) as f64 * period * 1e-3);
                wall.push(elapsed * 1e6);
            }
        }
        let (min, med, max) = median(samples);
        let grid = format!("{}x{}", spec.grid.0, spec.grid.1);
        let name = if copy { "@copy (copy command)" } else { &spec.entry };
        println!(
            "{name:<28} {grid:>13} {min:>10.1} {med:>10.1} {max:>10.1} {:>9.0}   (wall {:.0} µs)",
            spec.moved_bytes / (med * 1e-6) / 1e9,
            median(wall).1
        );
    }
    Ok(())
}
