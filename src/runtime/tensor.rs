//! Tensors: a dtype, a shape, strides (in elements) and storage on the CPU or a CUDA device.
//!
//! Kernlab's tensors are deliberately plain: they exist to feed kernels and to compare their
//! outputs with the f64 reference, not to be an autograd framework.

use crate::runtime::device::{CudaDevice, Device, DeviceKind};
use crate::runtime::dtype::{DType, Element};
use crate::runtime::error::{Error, Result};
use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use rayon::prelude::*;
use std::sync::Arc;

/// What [`Tensor::sample_blocks`] read: the chosen blocks' values, and over the other blocks
/// (when scanned) the NaN/inf count and the first of them (logical index, value).
#[derive(Debug, Clone)]
pub struct Sampled {
    pub values: Vec<f64>,
    pub nonfinite: usize,
    pub first_bad: Option<(usize, f64)>,
}

/// Host storage, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuData {
    F32(Vec<f32>),
    BF16(Vec<bf16>),
    F16(Vec<f16>),
}

impl CpuData {
    pub fn dtype(&self) -> DType {
        match self {
            CpuData::F32(_) => DType::F32,
            CpuData::BF16(_) => DType::BF16,
            CpuData::F16(_) => DType::F16,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            CpuData::F32(v) => v.len(),
            CpuData::BF16(v) => v.len(),
            CpuData::F16(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            CpuData::F32(v) => bytemuck::cast_slice(v),
            CpuData::BF16(v) => bytemuck::cast_slice(v),
            CpuData::F16(v) => bytemuck::cast_slice(v),
        }
    }
    /// Host data of `dtype` from its bytes (native order).
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> CpuData {
        match dtype {
            DType::F32 => CpuData::F32(bytemuck::pod_collect_to_vec(bytes)),
            DType::BF16 => CpuData::BF16(bytemuck::pod_collect_to_vec(bytes)),
            DType::F16 => CpuData::F16(bytemuck::pod_collect_to_vec(bytes)),
        }
    }
    /// The elements' bytes, to write (native order).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            CpuData::F32(v) => bytemuck::cast_slice_mut(v),
            CpuData::BF16(v) => bytemuck::cast_slice_mut(v),
            CpuData::F16(v) => bytemuck::cast_slice_mut(v),
        }
    }
    /// `n` zeros of `dtype`.
    pub fn zeros(dtype: DType, n: usize) -> CpuData {
        match dtype {
            DType::F32 => CpuData::F32(vec![0.0; n]),
            DType::BF16 => CpuData::BF16(vec![bf16::ZERO; n]),
            DType::F16 => CpuData::F16(vec![f16::ZERO; n]),
        }
    }
    /// Host storage holding `v` rounded to `dtype`.
    pub fn from_f64(dtype: DType, v: &[f64]) -> CpuData {
        fn conv<T: Element>(v: &[f64]) -> Vec<T> {
            v.par_iter().map(|&x| T::from_f64(x)).collect()
        }
        match dtype {
            DType::F32 => CpuData::F32(conv(v)),
            DType::BF16 => CpuData::BF16(conv(v)),
            DType::F16 => CpuData::F16(conv(v)),
        }
    }
    fn get_f64(&self, i: usize) -> f64 {
        match self {
            CpuData::F32(v) => v[i] as f64,
            CpuData::BF16(v) => v[i].to_f64(),
            CpuData::F16(v) => v[i].to_f64(),
        }
    }
}

/// Where the elements are.
pub enum Storage {
    Cpu(CpuData),
    Cuda {
        buf: DeviceBuf,
        dev: Arc<CudaDevice>,
    },
}

/// A tensor's device memory: kernlab's own (freed, stream-ordered, when dropped), or borrowed
/// from another library (a PyTorch tensor's storage, handed over by address), which is left to
/// its owner when dropped.
pub struct DeviceBuf {
    /// Present until dropped.
    slice: Option<CudaSlice<u8>>,
    borrowed: bool,
}

impl DeviceBuf {
    pub fn owned(slice: CudaSlice<u8>) -> DeviceBuf {
        DeviceBuf {
            slice: Some(slice),
            borrowed: false,
        }
    }
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        if let (true, Some(s)) = (self.borrowed, self.slice.take()) {
            // Not ours to free.
            s.leak();
        }
    }
}

impl std::ops::Deref for DeviceBuf {
    type Target = CudaSlice<u8>;
    fn deref(&self) -> &CudaSlice<u8> {
        self.slice
            .as_ref()
            .expect("a DeviceBuf holds its slice until dropped")
    }
}

impl std::ops::DerefMut for DeviceBuf {
    fn deref_mut(&mut self) -> &mut CudaSlice<u8> {
        self.slice
            .as_mut()
            .expect("a DeviceBuf holds its slice until dropped")
    }
}

/// How to fill a tensor with random numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// Normal(mean, std).
    Normal { mean: f64, std: f64 },
    /// Uniform on [lo, hi).
    Uniform { lo: f64, hi: f64 },
    /// Normal(0, std), with every `every`-th element (on average) multiplied by `scale`,
    /// as llm.c plants outliers in its softmax inputs.
    NormalWithOutliers { std: f64, every: u32, scale: f64 },
}

impl Init {
    /// An error unless the distribution can be sampled: finite parameters, std ≥ 0, lo < hi.
    pub fn check(&self) -> Result<()> {
        let ok = match *self {
            Init::Normal { mean, std } => mean.is_finite() && std.is_finite() && std >= 0.0,
            Init::Uniform { lo, hi } => lo < hi && (hi - lo).is_finite(),
            Init::NormalWithOutliers { std, scale, .. } => {
                std.is_finite() && std >= 0.0 && scale.is_finite()
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "random values from {self:?}: the parameters must be finite, std ≥ 0 and lo < hi"
            )))
        }
    }
}

pub struct Tensor {
    dtype: DType,
    shape: Vec<usize>,
    strides: Vec<usize>,
    storage: Storage,
}

/// Contiguous (row-major) strides for a shape.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        // Saturating: a shape whose elements overflow is refused where the layout is checked.
        s[i] = s[i + 1].saturating_mul(shape[i + 1]);
    }
    s
}

/// The strides and storage span (elements) of `shape` with rows `row_stride` elements apart
/// (contiguous without one), or an error when the stride is narrower than a row, the shape has
/// no rows, or the span overflows.
pub fn row_strided_layout(
    shape: &[usize],
    row_stride: Option<usize>,
) -> Result<(Vec<usize>, usize)> {
    let bad = |why: String| Error::BadShape {
        shape: shape_str(shape),
        why,
    };
    let mut strides = contiguous_strides(shape);
    if let Some(ld) = row_stride {
        let n = shape.len();
        if n < 2 {
            return Err(bad(format!(
                "a row stride ({ld}) needs rows: a shape of 2 or more dimensions"
            )));
        }
        if ld < shape[n - 1] {
            return Err(bad(format!(
                "a row stride of {ld} elements is less than the rows' width of {}",
                shape[n - 1]
            )));
        }
        strides[n - 2] = ld;
        for i in (0..n - 2).rev() {
            strides[i] = strides[i + 1]
                .checked_mul(shape[i + 1])
                .ok_or_else(|| bad(format!("a row stride of {ld}: too many elements")))?;
        }
    }
    let span = checked_storage_span(shape, &strides)
        .ok_or_else(|| bad("too many elements (with the row stride)".into()))?;
    Ok((strides, span))
}

/// How many storage elements a strided view needs (0 for an empty shape), or None when that
/// overflows.
pub fn checked_storage_span(shape: &[usize], strides: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape
        .iter()
        .zip(strides)
        .try_fold(1usize, |a, (&n, &s)| a.checked_add((n - 1).checked_mul(s)?))
}

/// `4096×1024`.
pub fn shape_str(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("×")
}

/// The host memory the system can still give (Linux: MemAvailable), or None when unknown.
pub fn host_memory_available() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// An error when `bytes` of host memory for `what` is more than nine tenths of what the system
/// has available (where that is known), instead of an allocation failure that aborts the
/// process.
pub fn check_host_memory(bytes: usize, what: &str) -> Result<()> {
    // A tenth of what is available stays free: the estimate is per point, and the process
    // holds other things (the ceilings' buffers, the allocator's slack).
    match host_memory_available() {
        Some(avail) if bytes > avail / 10 * 9 => Err(Error::OutOfHostMemory {
            requested: bytes,
            available: avail,
            what: what.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Parse `16384x16384`, `8192,4096` or `1024` into a shape.
pub fn parse_shape(s: &str) -> Result<Vec<usize>> {
    let bad = |why: &str| Error::BadShape {
        shape: s.to_string(),
        why: why.to_string(),
    };
    if s.contains(',') && s.contains(['x', 'X', '*', '×']) {
        return Err(bad(
            "one shape per --shape: repeat the flag for several (--shape 4096x1024 --shape 8192x1024)",
        ));
    }
    let parts: Vec<&str> = s.split(['x', 'X', ',', '*', '×']).map(str::trim).collect();
    if parts.is_empty() || parts.iter().any(|p| p.is_empty()) {
        return Err(bad("write dimensions separated by 'x', e.g. 4096x1024"));
    }
    let dims: Vec<usize> = parts
        .iter()
        .map(|p| {
            let p = p.replace('_', "");
            let whole = |t: &str| -> Result<usize> {
                match t.parse::<usize>() {
                    Ok(v) => Ok(v),
                    Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
                        Err(bad(&format!("'{t}' is too large")))
                    }
                    Err(_) => Err(bad(&format!("'{t}' is not a whole number"))),
                }
            };
            // A power of two may be written 2^N, as sweep sizes are.
            match p.split_once('^') {
                Some((b, e)) => {
                    let (b, e) = (whole(b)?, whole(e)?);
                    u32::try_from(e)
                        .ok()
                        .and_then(|e| b.checked_pow(e))
                        .ok_or_else(|| bad(&format!("'{p}' is too large")))
                }
                None => whole(&p),
            }
        })
        .collect::<Result<_>>()?;
    if dims.contains(&0) {
        return Err(bad(
            "every dimension must be at least 1 (an empty tensor has nothing to compute)",
        ));
    }
    dims.iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("too many elements"))?;
    Ok(dims)
}

impl Tensor {
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// Bytes of the logical elements (what a kernel must read or write once).
    pub fn nbytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }
    pub fn device_kind(&self) -> DeviceKind {
        match self.storage {
            Storage::Cpu(_) => DeviceKind::Cpu,
            Storage::Cuda { .. } => DeviceKind::Cuda,
        }
    }
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
    pub fn storage_mut(&mut self) -> &mut Storage {
        &mut self.storage
    }
    pub fn is_contiguous(&self) -> bool {
        self.strides == contiguous_strides(&self.shape)
    }
    /// The tensor seen as rows over its last dimension: (rows, cols, row stride).
    pub fn rows_cols(&self) -> (usize, usize, usize) {
        let cols = *self.shape.last().unwrap_or(&1);
        let rows = self.numel().checked_div(cols).unwrap_or(0);
        let ld = if self.shape.len() >= 2 {
            self.strides[self.shape.len() - 2]
        } else {
            cols
        };
        (rows, cols, ld)
    }
    /// True when every row is contiguous and rows are evenly spaced (row stride ≥ width):
    /// the layout the row kernels accept.
    pub fn is_row_strided(&self) -> bool {
        let n = self.shape.len();
        if n == 0 || self.strides[n - 1] != 1 {
            return false;
        }
        // The leading dimensions must be contiguous among themselves.
        let (_, cols, ld) = self.rows_cols();
        if ld < cols {
            return false;
        }
        let mut expect = Some(ld);
        for i in (0..n.saturating_sub(1)).rev() {
            if Some(self.strides[i]) != expect {
                return false;
            }
            expect = expect.and_then(|e| e.checked_mul(self.shape[i]));
        }
        true
    }

    fn span(&self) -> usize {
        // Checked when the tensor was made (check_layout), so it does not overflow here.
        checked_storage_span(&self.shape, &self.strides).unwrap_or(usize::MAX)
    }

    /// A layout's storage span, or an error when its strides do not match its dimensions or
    /// its element count or span overflows.
    fn check_layout(shape: &[usize], strides: &[usize]) -> Result<usize> {
        if shape.len() != strides.len() {
            return Err(Error::BadShape {
                shape: format!("{shape:?}"),
                why: format!("{} dimensions but {} strides", shape.len(), strides.len()),
            });
        }
        // The element count in f64 bytes (what to_f64_vec makes) must not overflow either.
        let numel = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        numel
            .and_then(|n| n.checked_mul(8))
            .and(checked_storage_span(shape, strides))
            .ok_or_else(|| Error::BadShape {
                shape: shape_str(shape),
                why: format!("too many elements: the layout (strides {strides:?}) overflows"),
            })
    }

    /// An uninitialised (CUDA) or zeroed (CPU) tensor with the given layout.
    pub fn empty_strided(
        shape: &[usize],
        strides: &[usize],
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        let span = Self::check_layout(shape, strides)?;
        let bytes = span
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::BadShape {
                shape: shape_str(shape),
                why: format!("too many bytes for {dtype}"),
            })?;
        let storage = match device {
            Device::Cpu => {
                check_host_memory(bytes, &format!("a {} {dtype} tensor", shape_str(shape)))?;
                Storage::Cpu(CpuData::zeros(dtype, span))
            }
            Device::Cuda(d) => Storage::Cuda {
                buf: DeviceBuf::owned(
                    d.alloc_bytes(bytes, &format!("a {shape:?} {dtype} tensor"))?,
                ),
                dev: d.clone(),
            },
        };
        Ok(Tensor {
            dtype,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            storage,
        })
    }

    pub fn empty(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Self::empty_strided(shape, &contiguous_strides(shape), dtype, device)
    }

    /// A tensor like `self` (shape, dtype, contiguous) on the same device.
    pub fn empty_like(&self) -> Result<Tensor> {
        let dev = self.device();
        Self::empty(&self.shape, self.dtype, &dev)
    }

    pub fn device(&self) -> Device {
        match &self.storage {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda { dev, .. } => Device::Cuda(dev.clone()),
        }
    }

    /// A CPU tensor from host data laid out with `strides`.
    pub fn from_cpu(data: CpuData, shape: &[usize], strides: &[usize]) -> Result<Tensor> {
        let span = Self::check_layout(shape, strides)?;
        if data.len() < span {
            return Err(Error::BadShape {
                shape: format!("{shape:?}"),
                why: format!(
                    "{} elements of storage, the layout needs {span}",
                    data.len()
                ),
            });
        }
        Ok(Tensor {
            dtype: data.dtype(),
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            storage: Storage::Cpu(data),
        })
    }

    /// A contiguous CPU tensor holding `values` rounded to `dtype`.
    pub fn from_f64(values: &[f64], shape: &[usize], dtype: DType) -> Result<Tensor> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if n != Some(values.len()) {
            let n = n.map_or("an element count past usize".into(), |n| {
                format!("{n} elements")
            });
            return Err(Error::BadShape {
                shape: format!("{shape:?}"),
                why: format!("{} values for {n}", values.len()),
            });
        }
        Self::from_cpu(
            CpuData::from_f64(dtype, values),
            shape,
            &contiguous_strides(shape),
        )
    }

    /// A random tensor: filled on the host (in parallel, reproducibly from `seed`), then
    /// copied to `device`. With `row_stride` > width, the gap between rows holds NaN so a
    /// kernel that reads it poisons its own output.
    pub fn random(
        shape: &[usize],
        dtype: DType,
        init: Init,
        seed: u64,
        row_stride: Option<usize>,
        device: &Device,
    ) -> Result<Tensor> {
        init.check()?;
        let (strides, span) = row_strided_layout(shape, row_stride)?;
        // The values are made in f64, then converted: both live on the host at once.
        check_host_memory(
            span.saturating_mul(8 + dtype.size()),
            &format!("a random {} {dtype} tensor", shape_str(shape)),
        )?;
        let cols = *shape.last().unwrap_or(&1);
        let ld = if shape.len() >= 2 {
            strides[shape.len() - 2]
        } else {
            cols
        };
        let values = random_values(span, init, seed, cols, ld);
        let t = Tensor::from_cpu(CpuData::from_f64(dtype, &values), shape, &strides)?;
        t.to_device(device)
    }

    /// Copy to a device (a copy even when it is already there).
    pub fn to_device(&self, device: &Device) -> Result<Tensor> {
        let host = self.host_data()?;
        let storage = match device {
            Device::Cpu => Storage::Cpu(host),
            Device::Cuda(d) => Storage::Cuda {
                buf: DeviceBuf::owned(d.htod(
                    host.as_bytes(),
                    &format!("a {:?} {} tensor", self.shape, self.dtype),
                )?),
                dev: d.clone(),
            },
        };
        Ok(Tensor {
            dtype: self.dtype,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            storage,
        })
    }

    pub fn to_cpu(&self) -> Result<Tensor> {
        self.to_device(&Device::Cpu)
    }

    /// The storage as host data (copied back from the device when needed).
    pub fn host_data(&self) -> Result<CpuData> {
        match &self.storage {
            Storage::Cpu(d) => Ok(d.clone()),
            Storage::Cuda { buf, dev } => {
                let bytes = dev.dtoh(buf, self.span() * self.dtype.size())?;
                Ok(CpuData::from_bytes(self.dtype, &bytes))
            }
        }
    }

    /// The storage offset of logical element `i` (row-major order).
    fn logical_offset(&self, mut i: usize) -> usize {
        let mut off = 0;
        for d in (0..self.shape.len()).rev() {
            off += (i % self.shape[d]) * self.strides[d];
            i /= self.shape[d];
        }
        off
    }

    /// The logical elements of blocks `take`, in the order given, as f64, where block b is the
    /// logical elements [b·width, (b + 1)·width) in row-major order (the last block may be
    /// shorter): rows, when `width` is the last dimension. The storage is read once and only
    /// those elements converted.
    pub fn blocks_f64(&self, width: usize, take: &[usize]) -> Result<Vec<f64>> {
        Ok(self.sample_blocks(width, take, false)?.values)
    }

    /// [`Tensor::blocks_f64`], and with `scan` the NaN/inf elements of every other block: how
    /// many, and the first of them (logical index, value). The storage is read once.
    pub fn sample_blocks(&self, width: usize, take: &[usize], scan: bool) -> Result<Sampled> {
        let n = self.numel();
        let width = width.max(1);
        let blocks = n.div_ceil(width);
        if let Some(&b) = take.iter().find(|&&b| b >= blocks) {
            return Err(Error::Invalid(format!(
                "block {b} of a tensor of {blocks} blocks of {width} asked for"
            )));
        }
        let data = self.host_data()?;
        let contiguous = self.is_contiguous();
        let at = |i: usize| {
            data.get_f64(if contiguous {
                i
            } else {
                self.logical_offset(i)
            })
        };
        let span = |b: usize| b * width..((b + 1) * width).min(n);
        let values = take
            .par_iter()
            .flat_map_iter(|&b| span(b).map(at))
            .collect();
        let (mut nonfinite, mut first_bad) = (0, None);
        if scan {
            let mut sorted = take.to_vec();
            sorted.sort_unstable();
            type Bad = (usize, Option<(usize, f64)>);
            let merge = |a: Bad, b: Bad| {
                let first = match (a.1, b.1) {
                    (Some(x), Some(y)) => Some(if x.0 <= y.0 { x } else { y }),
                    (x, y) => x.or(y),
                };
                (a.0 + b.0, first)
            };
            (nonfinite, first_bad) = (0..blocks)
                .into_par_iter()
                .filter(|b| sorted.binary_search(b).is_err())
                .map(|b| {
                    let mut bad = span(b).map(|i| (i, at(i))).filter(|(_, v)| !v.is_finite());
                    let first = bad.next();
                    (first.map_or(0, |_| 1 + bad.count()), first)
                })
                .reduce(|| (0, None), merge);
        }
        Ok(Sampled {
            values,
            nonfinite,
            first_bad,
        })
    }

    /// The logical elements, in row-major order, as f64.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        let data = self.host_data()?;
        if self.is_contiguous() {
            return Ok((0..self.numel())
                .into_par_iter()
                .map(|i| data.get_f64(i))
                .collect());
        }
        Ok((0..self.numel())
            .into_par_iter()
            .map(|i| data.get_f64(self.logical_offset(i)))
            .collect())
    }

    /// Overwrite every storage element with NaN, so an element a kernel fails to write shows.
    pub fn poison_nan(&mut self) -> Result<()> {
        let dtype = self.dtype;
        let span = self.span();
        match &mut self.storage {
            Storage::Cpu(CpuData::F32(v)) => v.par_iter_mut().for_each(|x| *x = f32::NAN),
            Storage::Cpu(CpuData::BF16(v)) => v.par_iter_mut().for_each(|x| *x = bf16::NAN),
            Storage::Cpu(CpuData::F16(v)) => v.par_iter_mut().for_each(|x| *x = f16::NAN),
            Storage::Cuda { buf, dev } => {
                let bits = match dtype {
                    DType::F32 => f32::NAN.to_bits(),
                    DType::BF16 => bf16::NAN.to_bits() as u32,
                    DType::F16 => f16::NAN.to_bits() as u32,
                };
                dev.memset_pattern(buf, dtype.size(), bits, span)?;
                dev.sync()?;
            }
        }
        Ok(())
    }

    /// A CPU tensor's storage, taken out of it (None on a GPU).
    pub fn into_cpu_data(self) -> Option<CpuData> {
        match self.storage {
            Storage::Cpu(d) => Some(d),
            Storage::Cuda { .. } => None,
        }
    }

    pub fn cpu_data(&self) -> Option<&CpuData> {
        match &self.storage {
            Storage::Cpu(d) => Some(d),
            _ => None,
        }
    }
    pub fn cpu_data_mut(&mut self) -> Option<&mut CpuData> {
        match &mut self.storage {
            Storage::Cpu(d) => Some(d),
            _ => None,
        }
    }
    pub fn cuda_buf(&self) -> Option<&CudaSlice<u8>> {
        match &self.storage {
            Storage::Cuda { buf, .. } => Some(buf),
            _ => None,
        }
    }
    pub fn cuda_buf_mut(&mut self) -> Option<&mut CudaSlice<u8>> {
        match &mut self.storage {
            Storage::Cuda { buf, .. } => Some(buf),
            _ => None,
        }
    }

    /// A tensor over another library's device memory, without a copy: `bytes` at `ptr` on
    /// `dev`, read as `shape` and `strides` (elements) of `dtype`. kernlab's kernels read and
    /// write it in place; dropping the tensor leaves the memory to its owner.
    ///
    /// # Safety
    /// `ptr` must be a live allocation of at least `bytes` bytes in `dev`'s context, and it must
    /// stay allocated, and not be used by its owner out of order with `dev`'s stream, while
    /// the tensor (or work enqueued on it) lives.
    pub unsafe fn borrow_cuda(
        dev: &Arc<CudaDevice>,
        ptr: u64,
        bytes: usize,
        dtype: DType,
        shape: &[usize],
        strides: &[usize],
    ) -> Result<Tensor> {
        let span = Self::check_layout(shape, strides)?;
        if span
            .checked_mul(dtype.size())
            .is_none_or(|need| need > bytes)
        {
            return Err(Error::BadShape {
                shape: shape_str(shape),
                why: format!("its strides {strides:?} reach past the {bytes} bytes handed over"),
            });
        }
        if ptr == 0 && bytes > 0 {
            return Err(Error::Invalid("a null device address".into()));
        }
        let slice = dev.stream.upgrade_device_ptr::<u8>(ptr, bytes);
        Ok(Tensor {
            dtype,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            storage: Storage::Cuda {
                buf: DeviceBuf {
                    slice: Some(slice),
                    borrowed: true,
                },
                dev: dev.clone(),
            },
        })
    }
}

/// `n` random values, reproducible from `seed` whatever the thread count. Positions past
/// `cols` within each `ld`-long row (the stride gap) get NaN.
pub fn random_values(n: usize, init: Init, seed: u64, cols: usize, ld: usize) -> Vec<f64> {
    const CHUNK: usize = 1 << 16;
    let mut out = vec![0.0f64; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng =
                SmallRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            for (j, v) in chunk.iter_mut().enumerate() {
                let i = c * CHUNK + j;
                if ld > cols && i % ld >= cols {
                    *v = f64::NAN;
                    continue;
                }
                *v = match init {
                    Init::Normal { mean, std } => {
                        let z: f64 = rng.sample(rand_distr::StandardNormal);
                        mean + std * z
                    }
                    Init::Uniform { lo, hi } => rng.random_range(lo..hi),
                    Init::NormalWithOutliers { std, every, scale } => {
                        let z: f64 = rng.sample(rand_distr::StandardNormal);
                        if every > 0 && rng.random_range(0..every) == 0 {
                            z * std * scale
                        } else {
                            z * std
                        }
                    }
                };
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_shapes_and_rejects_bad_ones() {
        assert_eq!(parse_shape("16384x16384").unwrap(), vec![16384, 16384]);
        assert_eq!(parse_shape("8192,4096").unwrap(), vec![8192, 4096]);
        assert_eq!(parse_shape("7").unwrap(), vec![7]);
        assert_eq!(parse_shape("2x3x4").unwrap(), vec![2, 3, 4]);
        assert_eq!(parse_shape("2^10x4").unwrap(), vec![1024, 4]);
        let msg = |s: &str| parse_shape(s).unwrap_err().to_string();
        assert!(msg("99999999999999999999x1").contains("is too large"));
        assert!(msg("2^64x1").contains("is too large"));
        assert!(msg("12xq").contains("'q' is not a whole number"));
        for bad in [
            "2^x4",
            "^3",
            "",
            "x4",
            "4x",
            "4xa",
            "0x4",
            "-1x3",
            "99999999999x99999999999",
            "4x4,8x8", // two shapes in one flag, not a 4-D tensor
        ] {
            assert!(parse_shape(bad).is_err(), "{bad} must be rejected");
        }
    }

    #[test]
    fn blocks_are_read_through_the_strides_and_scanned_for_nan_outside_a_sample() {
        // 2 × 3 rows of 4, rows 6 apart and batches 20 apart: [b, r, c] = 100·b + 10·r + c.
        let (shape, strides) = ([2usize, 3, 4], [20usize, 6, 1]);
        let mut vals = vec![f32::NAN; 40];
        for b in 0..2 {
            for r in 0..3 {
                for c in 0..4 {
                    vals[b * 20 + r * 6 + c] = (100 * b + 10 * r + c) as f32;
                }
            }
        }
        // The padding between rows stays NaN: it is not an element.
        vals[20 + 2 * 6 + 3] = f32::INFINITY; // [1, 2, 3]: row 5, logical element 23
        vals[20 + 6] = f32::NAN; // [1, 1, 0]: row 4, logical element 16
        let t = Tensor {
            dtype: DType::F32,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            storage: Storage::Cpu(CpuData::F32(vals)),
        };
        assert_eq!(
            t.blocks_f64(4, &[3, 0]).unwrap(),
            [100.0, 101.0, 102.0, 103.0, 0.0, 1.0, 2.0, 3.0]
        );
        // Blocks need not be rows: 5 elements, the last block 4.
        assert_eq!(
            t.blocks_f64(5, &[4]).unwrap(),
            [120.0, 121.0, 122.0, f64::INFINITY]
        );
        assert!(t.blocks_f64(4, &[6]).is_err());
        let s = t.sample_blocks(4, &[], true).unwrap();
        assert_eq!((s.nonfinite, s.first_bad.map(|b| b.0)), (2, Some(16)));
        let s = t.sample_blocks(4, &[4], true).unwrap();
        assert_eq!(s.nonfinite, 1);
        assert_eq!(s.first_bad.map(|b| b.0), Some(23));
        assert!(s.first_bad.unwrap().1.is_infinite());
        assert_eq!(
            t.sample_blocks(4, &[5, 4, 9], true)
                .map(|s| s.nonfinite)
                .ok(),
            None
        );
        assert_eq!(t.sample_blocks(4, &[5, 4], true).unwrap().nonfinite, 0);
        // Without the scan nothing is counted.
        assert_eq!(t.sample_blocks(4, &[0], false).unwrap().nonfinite, 0);
    }

    #[test]
    fn storage_spans_that_overflow_are_none_not_wrapped() {
        assert_eq!(checked_storage_span(&[3, 4], &[6, 1]), Some(16));
        assert_eq!(checked_storage_span(&[3, 0], &[6, 1]), Some(0));
        assert_eq!(checked_storage_span(&[9, 16], &[1 << 61, 1]), None);
        assert_eq!(checked_storage_span(&[3, 2], &[1 << 63, 1]), None);
        assert_eq!(
            checked_storage_span(&[2, 2], &[1 << 62, 1]),
            Some((1 << 62) + 2)
        );
    }

    #[test]
    fn layouts_that_overflow_are_refused_not_wrapped() {
        let e = Tensor::empty_strided(&[9, 16], &[1 << 61, 1], DType::F32, &Device::Cpu);
        assert!(matches!(e, Err(Error::BadShape { .. })), "{:?}", e.err());
        let e = Tensor::empty(&[2, 1 << 32, 1 << 32], DType::F32, &Device::Cpu);
        assert!(matches!(e, Err(Error::BadShape { .. })), "{:?}", e.err());
        let e = Tensor::from_cpu(CpuData::zeros(DType::F32, 4), &[3, 2], &[1 << 63, 1]);
        assert!(matches!(e, Err(Error::BadShape { .. })), "{:?}", e.err());
        // Bytes past usize: the span fits, span × 4 does not.
        let e = Tensor::empty(&[1 << 62, 1], DType::F32, &Device::Cpu);
        assert!(matches!(e, Err(Error::BadShape { .. })), "{:?}", e.err());
        let t = Tensor::empty_strided(&[3, 4], &[6, 1], DType::F32, &Device::Cpu).unwrap();
        assert_eq!(t.span(), 16);
        // A view whose element count fits but whose f64 values would not (a zero stride).
        let e = Tensor::from_cpu(CpuData::F32(vec![1.0]), &[1 << 62], &[0]);
        assert!(matches!(e, Err(Error::BadShape { .. })), "{:?}", e.err());
        // More than the host holds (64 TiB): an error, not an aborted allocation, where the
        // host says what it has (Linux's /proc/meminfo).
        if host_memory_available().is_some() {
            let e = Tensor::empty(&[1 << 44], DType::F32, &Device::Cpu)
                .err()
                .unwrap();
            assert!(e.to_string().contains("of host memory"), "{e}");
        }
        // Element counts past usize in from_f64.
        let e = Tensor::from_f64(&[], &[1 << 63, 2], DType::F32)
            .err()
            .unwrap();
        assert!(e.to_string().contains("an element count past usize"), "{e}");
        // A zero-element layout with a huge row stride: rows evenly spaced, so row-strided,
        // and the check walks past usize without overflowing (it panicked before).
        let t = Tensor::from_cpu(CpuData::F32(vec![]), &[3, 0], &[usize::MAX, 1]).unwrap();
        assert!(t.is_row_strided());
        let t = Tensor::from_cpu(CpuData::F32(vec![]), &[2, 3, 0], &[usize::MAX, 1, 1]).unwrap();
        assert!(!t.is_row_strided());
    }

    #[test]
    fn random_refuses_distributions_it_cannot_sample() {
        let r = |init| Tensor::random(&[4], DType::F32, init, 1, None, &Device::Cpu);
        for init in [
            Init::Uniform { lo: 1.0, hi: 0.0 },
            Init::Uniform { lo: 1.0, hi: 1.0 },
            Init::Uniform {
                lo: f64::NAN,
                hi: 1.0,
            },
            Init::Uniform {
                lo: 0.0,
                hi: f64::INFINITY,
            },
            Init::Uniform {
                lo: -1e308,
                hi: 1e308,
            },
            Init::Normal {
                mean: 0.0,
                std: -1.0,
            },
            Init::Normal {
                mean: f64::NAN,
                std: 1.0,
            },
            Init::NormalWithOutliers {
                std: 1.0,
                every: 5,
                scale: f64::INFINITY,
            },
        ] {
            let e = r(init)
                .err()
                .unwrap_or_else(|| panic!("{init:?} must be refused"));
            assert!(e.to_string().contains("must be finite"), "{e}");
        }
        assert!(r(Init::Uniform { lo: -1.0, hi: 1.0 }).is_ok());
        assert!(r(Init::Normal {
            mean: 0.0,
            std: 0.0
        })
        .is_ok());
    }

    #[test]
    fn random_tensors_are_reproducible_and_never_zero() {
        let a = random_values(
            200_000,
            Init::Normal {
                mean: 0.0,
                std: 1.0,
            },
            7,
            10,
            10,
        );
        let b = random_values(
            200_000,
            Init::Normal {
                mean: 0.0,
                std: 1.0,
            },
            7,
            10,
            10,
        );
        let c = random_values(
            200_000,
            Init::Normal {
                mean: 0.0,
                std: 1.0,
            },
            8,
            10,
            10,
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().filter(|&&x| x == 0.0).count() < 10);
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / a.len() as f64;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "mean {mean} var {var}"
        );
    }

    #[test]
    fn strided_views_read_logical_elements_and_gaps_are_nan() {
        let t = Tensor::random(
            &[3, 5],
            DType::F32,
            Init::Uniform { lo: 1.0, hi: 2.0 },
            1,
            Some(8),
            &Device::Cpu,
        )
        .unwrap();
        assert_eq!(t.strides(), &[8, 1]);
        assert!(t.is_row_strided() && !t.is_contiguous());
        let v = t.to_f64_vec().unwrap();
        assert_eq!(v.len(), 15);
        assert!(v.iter().all(|x| (1.0..2.0).contains(x)));
        let raw = t.host_data().unwrap();
        assert_eq!(raw.len(), 2 * 8 + 5);
        assert!(raw.get_f64(5).is_nan() && raw.get_f64(7).is_nan());
    }

    #[test]
    fn poison_fills_with_nan() {
        for dt in DType::ALL {
            let mut t = Tensor::from_f64(&[1.0, 2.0, 3.0], &[3], dt).unwrap();
            t.poison_nan().unwrap();
            assert!(t.to_f64_vec().unwrap().iter().all(|x| x.is_nan()));
        }
    }
}
