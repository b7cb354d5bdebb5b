//! The CUPTI activity layer: the only code in `profile` that talks to CUPTI.
//!
//! CUPTI hands records over in buffers that it asks kernlab for (`buffer_requested`) and gives
//! back full (`buffer_completed`, on a CUPTI thread or inside `cuptiActivityFlushAll`); each
//! record is converted at once into kernlab's plain records ([`parse_record`]) and kept in a
//! process-wide sink until [`Subscription::stop`] takes them.
//!
//! Record layouts are versioned. The CUDA 13.0 bindings' current ones are
//! `CUpti_ActivityKernel10`, `CUpti_ActivityMemcpy6`, `CUpti_ActivityMemset4` and
//! `CUpti_ActivityAPI`; every field read here lies in the prefix that the older (Kernel9) and
//! newer (Kernel11, Memcpy7, Memset5) versions share, and each field is read on its own (never
//! the whole struct), so no enum is ever materialised from a value a newer CUPTI might write.

use super::{ApiRecord, KernelRecord, MemKind, MemRecord, Recording};
use crate::runtime::error::{Error, Result};
use cudarc::cupti::result::activity;
use cudarc::cupti::sys;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One converted activity record.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Kernel(KernelRecord),
    Mem(MemRecord),
    Api(ApiRecord),
}

/// CUPTI activity kinds kernlab reads (the values of `CUpti_ActivityKind`).
pub mod kind {
    pub const MEMCPY: u32 = 1;
    pub const MEMSET: u32 = 2;
    pub const DRIVER: u32 = 4;
    pub const KERNEL: u32 = 3;
    pub const CONCURRENT_KERNEL: u32 = 10;
}

/// The driver-API calls whose names kernlab knows without asking CUPTI (the launches).
pub fn known_driver_api(cbid: u32) -> Option<&'static str> {
    Some(match cbid {
        307 => "cuLaunchKernel",
        442 => "cuLaunchKernel_ptsz",
        477 => "cuLaunchCooperativeKernel",
        514 => "cuGraphLaunch",
        652 => "cuLaunchKernelEx",
        653 => "cuLaunchKernelEx_ptsz",
        _ => return None,
    })
}

/// A driver-API call's name: from the table above, else from CUPTI, else `driver cbid N`.
pub fn driver_api_name(cbid: u32) -> String {
    if let Some(n) = known_driver_api(cbid) {
        return n.to_string();
    }
    if unsafe { sys::is_culib_present() } {
        let mut p: *const std::ffi::c_char = std::ptr::null();
        let r = unsafe {
            sys::cuptiGetCallbackName(
                sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
                cbid,
                &mut p,
            )
        };
        if r == sys::CUptiResult::CUPTI_SUCCESS && !p.is_null() {
            return unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned();
        }
    }
    format!("driver cbid {cbid}")
}

fn direction(copy_kind: u8) -> &'static str {
    match copy_kind {
        1 => "HtoD",
        2 => "DtoH",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        _ => "other",
    }
}

/// Read one field of a packed record without forming a reference to it.
macro_rules! field {
    ($p:expr, $f:ident) => {
        std::ptr::addr_of!((*$p).$f).read_unaligned()
    };
}

/// Convert one raw CUPTI activity record into kernlab's records; `None` for kinds kernlab
/// does not keep. `api_name` names a driver-API callback id.
///
/// # Safety
/// `rec` must point at a whole activity record of the kind its first four bytes say (as
/// `cuptiActivityGetNextRecord` returns them), and a kernel record's name must be null or a
/// NUL-terminated string.
pub unsafe fn parse_record(
    rec: *const sys::CUpti_Activity,
    api_name: &dyn Fn(u32) -> String,
) -> Option<Parsed> {
    if rec.is_null() {
        return None;
    }
    let k = (rec as *const u32).read_unaligned();
    unsafe {
        match k {
            kind::KERNEL | kind::CONCURRENT_KERNEL => {
                let p = rec as *const sys::CUpti_ActivityKernel10;
                let name_ptr: *const std::ffi::c_char = field!(p, name);
                let raw = if name_ptr.is_null() {
                    "<unnamed kernel>".to_string()
                } else {
                    std::ffi::CStr::from_ptr(name_ptr)
                        .to_string_lossy()
                        .into_owned()
                };
                let name = super::demangle(&raw);
                let u = |v: i32| v.max(0) as u32;
                Some(Parsed::Kernel(KernelRecord {
                    mangled: (name != raw).then_some(raw),
                    name,
                    start_ns: field!(p, start),
                    end_ns: field!(p, end),
                    device: field!(p, deviceId),
                    stream: field!(p, streamId),
                    correlation: field!(p, correlationId),
                    grid: [
                        u(field!(p, gridX)),
                        u(field!(p, gridY)),
                        u(field!(p, gridZ)),
                    ],
                    block: [
                        u(field!(p, blockX)),
                        u(field!(p, blockY)),
                        u(field!(p, blockZ)),
                    ],
                    registers: field!(p, registersPerThread) as u32,
                    static_smem: u(field!(p, staticSharedMemory)),
                    dynamic_smem: u(field!(p, dynamicSharedMemory)),
                }))
            }
            kind::MEMCPY => {
                let p = rec as *const sys::CUpti_ActivityMemcpy6;
                Some(Parsed::Mem(MemRecord {
                    kind: MemKind::Memcpy,
                    direction: direction(field!(p, copyKind)).to_string(),
                    bytes: field!(p, bytes),
                    start_ns: field!(p, start),
                    end_ns: field!(p, end),
                    device: field!(p, deviceId),
                    stream: field!(p, streamId),
                    correlation: field!(p, correlationId),
                }))
            }
            kind::MEMSET => {
                let p = rec as *const sys::CUpti_ActivityMemset4;
                Some(Parsed::Mem(MemRecord {
                    kind: MemKind::Memset,
                    direction: String::new(),
                    bytes: field!(p, bytes),
                    start_ns: field!(p, start),
                    end_ns: field!(p, end),
                    device: field!(p, deviceId),
                    stream: field!(p, streamId),
                    correlation: field!(p, correlationId),
                }))
            }
            kind::DRIVER => {
                let p = rec as *const sys::CUpti_ActivityAPI;
                let cbid: u32 = field!(p, cbid);
                Some(Parsed::Api(ApiRecord {
                    name: api_name(cbid),
                    cbid,
                    start_ns: field!(p, start),
                    end_ns: field!(p, end),
                    thread: field!(p, threadId),
                    correlation: field!(p, correlationId),
                }))
            }
            _ => None,
        }
    }
}

/// Walk a completed buffer's records with `cuptiActivityGetNextRecord`.
///
/// # Safety
/// `buffer` holds `valid` bytes of records written by CUPTI.
unsafe fn walk(buffer: *mut u8, valid: usize, out: &mut Recording) {
    let mut rec: *mut sys::CUpti_Activity = std::ptr::null_mut();
    while unsafe { activity::get_next_record(buffer, valid, &mut rec) }.is_ok() {
        match unsafe { parse_record(rec, &driver_api_name) } {
            Some(Parsed::Kernel(k)) => out.kernels.push(k),
            Some(Parsed::Mem(m)) => out.memops.push(m),
            Some(Parsed::Api(a)) => out.api.push(a),
            None => {}
        }
    }
}

/// Records from completed buffers, until a subscription takes them.
static SINK: Mutex<Option<Recording>> = Mutex::new(None);
/// One subscription at a time: CUPTI's activity state is process-wide.
static SUBSCRIPTION: Mutex<()> = Mutex::new(());
/// Callbacks are registered once per process.
static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();

const BUFFER_BYTES: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;

fn sink() -> MutexGuard<'static, Option<Recording>> {
    SINK.lock().unwrap_or_else(|e| e.into_inner())
}

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    let layout =
        std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).expect("a valid layout");
    unsafe {
        let p = std::alloc::alloc(layout);
        *buffer = p;
        *size = if p.is_null() { 0 } else { BUFFER_BYTES };
        *max = 0;
    }
}

unsafe extern "C" fn buffer_completed(
    ctx: cudarc::driver::sys::CUcontext,
    stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut got = Recording::default();
    unsafe { walk(buffer, valid, &mut got) };
    let mut dropped = 0usize;
    if unsafe { activity::get_num_dropped_records(ctx, stream_id, &mut dropped) }.is_ok() {
        got.dropped = dropped as u64;
    }
    {
        let mut s = sink();
        let r = s.get_or_insert_with(Recording::default);
        r.kernels.append(&mut got.kernels);
        r.memops.append(&mut got.memops);
        r.api.append(&mut got.api);
        r.dropped += got.dropped;
    }
    let layout =
        std::alloc::Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).expect("a valid layout");
    // SAFETY: every buffer CUPTI hands back came from `buffer_requested`, with this layout.
    unsafe { std::alloc::dealloc(buffer, layout) };
}

/// Whether CUPTI can be used here, or why not (never panics).
pub fn available() -> std::result::Result<(), String> {
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "libcupti.so could not be loaded (install the CUDA toolkit's CUPTI or the \
             nvidia-cuda-cupti wheel, and put its lib folder on LD_LIBRARY_PATH)"
                .into(),
        );
    }
    Ok(())
}

/// CUPTI's API version (`cuptiGetVersion`).
pub fn version() -> Option<u32> {
    available().ok()?;
    let mut v = 0u32;
    (unsafe { sys::cuptiGetVersion(&mut v) } == sys::CUptiResult::CUPTI_SUCCESS).then_some(v)
}

/// CUPTI's clock, ns: the clock of every activity record. 0 when CUPTI is missing.
pub fn timestamp_ns() -> u64 {
    if available().is_err() {
        return 0;
    }
    let mut t = 0u64;
    unsafe { sys::cuptiGetTimestamp(&mut t) };
    t
}

fn cupti_err(call: &'static str) -> impl Fn(cudarc::cupti::result::CuptiError) -> Error {
    move |e| Error::Driver {
        call: call.to_string(),
        err: format!("{:?}", e.0),
    }
}

const KINDS: [sys::CUpti_ActivityKind; 4] = [
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_DRIVER,
];

/// A recording in progress: kernels (concurrent), memcpy, memset and driver-API activity.
/// Only one exists at a time in a process; a second waits for the first to stop.
pub struct Subscription {
    _one: MutexGuard<'static, ()>,
    stopped: bool,
}

impl Subscription {
    /// Register the buffer callbacks (once per process) and enable the activity kinds.
    pub fn start() -> Result<Subscription> {
        available().map_err(|why| Error::MissingLibrary {
            lib: "CUPTI",
            why: format!("CUPTI not found: {why}"),
        })?;
        let one = SUBSCRIPTION.lock().unwrap_or_else(|e| e.into_inner());
        REGISTERED
            .get_or_init(|| {
                activity::register_callbacks(Some(buffer_requested), Some(buffer_completed))
                    .map_err(|e| format!("{:?}", e.0))
            })
            .clone()
            .map_err(|err| Error::Driver {
                call: "cuptiActivityRegisterCallbacks".into(),
                err,
            })?;
        // Whatever an earlier subscription left behind is not this one's.
        let _ = activity::flush_all(1);
        *sink() = Some(Recording::default());
        let mut s = Subscription {
            _one: one,
            stopped: false,
        };
        for k in KINDS {
            if let Err(e) = activity::enable(k) {
                s.disable();
                return Err(cupti_err("cuptiActivityEnable")(e));
            }
        }
        Ok(s)
    }

    fn disable(&mut self) {
        for k in KINDS {
            let _ = activity::disable(k);
        }
        self.stopped = true;
    }

    /// Flush CUPTI's buffers (call it after a device sync), stop recording, and return what
    /// was recorded, in time order.
    pub fn stop(mut self) -> Result<Recording> {
        let flushed = activity::flush_all(1).map_err(cupti_err("cuptiActivityFlushAll"));
        self.disable();
        flushed?;
        let mut r = sink().take().unwrap_or_default();
        r.kernels.sort_by_key(|k| k.start_ns);
        r.memops.sort_by_key(|m| m.start_ns);
        r.api.sort_by_key(|a| a.start_ns);
        Ok(r)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if !self.stopped {
            self.disable();
            let _ = activity::flush_all(1);
            sink().take();
        }
    }
}
