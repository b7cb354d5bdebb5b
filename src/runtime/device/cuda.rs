//! One CUDA device: its context and stream, its properties, and the kernels loaded on it.
//!
//! Kernels are compiled by NVRTC for this device's own architecture (`sm_90a` on Hopper),
//! loaded once per source file, and looked up by name under a lock (as candle does).

use super::nvrtc::{self, Compiled};
use super::triton::TritonSpec;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    DriverError,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What kernlab reads off a CUDA device once, when it opens it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceProps {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    pub l2_bytes: usize,
    pub total_mem: usize,
    pub sm_clock_khz: u32,
    pub mem_clock_khz: u32,
    pub mem_bus_bits: u32,
    pub max_threads_per_sm: u32,
    /// 32-bit registers an SM holds (64 K on every GPU from sm_50 to sm_100).
    pub regs_per_sm: u32,
    /// Resident CTAs an SM holds at most (32 on sm_80 and sm_90, 24 on sm_89, 16 on sm_86).
    pub max_blocks_per_sm: u32,
    pub max_smem_per_block_optin: usize,
    pub driver_version: String,
}

/// A loaded kernel's resources, as the driver reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct KernelResources {
    pub registers: u32,
    /// Per-thread local memory: stack frame plus spills (0 for a kernel that spills nothing).
    pub local_bytes: u32,
    pub static_smem_bytes: u32,
}

/// A loaded Triton kernel: its function and what Triton's compiler made of it.
#[derive(Clone)]
pub struct LoadedTriton {
    pub f: CudaFunction,
    pub kernel: Arc<super::triton::TritonKernel>,
    /// What it was compiled from (a launch notes it for `bench --torch`).
    pub spec: Arc<super::triton::TritonSpec>,
}

/// A loaded module and what NVRTC made of its source.
pub type LoadedModule = (Arc<CudaModule>, Arc<Compiled>);

/// An open CUDA device.
pub struct CudaDevice {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub props: DeviceProps,
    /// The NVRTC target, e.g. `sm_90a`.
    pub arch: String,
    modules: Mutex<HashMap<&'static str, LoadedModule>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// Triton kernels loaded, by their spec (see [`CudaDevice::triton`]).
    tritons: Mutex<HashMap<String, LoadedTriton>>,
    /// Synchronise after every launch (`KERNLAB_LAUNCH_BLOCKING=1`, `profile --sync-each-launch`):
    /// a fault then surfaces at the launch that caused it, and a profile shows the GPU idling
    /// between launches as a host-synchronised loop makes it.
    sync_each_launch: std::sync::atomic::AtomicBool,
    /// Device buffers kept for the device's lifetime, zeroed when made (by name; the last is
    /// the one in use, earlier ones are kept for graphs captured with them).
    workspaces: Mutex<HashMap<&'static str, Vec<CudaSlice<u8>>>>,
}

thread_local! {
    /// Kernel launches enqueued by this thread (every launch passes `after_launch`).
    static LAUNCHES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many kernels this thread has launched through kernlab's launchers so far: a caller
/// compares two readings to count the launches of a call (`bench --torch` hands a Triton
/// variant's launch to PyTorch's process only where its call was that one launch).
pub fn launches_on_this_thread() -> u64 {
    LAUNCHES.with(|n| n.get())
}

/// The value kept under `key` in `map`, else `make()`'s, kept. The lock is not held while
/// `make` runs (a compile or a module load): two threads may both make it, the last kept.
fn memo<T: Clone>(
    map: &Mutex<HashMap<String, T>>,
    key: String,
    make: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if let Some(v) = map.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(v.clone());
    }
    let v = make()?;
    map.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, v.clone());
    Ok(v)
}

fn drv(call: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |e| Error::driver(call, e)
}

/// The NVRTC architecture for a compute capability: the `a` targets (all features, wgmma,
/// setmaxnreg) on 9.0 and 10.x, plain `sm_XY` elsewhere.
pub fn arch_for(cc: (i32, i32)) -> String {
    match cc {
        (9, 0) | (10, 0) | (10, 3) => format!("sm_{}{}a", cc.0, cc.1),
        _ => format!("sm_{}{}", cc.0, cc.1),
    }
}

impl CudaDevice {
    /// Open device `ordinal`: a clear error when the driver or the device is missing. Its work
    /// goes to a stream of its own, its buffers come from the stream-ordered pool.
    pub fn open(ordinal: usize) -> Result<Arc<CudaDevice>> {
        Self::open_with(ordinal, |ctx| {
            ctx.new_stream().map_err(drv("cuStreamCreate"))
        })
    }

    /// Open device `ordinal` (its primary context, as PyTorch's) with its work going to
    /// another library's stream `cu_stream` (0: the legacy default stream), so that kernlab's
    /// kernels are ordered with that library's work on it.
    ///
    /// # Safety
    /// `cu_stream` must be a stream of the device's primary context, alive as long as the
    /// device is used.
    pub unsafe fn open_on_stream(ordinal: usize, cu_stream: u64) -> Result<Arc<CudaDevice>> {
        Self::open_with(ordinal, |ctx| {
            Ok(ctx.wrap_borrowed_stream(cu_stream as sys::CUstream))
        })
    }

    fn open_with(
        ordinal: usize,
        stream_of: impl FnOnce(&Arc<CudaContext>) -> Result<Arc<CudaStream>>,
    ) -> Result<Arc<CudaDevice>> {
        super::require_cuda(ordinal)?;
        let ctx =
            CudaContext::new(ordinal).map_err(drv("cuCtxCreate / cuDevicePrimaryCtxRetain"))?;
        // kernlab runs everything on one stream, so cudarc's per-buffer event tracking (an
        // event record on every launch) is pure overhead in timed loops: turn it off before
        // any buffer exists.
        unsafe { ctx.disable_event_tracking() };
        let stream = stream_of(&ctx)?;
        let attr = |a: sys::CUdevice_attribute| -> Result<i32> {
            ctx.attribute(a).map_err(drv("cuDeviceGetAttribute"))
        };
        use sys::CUdevice_attribute as A;
        let cc = ctx
            .compute_capability()
            .map_err(drv("cuDeviceGetAttribute"))?;
        let mut driver = 0i32;
        unsafe { sys::cuDriverGetVersion(&mut driver) }
            .result()
            .map_err(drv("cuDriverGetVersion"))?;
        let props = DeviceProps {
            name: ctx.name().map_err(drv("cuDeviceGetName"))?,
            compute_capability: cc,
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            total_mem: ctx.total_mem().map_err(drv("cuDeviceTotalMem"))?,
            sm_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap_or(0) as u32,
            mem_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).unwrap_or(0) as u32,
            mem_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).unwrap_or(0) as u32,
            max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
            // Only v8's CTA sizing reads these; 0 (unknown) makes it keep its default CTA.
            regs_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR).unwrap_or(0)
                as u32,
            max_blocks_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
                .unwrap_or(0) as u32,
            max_smem_per_block_optin: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )? as usize,
            driver_version: format!("{}.{}", driver / 1000, (driver % 1000) / 10),
        };
        Ok(Arc::new(CudaDevice {
            ordinal,
            arch: arch_for(cc),
            ctx,
            stream,
            props,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            tritons: Mutex::new(HashMap::new()),
            workspaces: Mutex::new(HashMap::new()),
            sync_each_launch: std::sync::atomic::AtomicBool::new(
                std::env::var("KERNLAB_LAUNCH_BLOCKING").is_ok_and(|v| v == "1"),
            ),
        }))
    }

    /// The compiled module for a source file: compiled (or read from the disk cache) and
    /// loaded on first use, then kept.
    pub fn module(&self, src: &'static KernelSource, kernel: &str) -> Result<LoadedModule> {
        let mut mods = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = mods.get(src.file) {
            return Ok(m.clone());
        }
        let compiled = nvrtc::compile_cached(src, &self.arch, kernel)?;
        let image = match compiled.image() {
            nvrtc::ModuleImage::Ptx(ptx) => cudarc::nvrtc::Ptx::from_src(ptx),
            nvrtc::ModuleImage::Cubin(cubin) => cudarc::nvrtc::Ptx::from_binary(cubin.to_vec()),
        };
        let module = self
            .ctx
            .load_module(image)
            .map_err(drv("cuModuleLoadData"))?;
        let entry = (module, Arc::new(compiled));
        mods.insert(src.file, entry.clone());
        Ok(entry)
    }

    /// Turn synchronising after every launch on or off (see `sync_each_launch`).
    pub fn set_sync_each_launch(&self, on: bool) {
        self.sync_each_launch
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether every launch synchronises (`set_sync_each_launch`).
    pub fn launches_block(&self) -> bool {
        self.sync_each_launch
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Called by every launch right after it is enqueued: a no-op unless launches block.
    pub fn after_launch(&self, kernel: &str) -> Result<()> {
        LAUNCHES.with(|n| n.set(n.get() + 1));
        if self.launches_block() {
            self.sync().map_err(|e| match e {
                // In launch-blocking mode the kernel just launched is the culprit.
                f @ Error::DeviceFault { .. } => f.during(format!("kernel {kernel}")),
                e => Error::Launch {
                    kernel: kernel.to_string(),
                    err: format!("the kernel failed (launch-blocking mode): {e}"),
                },
            })?;
        }
        Ok(())
    }

    /// A kernel by name from a source file.
    pub fn function(&self, src: &'static KernelSource, kernel: &str) -> Result<CudaFunction> {
        let key = format!("{}::{kernel}", src.file);
        memo(&self.functions, key, || self.load_function(src, kernel))
    }

    fn load_function(&self, src: &'static KernelSource, kernel: &str) -> Result<CudaFunction> {
        let (module, compiled) = self.module(src, kernel)?;
        if !compiled.has_entry(kernel) {
            return Err(Error::MissingSymbol {
                file: src.file.into(),
                kernel: kernel.into(),
            });
        }
        module
            .load_function(kernel)
            .map_err(drv("cuModuleGetFunction"))
    }

    /// A Triton kernel, compiled by Triton's compiler for this device (or read from the
    /// cache) and loaded on first use, then kept; its dynamic shared memory allowed.
    pub fn triton(&self, spec: &TritonSpec) -> Result<LoadedTriton> {
        let key = format!(
            "{}::{}",
            spec.source.file,
            serde_json::to_string(spec).unwrap_or_else(|_| spec.label())
        );
        memo(&self.tritons, key, || self.load_triton(spec))
    }

    fn load_triton(&self, spec: &TritonSpec) -> Result<LoadedTriton> {
        let k = super::triton::compile_cached(spec, &self.arch)?;
        k.check_launchable(&spec.label())?;
        if k.meta.shared as usize > self.props.max_smem_per_block_optin {
            return Err(Error::Invalid(format!(
                "{}: Triton compiled it for {} bytes of shared memory a CTA; this GPU gives at \
                 most {}",
                spec.label(),
                k.meta.shared,
                self.props.max_smem_per_block_optin
            )));
        }
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(k.cubin.clone()))
            .map_err(drv("cuModuleLoadData (a Triton cubin)"))?;
        let f = module
            .load_function(&k.meta.name)
            .map_err(drv("cuModuleGetFunction"))?;
        if k.meta.shared > 48 * 1024 {
            // Past 48 KB a block must opt in (the function is new: nothing else raised it).
            f.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                k.meta.shared as i32,
            )
            .map_err(drv("cuFuncSetAttribute (a Triton kernel's shared memory)"))?;
        }
        Ok(LoadedTriton {
            f,
            kernel: Arc::new(k),
            spec: Arc::new(spec.clone()),
        })
    }

    /// What the driver reports for a loaded function.
    pub fn function_resources(f: &CudaFunction) -> Result<KernelResources> {
        use sys::CUfunction_attribute as F;
        let get = |a: F| -> Result<u32> {
            f.get_attribute(a)
                .map(|v| v as u32)
                .map_err(drv("cuFuncGetAttribute"))
        };
        Ok(KernelResources {
            registers: get(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: get(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            static_smem_bytes: get(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        })
    }

    /// What the driver reports for a loaded kernel: registers per thread, local memory
    /// (stack frame and spills) per thread, static shared memory.
    pub fn kernel_resources(
        &self,
        src: &'static KernelSource,
        kernel: &str,
    ) -> Result<KernelResources> {
        Self::function_resources(&self.function(src, kernel)?)
    }

    /// Run `f` with the workspace `name`: at least `bytes` of device memory that stays
    /// allocated between calls and was zeroed when it was made. Kernels that keep state there
    /// (softmax v6's and v9's done count and exchange slots, zeroed again by the last CTA of
    /// each launch) rely on it being theirs alone: kernlab runs one stream per device, and
    /// the lock is held while `f` enqueues.
    ///
    /// A larger request makes a new, zeroed buffer; the old ones are kept (not freed) for the
    /// device's lifetime, so a CUDA graph captured with them stays valid. Making one cannot be
    /// captured into a graph, so it is refused while the stream is capturing: run the kernel
    /// once at that size before capturing (kernlab's `--graph` timing does a warm-up call).
    pub fn with_workspace<R>(
        &self,
        name: &'static str,
        bytes: usize,
        f: impl FnOnce(&mut CudaSlice<u8>) -> Result<R>,
    ) -> Result<R> {
        self.with_workspaces([(name, bytes)], |[b]| f(b))
    }

    /// [`CudaDevice::with_workspace`] for several workspaces at once (distinct names), for a
    /// kernel whose state must keep its place in one buffer whatever the shape while scratch
    /// of a shape-dependent size lives in another.
    pub fn with_workspaces<R, const N: usize>(
        &self,
        wants: [(&'static str, usize); N],
        f: impl FnOnce([&mut CudaSlice<u8>; N]) -> Result<R>,
    ) -> Result<R> {
        for (i, &(name, _)) in wants.iter().enumerate() {
            if wants[..i].iter().any(|w| w.0 == name) {
                return Err(Error::Invalid(format!(
                    "workspace {name} asked for twice in one call"
                )));
            }
        }
        let mut ws = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        for &(name, bytes) in &wants {
            let bufs = ws.entry(name).or_default();
            if bufs.last().is_none_or(|b| b.len() < bytes) {
                let capturing = self
                    .stream
                    .capture_status()
                    .map_err(drv("cuStreamIsCapturing"))?;
                if capturing != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                    return Err(Error::Invalid(format!(
                        "the {name} ({bytes} bytes) would be made during a CUDA-graph capture; \
                         run the kernel once at this size before capturing"
                    )));
                }
                let mut b = self.alloc_bytes(bytes, name)?;
                self.memset_pattern(&mut b, 1, 0, bytes)?;
                bufs.push(b);
            }
        }
        let names = wants.map(|w| w.0);
        let bufs = ws.get_disjoint_mut(names.each_ref());
        f(bufs.map(|b| b.and_then(|v| v.last_mut()).expect("made above")))
    }

    /// Allocate `bytes` of device memory (from the stream-ordered pool, at the size asked), with
    /// a clear out-of-memory error.
    pub fn alloc_bytes(&self, bytes: usize, what: &str) -> Result<CudaSlice<u8>> {
        let made = unsafe { self.stream.alloc::<u8>(bytes.max(1)) };
        match made {
            Ok(s) => Ok(s),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                let (free, total) = self.ctx.mem_get_info().unwrap_or((0, 0));
                Err(Error::OutOfDeviceMemory {
                    requested: bytes,
                    free,
                    total,
                    what: what.to_string(),
                })
            }
            Err(e) => Err(Error::driver("cuMemAlloc", e)),
        }
    }

    pub fn htod(&self, bytes: &[u8], what: &str) -> Result<CudaSlice<u8>> {
        let mut dst = self.alloc_bytes(bytes.len(), what)?;
        if !bytes.is_empty() {
            self.stream
                .memcpy_htod(bytes, &mut dst)
                .map_err(drv("cuMemcpyHtoDAsync"))?;
        }
        Ok(dst)
    }

    pub fn dtoh(&self, src: &CudaSlice<u8>, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        if len > 0 {
            self.stream
                .memcpy_dtoh(&src.slice(..len), &mut out[..])
                .map_err(drv("cuMemcpyDtoHAsync"))?;
        }
        self.sync()?;
        Ok(out)
    }

    /// Fill `count` elements of `elem_bytes` (2 or 4) with one bit pattern.
    pub fn memset_pattern(
        &self,
        buf: &mut CudaSlice<u8>,
        elem_bytes: usize,
        bits: u32,
        count: usize,
    ) -> Result<()> {
        let (ptr, _g) = buf.device_ptr_mut(&self.stream);
        let r = unsafe {
            match elem_bytes {
                4 => sys::cuMemsetD32Async(ptr, bits, count, self.stream.cu_stream()),
                2 => sys::cuMemsetD16Async(ptr, bits as u16, count, self.stream.cu_stream()),
                _ => sys::cuMemsetD8Async(ptr, bits as u8, count, self.stream.cu_stream()),
            }
        };
        r.result().map_err(drv("cuMemsetAsync"))
    }

    /// Device-to-device copy of `bytes` bytes.
    pub fn copy_dtod(
        &self,
        src: &CudaSlice<u8>,
        dst: &mut CudaSlice<u8>,
        bytes: usize,
    ) -> Result<()> {
        let (s, _gs) = src.device_ptr(&self.stream);
        let (d, _gd) = dst.device_ptr_mut(&self.stream);
        unsafe { sys::cuMemcpyDtoDAsync_v2(d, s, bytes, self.stream.cu_stream()) }
            .result()
            .map_err(drv("cuMemcpyDtoDAsync"))
    }

    /// Wait for the stream; surfaces any asynchronous fault of earlier launches.
    pub fn sync(&self) -> Result<()> {
        self.stream.synchronize().map_err(drv(
            "cuStreamSynchronize (a fault in an earlier kernel surfaces here)",
        ))
    }

    /// The device's default memory pool, which kernlab's stream-ordered allocations come from.
    fn default_pool(&self) -> Result<sys::CUmemoryPool> {
        let mut pool = std::ptr::null_mut();
        let dev = self.ctx.cu_device();
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, dev) }
            .result()
            .map_err(drv("cuDeviceGetDefaultMemPool"))?;
        Ok(pool)
    }

    /// The most device memory kernlab's allocations held at once since the last
    /// [`CudaDevice::reset_peak_memory`] (the default pool's high-water mark of bytes in use:
    /// inputs, outputs and every temporary).
    pub fn peak_memory(&self) -> Result<u64> {
        let pool = self.default_pool()?;
        let mut v = 0u64;
        unsafe {
            sys::cuMemPoolGetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                &mut v as *mut u64 as *mut std::ffi::c_void,
            )
        }
        .result()
        .map_err(drv("cuMemPoolGetAttribute(USED_MEM_HIGH)"))?;
        Ok(v)
    }

    /// Start a new high-water mark at the memory in use now.
    pub fn reset_peak_memory(&self) -> Result<()> {
        let pool = self.default_pool()?;
        let mut zero = 0u64;
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                &mut zero as *mut u64 as *mut std::ffi::c_void,
            )
        }
        .result()
        .map_err(drv("cuMemPoolSetAttribute(USED_MEM_HIGH)"))
    }
}

/// Map a launch failure to an error naming the kernel (a sticky fault an earlier kernel left
/// stays a fault: this launch did not cause it).
pub fn launch_err(kernel: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |e| {
        let err = format!("{e:?}");
        match Error::driver(format!("the launch of {kernel}"), e) {
            f @ Error::DeviceFault { .. } => f,
            _ => Error::Launch {
                kernel: kernel.to_string(),
                err,
            },
        }
    }
}
