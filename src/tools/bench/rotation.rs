//! `--rotate`: copies of a point's inputs (and as many outputs) that timed calls cycle
//! through, so that no call finds its input still in the cache.

use super::harness::{self, Rotate};
use crate::runtime::device::Device;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;

/// The copies of `host` (a call's inputs) on `device` that timed calls cycle through, as many
/// as `rotate` asks for a call that also writes an output of `y_shape` and `dtype` (with
/// [`Rotate::Auto`], against the device's L2, or the CPU's last-level cache). At least one.
pub fn rotated_inputs(
    rotate: Rotate,
    host: &[Tensor],
    y_shape: &[usize],
    dtype: DType,
    device: &Device,
) -> Result<Vec<Vec<Tensor>>> {
    let cache_bytes = match device {
        Device::Cuda(d) => d.props.l2_bytes,
        Device::Cpu => harness::cpu_llc_bytes(),
    };
    // What one call touches at least: its inputs and its output.
    let call_bytes = host.iter().map(Tensor::nbytes).sum::<usize>()
        + y_shape.iter().product::<usize>() * dtype.size();
    let copies = rotate.copies(call_bytes, cache_bytes);
    // Refuse a count that cannot fit before making any copy (each copy has an output too).
    if copies > 1 {
        let need = copies.saturating_mul(call_bytes);
        let what = format!(
            "--rotate {} ({copies} copies of a call's inputs and output, {:.1} MiB each)",
            match rotate {
                Rotate::Auto => "auto".to_string(),
                Rotate::Copies(n) => n.to_string(),
            },
            call_bytes as f64 / (1u64 << 20) as f64
        );
        match device {
            Device::Cpu => crate::runtime::tensor::check_host_memory(need, &what)?,
            Device::Cuda(d) => {
                if let Ok((free, total)) = d.ctx.mem_get_info() {
                    if need > free {
                        return Err(Error::OutOfDeviceMemory {
                            requested: need,
                            free,
                            total,
                            what,
                        });
                    }
                }
            }
        }
    }
    (0..copies)
        .map(|_| host.iter().map(|t| t.to_device(device)).collect())
        .collect()
}

/// The copies of one point's inputs (from [`rotated_inputs`]) and as many outputs, which
/// timed calls cycle through call by call (`--rotate`); used by `bench` and `autotune`.
pub struct Rotation<'a> {
    inputs: Vec<Vec<&'a Tensor>>,
    outputs: Vec<Tensor>,
    next: usize,
}

impl<'a> Rotation<'a> {
    /// `first` is the output of the first copy (the one validation wrote); the others are
    /// made like it (`y_shape`, `dtype`, on `device`).
    pub fn new(
        inputs: &'a [Vec<Tensor>],
        first: Tensor,
        y_shape: &[usize],
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let mut outputs = vec![first];
        for _ in 1..inputs.len() {
            outputs.push(Tensor::empty(y_shape, dtype, device)?);
        }
        Ok(Rotation {
            inputs: inputs.iter().map(|c| c.iter().collect()).collect(),
            outputs,
            next: 0,
        })
    }
    /// How many copies.
    fn len(&self) -> usize {
        self.outputs.len()
    }
    /// One call on every copy where there are several, before timing: no timed call is then
    /// the first to touch its buffers (on the CPU a fresh output's pages fault in on first
    /// write). The first error stops it.
    pub fn warm(&mut self, mut f: impl FnMut(&[&Tensor], &mut Tensor) -> Result<()>) -> Result<()> {
        if self.len() > 1 {
            for (x, y) in self.inputs.iter().zip(self.outputs.iter_mut()) {
                f(x, y)?;
            }
        }
        Ok(())
    }
    /// The next call: on copy 0, 1, …, len − 1, then 0 again.
    pub fn call(
        &mut self,
        f: &mut impl FnMut(&[&Tensor], &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        let i = self.next % self.len();
        self.next += 1;
        f(&self.inputs[i], &mut self.outputs[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each copy holds its index; a call records the index of the input it got and writes it
    /// into its output.
    #[test]
    fn rotation_warms_every_copy_then_cycles_through_them_in_turn() {
        let dev = Device::Cpu;
        let copies: Vec<Vec<Tensor>> = (0..3)
            .map(|i| vec![Tensor::from_f64(&[i as f64; 4], &[2, 2], DType::F32).unwrap()])
            .collect();
        // The first output is the one given (validation's), the others new.
        let first = Tensor::from_f64(&[7.0; 4], &[2, 2], DType::F32).unwrap();
        let mut rot = Rotation::new(&copies, first, &[2, 2], DType::F32, &dev).unwrap();
        assert_eq!(rot.len(), 3);
        assert_eq!(rot.outputs[0].to_f64_vec().unwrap(), [7.0; 4]);
        assert!(rot.outputs.iter().all(|y| y.shape() == [2, 2]));
        let mut seen = Vec::new();
        let mut run = |x: &[&Tensor], y: &mut Tensor| {
            let v = x[0].to_f64_vec()?;
            seen.push(v[0] as usize);
            *y = Tensor::from_f64(&v, &[2, 2], DType::F32)?;
            Ok(())
        };
        rot.warm(&mut run).unwrap();
        for _ in 0..7 {
            rot.call(&mut run).unwrap();
        }
        assert_eq!(seen, [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]);
        // Each output was written from its own copy.
        for (i, y) in rot.outputs.iter().enumerate() {
            assert_eq!(y.to_f64_vec().unwrap(), [i as f64; 4]);
        }
        // One copy: no warm-up call, every call on it.
        let one = &copies[..1];
        let first = Tensor::empty(&[2, 2], DType::F32, &dev).unwrap();
        let mut rot = Rotation::new(one, first, &[2, 2], DType::F32, &dev).unwrap();
        let mut n = 0;
        let mut count = |_: &[&Tensor], _: &mut Tensor| {
            n += 1;
            Ok(())
        };
        rot.warm(&mut count).unwrap();
        rot.call(&mut count).unwrap();
        rot.call(&mut count).unwrap();
        assert_eq!(n, 2);
        // An error in the warm-up stops it and is returned.
        let first = Tensor::empty(&[2, 2], DType::F32, &dev).unwrap();
        let mut rot = Rotation::new(&copies, first, &[2, 2], DType::F32, &dev).unwrap();
        let mut calls = 0;
        let e = rot
            .warm(&mut |_: &[&Tensor], _: &mut Tensor| {
                calls += 1;
                Err(Error::Invalid("boom".into()))
            })
            .unwrap_err();
        assert!(e.to_string().contains("boom") && calls == 1, "{e}");
    }
}
