//! The NCCL backend: one rank a GPU, one thread a rank, all in one process (the group is made
//! by `ncclCommInitAll`), so a user needs no launcher. Each collective is enqueued on the
//! rank's kernlab stream, after the work already there, as NCCL's calls are.
//!
//! libnccl is loaded at run time, from `$KERNLAB_NCCL` (the library file) when it is set, else
//! as `libnccl.so.2`, then `libnccl.so`, through the loader's search (LD_LIBRARY_PATH, the
//! ldconfig cache). kernlab binds the dozen calls it makes itself rather than through cudarc's
//! `nccl` module, whose loader looks only for names that miss NCCL's soname `libnccl.so.2` (the
//! one name NVIDIA's `nvidia-nccl` wheels ship), and whose result enums a newer NCCL's codes
//! would not fit.
//!
//! NVLink SHARP multicast stays off: `NCCL_NVLS_ENABLE=0` is set before NCCL first reads its
//! environment, and kernlab never creates a multicast object.

use super::{Args, Communicator};
use crate::runtime::device::cuda::CudaDevice;
use crate::runtime::device::Device;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::{Storage, Tensor};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, OnceLock};

const BACKEND: &str = "nccl";

type Comm = *mut c_void;
type Stream = *mut c_void;
type Reduce =
    unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int;

/// The NCCL calls kernlab makes, bound from the loaded library.
struct Lib {
    _lib: libloading::Library,
    path: String,
    version: c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    last_error: unsafe extern "C" fn(Comm) -> *const c_char,
    init_all: unsafe extern "C" fn(*mut Comm, c_int, *const c_int) -> c_int,
    destroy: unsafe extern "C" fn(Comm) -> c_int,
    abort: unsafe extern "C" fn(Comm) -> c_int,
    all_reduce: Reduce,
    reduce_scatter: Reduce,
    all_gather:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, Stream) -> c_int,
    broadcast: Reduce,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    group_start: unsafe extern "C" fn() -> c_int,
    group_end: unsafe extern "C" fn() -> c_int,
}

/// `ncclSum`.
const SUM: c_int = 0;

/// NCCL's code for a dtype (`ncclFloat16`, `ncclFloat32`, `ncclBfloat16`).
fn nccl_type(dt: DType) -> c_int {
    match dt {
        DType::F16 => 6,
        DType::F32 => 7,
        DType::BF16 => 9,
    }
}

fn load() -> std::result::Result<Lib, String> {
    let names: Vec<String> = match std::env::var("KERNLAB_NCCL") {
        Ok(p) if !p.is_empty() => vec![p],
        _ => vec!["libnccl.so.2".into(), "libnccl.so".into()],
    };
    let mut tried = vec![];
    for name in &names {
        // SAFETY: loading NCCL runs its initialisers, which set nothing kernlab relies on.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return bind(lib, name),
            Err(e) => tried.push(format!("{name}: {e}")),
        }
    }
    Err(format!(
        "not found ({}); install NCCL (`pip install nvidia-nccl-cu13` puts libnccl.so.2 in \
         site-packages/nvidia/nccl/lib) and add its folder to LD_LIBRARY_PATH, or set \
         KERNLAB_NCCL to the library file",
        tried.join("; ")
    ))
}

fn bind(lib: libloading::Library, name: &str) -> std::result::Result<Lib, String> {
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol's type is NCCL's C prototype for it (nccl.h, 2.18+).
            *unsafe { lib.get($name) }.map_err(|e| {
                format!(
                    "{name} has no {}: {e}",
                    String::from_utf8_lossy(&$name[..$name.len() - 1])
                )
            })?
        };
    }
    let get_version: unsafe extern "C" fn(*mut c_int) -> c_int = sym!(b"ncclGetVersion\0");
    let mut version = 0;
    // SAFETY: ncclGetVersion writes one int.
    if unsafe { get_version(&mut version) } != 0 {
        return Err(format!("{name}: ncclGetVersion failed"));
    }
    if version < 21800 {
        return Err(format!(
            "{name} is NCCL {}, older than the 2.18 kernlab needs",
            version_string(version)
        ));
    }
    let l = Lib {
        path: name.to_string(),
        version,
        error_string: sym!(b"ncclGetErrorString\0"),
        last_error: sym!(b"ncclGetLastError\0"),
        init_all: sym!(b"ncclCommInitAll\0"),
        destroy: sym!(b"ncclCommDestroy\0"),
        abort: sym!(b"ncclCommAbort\0"),
        all_reduce: sym!(b"ncclAllReduce\0"),
        reduce_scatter: sym!(b"ncclReduceScatter\0"),
        all_gather: sym!(b"ncclAllGather\0"),
        broadcast: sym!(b"ncclBroadcast\0"),
        send: sym!(b"ncclSend\0"),
        recv: sym!(b"ncclRecv\0"),
        group_start: sym!(b"ncclGroupStart\0"),
        group_end: sym!(b"ncclGroupEnd\0"),
        _lib: lib,
    };
    Ok(l)
}

fn version_string(v: c_int) -> String {
    format!("{}.{}.{}", v / 10000, v % 10000 / 100, v % 100)
}

fn lib() -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load)
        .as_ref()
        .map_err(|why| Error::MissingLibrary {
            lib: "NCCL (libnccl.so.2)",
            why: why.clone(),
        })
}

/// NCCL's version and where it was loaded from, or why it cannot be.
pub fn describe() -> Result<String> {
    let l = lib()?;
    Ok(format!("NCCL {} ({})", version_string(l.version), l.path))
}

/// One rank: a GPU of the group, driven from one thread.
pub struct NcclComm {
    rank: usize,
    world: usize,
    comm: Comm,
    dev: Arc<CudaDevice>,
    /// A call failed: the communicator is aborted rather than destroyed when dropped.
    failed: bool,
}

// SAFETY: an NCCL communicator may be used from any one thread at a time; `NcclComm` is moved
// to its rank's thread and used there only (`&mut self` on every call).
unsafe impl Send for NcclComm {}

impl Drop for NcclComm {
    fn drop(&mut self) {
        if let Ok(l) = lib() {
            let _ = self.dev.ctx.bind_to_thread();
            // SAFETY: `comm` came from ncclCommInitAll and is released once, here.
            unsafe {
                if self.failed {
                    (l.abort)(self.comm);
                } else {
                    (l.destroy)(self.comm);
                }
            }
        }
    }
}

/// Keep NVLink SHARP multicast off in this process: NCCL reads `NCCL_NVLS_ENABLE` when it
/// first initialises.
pub fn keep_nvls_off() {
    if std::env::var("NCCL_NVLS_ENABLE").as_deref() != Ok("0") {
        std::env::set_var("NCCL_NVLS_ENABLE", "0");
    }
}

/// One communicator per device, rank i on `devices[i]`; hand each to its own thread.
pub fn group(devices: &[Arc<CudaDevice>]) -> Result<Vec<NcclComm>> {
    let l = lib()?;
    if devices.is_empty() {
        return Err(Error::Invalid("a group needs at least one GPU".into()));
    }
    let ordinals: Vec<c_int> = devices.iter().map(|d| d.ordinal as c_int).collect();
    if let Some(i) = (1..ordinals.len()).find(|&i| ordinals[..i].contains(&ordinals[i])) {
        return Err(Error::Invalid(format!(
            "GPU {} is named twice: NCCL runs one rank a GPU",
            ordinals[i]
        )));
    }
    keep_nvls_off();
    let mut comms = vec![std::ptr::null_mut(); devices.len()];
    // SAFETY: `comms` has room for one communicator per listed device.
    let r = unsafe {
        (l.init_all)(
            comms.as_mut_ptr(),
            ordinals.len() as c_int,
            ordinals.as_ptr(),
        )
    };
    if r != 0 {
        return Err(Error::Comm {
            backend: BACKEND,
            rank: 0,
            what: format!("ncclCommInitAll over GPUs {ordinals:?}"),
            why: error_text(l, r, std::ptr::null_mut()),
        });
    }
    let world = devices.len();
    Ok(comms
        .into_iter()
        .zip(devices)
        .enumerate()
        .map(|(rank, (comm, dev))| NcclComm {
            rank,
            world,
            comm,
            dev: dev.clone(),
            failed: false,
        })
        .collect())
}

/// Open GPUs 0..`gpus`, make their group, run `f` on one thread per rank, and return each
/// rank's result in rank order, or the first rank's error (in rank order).
pub fn run<T: Send>(gpus: usize, f: impl Fn(&mut NcclComm) -> Result<T> + Sync) -> Result<Vec<T>> {
    let devices = (0..gpus)
        .map(CudaDevice::open)
        .collect::<Result<Vec<_>>>()?;
    super::on_threads(group(&devices)?, |c| {
        c.dev
            .ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let out = f(c);
        // Finish this rank's work before its communicator goes.
        out.and_then(|v| c.dev.sync().map(|()| v))
    })
}

fn error_text(l: &Lib, code: c_int, comm: Comm) -> String {
    // SAFETY: NCCL returns static strings, or its last error's text for `comm`.
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let what = text(unsafe { (l.error_string)(code) });
    let last = text(unsafe { (l.last_error)(comm) });
    if last.is_empty() {
        format!("NCCL error {code}: {what}")
    } else {
        format!("NCCL error {code}: {what} ({last})")
    }
}

impl NcclComm {
    fn args<'a>(&self, what: &'a str) -> Args<'a> {
        Args {
            backend: BACKEND,
            rank: self.rank,
            world: self.world,
            what,
        }
    }

    /// The tensor lives on this rank's GPU, densely.
    fn on_mine(&self, a: &Args, t: &Tensor, name: &str) -> Result<()> {
        a.dense(t, name)?;
        match t.storage() {
            Storage::Cuda { dev, .. } if dev.ordinal == self.dev.ordinal => Ok(()),
            Storage::Cuda { dev, .. } => Err(a.err(format!(
                "{name} is on GPU {}, but this rank runs on GPU {}",
                dev.ordinal, self.dev.ordinal
            ))),
            Storage::Cpu(_) => Err(a.err(format!(
                "{name} is on the CPU; the nccl backend takes tensors on the rank's GPU"
            ))),
        }
    }

    /// Run one NCCL call with this rank's context current, on its stream.
    fn call(&mut self, a: &Args, f: impl FnOnce(&Lib, Stream) -> c_int) -> Result<()> {
        let l = lib()?;
        self.dev
            .ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let r = f(l, self.dev.stream.cu_stream() as Stream);
        if r != 0 {
            self.failed = true;
            return Err(a.err(error_text(l, r, self.comm)));
        }
        Ok(())
    }
}

/// A tensor's device address (the slice's record of the use is dropped at once: the stream
/// that uses it is the one it was made on).
fn ptr(t: &Tensor, dev: &CudaDevice) -> *const c_void {
    let s = t.cuda_buf().expect("on_mine checked the device");
    let (p, _use) = s.device_ptr(&dev.stream);
    p as *const c_void
}

fn ptr_mut(t: &mut Tensor, dev: &CudaDevice) -> *mut c_void {
    let s = t.cuda_buf_mut().expect("on_mine checked the device");
    let (p, _use) = s.device_ptr_mut(&dev.stream);
    p as *mut c_void
}

impl Communicator for NcclComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world(&self) -> usize {
        self.world
    }

    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn device(&self) -> Device {
        Device::Cuda(self.dev.clone())
    }

    fn all_reduce(&mut self, buf: &mut Tensor) -> Result<()> {
        let a = self.args("all-reduce");
        self.on_mine(&a, buf, "buf")?;
        let (n, dt, comm) = (buf.numel(), nccl_type(buf.dtype()), self.comm);
        let p = ptr_mut(buf, &self.dev);
        // SAFETY: `p` holds n elements of the dtype on this rank's GPU; in place is allowed.
        self.call(&a, |l, s| unsafe {
            (l.all_reduce)(p, p, n, dt, SUM, comm, s)
        })
    }

    fn reduce_scatter(&mut self, send: &Tensor, recv: &mut Tensor) -> Result<()> {
        let a = self.args("reduce-scatter");
        a.blocks(send, recv, ("send", "recv"))?;
        self.on_mine(&a, send, "send")?;
        self.on_mine(&a, recv, "recv")?;
        let (n, dt, comm) = (recv.numel(), nccl_type(recv.dtype()), self.comm);
        let (src, dst) = (ptr(send, &self.dev), ptr_mut(recv, &self.dev));
        // SAFETY: `src` holds world × n elements, `dst` n, both on this rank's GPU.
        self.call(&a, |l, s| unsafe {
            (l.reduce_scatter)(src, dst, n, dt, SUM, comm, s)
        })
    }

    fn all_gather(&mut self, send: &Tensor, recv: &mut Tensor) -> Result<()> {
        let a = self.args("all-gather");
        a.blocks(recv, send, ("recv", "send"))?;
        self.on_mine(&a, send, "send")?;
        self.on_mine(&a, recv, "recv")?;
        let (n, dt, comm) = (send.numel(), nccl_type(send.dtype()), self.comm);
        let (src, dst) = (ptr(send, &self.dev), ptr_mut(recv, &self.dev));
        // SAFETY: `src` holds n elements, `dst` world × n, both on this rank's GPU.
        self.call(&a, |l, s| unsafe {
            (l.all_gather)(src, dst, n, dt, comm, s)
        })
    }

    fn broadcast(&mut self, buf: &mut Tensor, root: usize) -> Result<()> {
        let a = self.args("broadcast");
        a.peer(root, "root")?;
        self.on_mine(&a, buf, "buf")?;
        let (n, dt, comm) = (buf.numel(), nccl_type(buf.dtype()), self.comm);
        let p = ptr_mut(buf, &self.dev);
        let root = root as c_int;
        // SAFETY: `p` holds n elements on this rank's GPU; in place is allowed.
        self.call(&a, |l, s| unsafe {
            (l.broadcast)(p, p, n, dt, root, comm, s)
        })
    }

    fn send(&mut self, buf: &Tensor, peer: usize) -> Result<()> {
        let a = self.args("send");
        a.peer(peer, "peer")?;
        self.on_mine(&a, buf, "buf")?;
        let (n, dt, comm) = (buf.numel(), nccl_type(buf.dtype()), self.comm);
        let p = ptr(buf, &self.dev);
        let peer = peer as c_int;
        // SAFETY: `p` holds n elements on this rank's GPU.
        self.call(&a, |l, s| unsafe { (l.send)(p, n, dt, peer, comm, s) })
    }

    fn recv(&mut self, buf: &mut Tensor, peer: usize) -> Result<()> {
        let a = self.args("recv");
        a.peer(peer, "peer")?;
        self.on_mine(&a, buf, "buf")?;
        let (n, dt, comm) = (buf.numel(), nccl_type(buf.dtype()), self.comm);
        let p = ptr_mut(buf, &self.dev);
        let peer = peer as c_int;
        // SAFETY: `p` holds n elements on this rank's GPU.
        self.call(&a, |l, s| unsafe { (l.recv)(p, n, dt, peer, comm, s) })
    }

    fn send_recv(
        &mut self,
        send: &Tensor,
        to: usize,
        recv: &mut Tensor,
        from: usize,
    ) -> Result<()> {
        let a = self.args("send-recv");
        a.peer(to, "to")?;
        a.peer(from, "from")?;
        self.on_mine(&a, send, "send")?;
        self.on_mine(&a, recv, "recv")?;
        let comm = self.comm;
        let (ns, ts) = (send.numel(), nccl_type(send.dtype()));
        let (nr, tr) = (recv.numel(), nccl_type(recv.dtype()));
        let (src, dst) = (ptr(send, &self.dev), ptr_mut(recv, &self.dev));
        let (to, from) = (to as c_int, from as c_int);
        // Both in one NCCL group, so that a ring of ranks each sending before it receives
        // does not wait on itself.
        // SAFETY: `src` holds ns elements, `dst` nr, both on this rank's GPU.
        self.call(&a, |l, s| unsafe {
            let r = (l.group_start)();
            if r != 0 {
                return r;
            }
            let r1 = (l.send)(src, ns, ts, to, comm, s);
            let r2 = (l.recv)(dst, nr, tr, from, comm, s);
            let r3 = (l.group_end)();
            [r1, r2, r3].into_iter().find(|&r| r != 0).unwrap_or(0)
        })
    }
}
