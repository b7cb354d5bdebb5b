//! `kernlab._kernlab`: the extension module under the `kernlab` Python package. It knows
//! nothing of torch: the package's Python side hands it each tensor, contiguous, as an
//! address, a shape and a dtype, and the stream to run on, and maps its errors to
//! Python's. On CUDA the kernels read and write the caller's memory in place, ordered with the
//! caller's stream (see `device_on`); on the CPU the CPU tier runs on a copy of the inputs and
//! writes the output back.

use kernlab::ops::{self, FlagValues, Op, Tier, Variant};
use kernlab::runtime::device::CudaDevice;
use kernlab::runtime::tensor::CpuData;
use kernlab::{DType, Device, DeviceKind, Error, Tensor};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// One contiguous (row-major) tensor as the Python side describes it: (address, shape, dtype
/// name).
type TensorArg = (u64, Vec<usize>, String);

/// kernlab's error as Python's: a wrong dtype is a TypeError; a wrong shape, layout, device,
/// variant or value a ValueError; memory a MemoryError; the rest (the GPU, the driver, a
/// library missing) a RuntimeError.
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::UnsupportedDtype { .. } => PyTypeError::new_err(msg),
        Error::ShapeMismatch { .. }
        | Error::BadShape { .. }
        | Error::EmptyTensor { .. }
        | Error::NotContiguous { .. }
        | Error::UnsupportedShape { .. }
        | Error::UnknownOp(..)
        | Error::UnknownVariant { .. }
        | Error::WrongDevice { .. }
        | Error::Invalid(_) => PyValueError::new_err(msg),
        Error::OutOfDeviceMemory { .. } | Error::OutOfHostMemory { .. } => {
            PyMemoryError::new_err(msg)
        }
        _ => PyRuntimeError::new_err(msg),
    }
}

fn dtype_named(name: &str) -> PyResult<DType> {
    name.parse::<DType>()
        .map_err(|_| PyTypeError::new_err(format!("dtype {name}: kernlab takes f32, bf16, f16")))
}

/// The variant `name` of `op` on `device`. "auto" is the op's `auto` where it has one; else on
/// the CPU its CPU tier (or its manual tier where it has no other), and on CUDA its newest
/// hand-written version (the last registered of the cuda tier).
fn variant_for(op: Op, name: &str, device: DeviceKind) -> PyResult<&'static Variant> {
    let here: Vec<&'static Variant> = ops::variants_for(op, device).collect();
    if name == "auto" && !here.iter().any(|v| v.name == "auto") {
        let pick = match device {
            DeviceKind::Cpu => here
                .iter()
                .find(|v| v.tier == Tier::Cpu)
                .or_else(|| here.iter().find(|v| v.tier == Tier::Manual)),
            DeviceKind::Cuda => here.iter().rev().find(|v| v.tier == Tier::Cuda),
        };
        return pick.copied().ok_or_else(|| {
            PyValueError::new_err(format!("{op} has no variant that runs on {device}"))
        });
    }
    ops::find(op, name, device).map_err(to_py)
}

/// The CUDA device kernlab works on for torch's `stream` of device `ordinal`, opened once a
/// device: on torch's default stream (0, which lives as long as the process) kernlab works on
/// that stream itself; on any other stream it works on a stream of its own, ordered after
/// torch's work and torch's after its own by events around each call (`Some(torch's stream)`),
/// so that a stream torch destroys later is never kept.
fn device_on(
    ordinal: usize,
    stream: u64,
) -> PyResult<(Arc<CudaDevice>, Option<Arc<cudarc::driver::CudaStream>>)> {
    type Devices = Mutex<HashMap<(usize, bool), Arc<CudaDevice>>>;
    static DEVICES: OnceLock<Devices> = OnceLock::new();
    let mut map = DEVICES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let default = stream == 0;
    let dev = match map.get(&(ordinal, default)) {
        Some(d) => d.clone(),
        None => {
            let d = if default {
                // SAFETY: stream 0 is the legacy default stream of torch's (primary) context.
                unsafe { CudaDevice::open_on_stream(ordinal, 0) }
            } else {
                CudaDevice::open(ordinal)
            }
            .map_err(to_py)?;
            map.insert((ordinal, default), d.clone());
            d
        }
    };
    // SAFETY: torch's current stream of this device, alive for the call (the wrapper is
    // dropped with it and never destroys the stream).
    let theirs = (!default).then(|| unsafe {
        dev.ctx
            .wrap_borrowed_stream(stream as cudarc::driver::sys::CUstream)
    });
    Ok((dev, theirs))
}

/// `later` waits for the work enqueued on `first` so far.
fn order_after(
    first: &cudarc::driver::CudaStream,
    later: &cudarc::driver::CudaStream,
) -> PyResult<()> {
    let e = first.record_event(None).map_err(|e| {
        to_py(Error::driver(
            "cuEventRecord (ordering with torch's stream)",
            e,
        ))
    })?;
    later.wait(&e).map_err(|e| {
        to_py(Error::driver(
            "cuStreamWaitEvent (ordering with torch's stream)",
            e,
        ))
    })
}

/// A contiguous `shape`'s strides and bytes of `dtype`, by kernlab's own layout check.
fn contiguous(shape: &[usize], dtype: DType) -> PyResult<(Vec<usize>, usize)> {
    let (strides, span) =
        kernlab::runtime::tensor::row_strided_layout(shape, None).map_err(to_py)?;
    let bytes = span
        .checked_mul(dtype.size())
        .ok_or_else(|| PyValueError::new_err(format!("a {shape:?} tensor is too large")))?;
    Ok((strides, bytes))
}

/// Host buffers kept between CPU calls: a fresh buffer of a few MiB costs a page fault a 4 KiB
/// page each call (the allocator maps it anew and unmaps it at the free), which outweighed the
/// kernels themselves (docs/python.md, "On the CPU"). A call takes buffers of its exact dtype
/// and length from here and gives them back; at most `SPARE_MAX` bytes are kept.
static SPARE: Mutex<Vec<CpuData>> = Mutex::new(Vec::new());
const SPARE_MAX: usize = 256 << 20;

/// A host buffer of `n` elements of `dtype`: a kept one when one fits exactly, else a new one
/// (its contents are whatever the last call left: every caller overwrites it).
fn host_buffer(dtype: DType, n: usize) -> CpuData {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = spare
        .iter()
        .position(|d| d.dtype() == dtype && d.len() == n)
    {
        return spare.swap_remove(i);
    }
    drop(spare);
    CpuData::zeros(dtype, n)
}

/// Keep a CPU tensor's buffer for the next call, within `SPARE_MAX` (the oldest go first).
fn keep_buffer(t: Tensor) {
    let Some(data) = t.into_cpu_data() else {
        return;
    };
    let bytes = data.as_bytes().len();
    if bytes == 0 || bytes > SPARE_MAX {
        return;
    }
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    spare.push(data);
    while spare.iter().map(|d| d.as_bytes().len()).sum::<usize>() > SPARE_MAX {
        spare.remove(0);
    }
}

/// A kernlab tensor over `arg`: in place on CUDA, a copy on the CPU.
fn tensor_of(arg: &TensorArg, dev: &Device) -> PyResult<Tensor> {
    let (ptr, shape, dtype) = arg;
    let dtype = dtype_named(dtype)?;
    let (strides, bytes) = contiguous(shape, dtype)?;
    match dev {
        // SAFETY: the Python side passes a live, contiguous tensor's data address and shape
        // (so `bytes` from the address are its own), and keeps it alive across the call.
        Device::Cuda(d) => {
            unsafe { Tensor::borrow_cuda(d, *ptr, bytes, dtype, shape, &strides) }.map_err(to_py)
        }
        Device::Cpu => {
            let raw: &[u8] = match (bytes, *ptr) {
                (0, _) => &[],
                (_, 0) => return Err(PyValueError::new_err("a null host address")),
                // SAFETY: as above, for host memory.
                _ => unsafe { std::slice::from_raw_parts(*ptr as *const u8, bytes) },
            };
            let mut data = host_buffer(dtype, bytes / dtype.size());
            data.as_bytes_mut().copy_from_slice(raw);
            Tensor::from_cpu(data, shape, &strides).map_err(to_py)
        }
    }
}

/// Run `variant` of `op` with `flags` (the command line's op flags, by name without dashes)
/// on `inputs`, writing `out`, on CUDA device `device` and `stream`, or the CPU where `device`
/// is negative. The output must be contiguous.
#[pyfunction]
#[pyo3(signature = (op, variant, flags, inputs, out, device, stream))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    op: &str,
    variant: &str,
    flags: Vec<(String, String)>,
    inputs: Vec<TensorArg>,
    out: TensorArg,
    device: i64,
    stream: u64,
) -> PyResult<()> {
    let op: Op = op.parse().map_err(to_py)?;
    let mut fv = FlagValues::default();
    for (k, v) in &flags {
        fv.set(k, v.as_str());
    }
    let params = op.params(&fv).map_err(to_py)?;
    let (dev, theirs) = if device < 0 {
        (Device::Cpu, None)
    } else {
        let (d, theirs) = device_on(device as usize, stream)?;
        (Device::Cuda(d), theirs)
    };
    let v = variant_for(op, variant, dev.kind())?;
    let xs: Vec<Tensor> = inputs
        .iter()
        .map(|a| tensor_of(a, &dev))
        .collect::<PyResult<_>>()?;
    // On a stream of its own, kernlab's work starts after torch's so far, and torch's next
    // work waits for kernlab's, whatever the call's outcome (it may have enqueued some).
    let bridge = match (&dev, &theirs) {
        (Device::Cuda(d), Some(t)) => Some((d.stream.clone(), t.clone())),
        _ => None,
    };
    if let Some((mine, t)) = &bridge {
        order_after(t, mine)?;
    }
    let ran = py.detach(|| -> PyResult<()> {
        let x: Vec<&Tensor> = xs.iter().collect();
        match &dev {
            Device::Cuda(_) => {
                let mut y = tensor_of(&out, &dev)?;
                v.run(&params, &x, &mut y).map_err(to_py)
            }
            Device::Cpu => {
                let (ptr, shape, dtype) = &out;
                let dt = dtype_named(dtype)?;
                let (strides, bytes) = contiguous(shape, dt)?;
                let mut y = Tensor::from_cpu(host_buffer(dt, bytes / dt.size()), shape, &strides)
                    .map_err(to_py)?;
                v.run(&params, &x, &mut y).map_err(to_py)?;
                let src = y
                    .cpu_data()
                    .ok_or_else(|| PyValueError::new_err("the CPU variant left no host data"))?
                    .as_bytes();
                if src.len() != bytes {
                    return Err(PyValueError::new_err(format!(
                        "out holds {bytes} bytes, the result {}",
                        src.len()
                    )));
                }
                // SAFETY: `out` is a live, contiguous host tensor of `bytes` bytes.
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), *ptr as *mut u8, bytes) };
                keep_buffer(y);
                Ok(())
            }
        }
    });
    if let Some((mine, t)) = &bridge {
        order_after(mine, t)?;
    }
    xs.into_iter().for_each(keep_buffer);
    ran
}

/// Every registered variant: a dict each (op, name, tier, device, dtypes, about).
#[pyfunction]
fn list_variants(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for op in ops::OPS {
        for v in op.variants() {
            let d = PyDict::new(py);
            d.set_item("op", op.name())?;
            d.set_item("name", v.name)?;
            d.set_item("tier", v.tier.to_string())?;
            d.set_item("device", v.device.to_string())?;
            d.set_item(
                "dtypes",
                v.dtypes.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            )?;
            d.set_item("about", v.summary)?;
            out.push(d);
        }
    }
    Ok(out)
}

/// Run the `kernlab` command line in this process (`args` without the program name) and
/// return what it printed; an error raises RuntimeError with the message the CLI would print.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    let mut buf: Vec<u8> = Vec::new();
    let argv = std::iter::once("kernlab".to_string()).chain(args);
    let ran = py.detach(|| kernlab::cli::run(argv, &mut buf));
    let text = String::from_utf8_lossy(&buf).into_owned();
    match ran {
        Ok(()) => Ok(text),
        Err(e) => Err(PyRuntimeError::new_err(format!("{text}{e:#}"))),
    }
}

#[pymodule]
fn _kernlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(list_variants, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("build_id", kernlab::BUILD_ID)?;
    Ok(())
}
