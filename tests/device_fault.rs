//! A kernel that faults on the device gives a clear error naming its variant, neither a hang
//! nor a crash. Its own test executable: the fault leaves this process's CUDA context lost, so
//! no other test may share it.

#[allow(dead_code)] // the helpers this executable does not use
mod common;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use kernlab::check;
use kernlab::ops::{gelu, Variant};
use kernlab::runtime::kernels::KernelSource;
use kernlab::runtime::launch::cuda_io;
use kernlab::{DType, DeviceKind, Error, Params, Result, Tensor, Tier};

/// A debug kernel that writes 256 GiB past its output on purpose.
static OOB: KernelSource = KernelSource {
    file: "debug_oob.cu",
    src: r#"extern "C" __global__ void write_far(float* y) { y[1ll << 36] = 1.0f; }"#,
};

fn run_oob(_p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let io = cuda_io(x[0], y)?;
    let f = io.dev.function(&OOB, "write_far")?;
    let mut b = io.dev.stream.launch_builder(&f);
    b.arg(&mut *io.y);
    // SAFETY: it is not: the kernel writes out of bounds, which is what this test is about.
    unsafe { b.launch(LaunchConfig::for_num_elems(1)) }
        .map_err(kernlab::runtime::device::cuda::launch_err("write_far"))?;
    Ok(())
}

static FAULTY: Variant = Variant::new(
    gelu::OP,
    "debug_oob",
    Tier::Cuda,
    DeviceKind::Cuda,
    "writes far past its output on purpose",
    run_oob,
);

#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn a_kernel_that_faults_is_named_and_nothing_hangs() {
    let Some(dev) = common::cuda() else { return };
    let shape = [4usize, 256];
    let p = gelu::OP.default_params();
    let host = check::make_inputs(gelu::OP, &shape, DType::F32, 3, None, &p).unwrap();
    let reference = check::make_reference(gelu::OP, &shape, &host, &p, 3).unwrap();
    let x = host[0].to_device(&dev).unwrap();
    let err = match check::validate(&FAULTY, &p, &[&x], &reference) {
        Ok((c, _)) => panic!("the faulting kernel was not reported: {}", c.describe()),
        Err(e) => e,
    };
    assert!(
        err.is_device_fault(),
        "not reported as a device fault: {err}"
    );
    let Error::DeviceFault {
        during, err: what, ..
    } = &err
    else {
        unreachable!()
    };
    assert_eq!(during, "gelu/debug_oob", "{err}");
    assert!(what.contains("ILLEGAL_ADDRESS"), "{err}");
    let text = err.to_string();
    assert!(text.contains("context is lost"), "{text}");
    // Every later call meets the same sticky fault (which is why bench stops at the first one,
    // rather than blame the next variant).
    let v1 = kernlab::ops::find(gelu::OP, "v1_naive", DeviceKind::Cuda).unwrap();
    let later = check::validate(v1, &p, &[&x], &reference);
    assert!(
        matches!(&later, Err(e) if e.is_device_fault()),
        "{:?}",
        later.map(|(c, _)| c.describe())
    );
}
