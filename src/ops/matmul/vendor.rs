//! The `vendor` tier of matmul/linear: NVIDIA's own GEMMs, called on the device's stream so the
//! harness's events time them like any kernlab kernel.
//!
//! - `cublas`: `cublasSgemm` for f32 (CUBLAS_DEFAULT_MATH: exact f32, no TF32) and
//!   `cublasGemmEx` for bf16/f16 (CUBLAS_COMPUTE_32F: f32 accumulation). cuBLAS cannot fuse a
//!   bias or an activation, so this variant does the plain matmul only.
//! - `cublaslt`: `cublasLtMatmul` for all three dtypes (CUBLAS_COMPUTE_32F), with the bias and
//!   the GeLU fused through Lt's epilogue (Lt has one GeLU: the tanh approximation).
//!
//! Both compute the row-major contract `c[M,N] = act(a[M,K] · w[N,K]ᵀ + bias[N])` as the
//! column-major product `cᵀ[N,M] = op(w) · aᵀ` (see [`BlasCall`]): the bytes of row-major
//! `w [N,K]` are column-major `wᵀ [K,N]` (ld K), those of `a [M,K]` column-major `aᵀ [K,M]`
//! (ld K), and those of `c [M,N]` column-major `cᵀ [N,M]` (ld N). No copy, no transpose
//! kernel; and the bias, indexed by the output feature, runs along the rows of `cᵀ`, which is
//! exactly the vector Lt's BIAS epilogue broadcasts.
//!
//! State kept per device ordinal (lazily, in one static map): the cuBLAS handle (bound to the
//! device's stream), the cuBLASLt handle, one workspace (32 MiB on Hopper and later, 4 MiB
//! before) shared by both, and the Lt plans — descriptors, layouts and the heuristic's
//! algorithm — keyed by (dtype, the column-major call, epilogue, pointer alignments). A call
//! with a plan in the cache sets the epilogue's pointers and enqueues `cublasLtMatmul`;
//! nothing else.
//!
//! The MLP's vendor tier also trains through Lt's GeLU epilogues: [`linear_gelu_aux`]
//! (GELU_AUX_BIAS, the forward keeping GeLU's input) and [`dgrad_dgelu`] (DGELU_BGRAD, the
//! backward product times GeLU's derivative, with the bias gradient).
//!
//! cudarc's dynamic loading panics when a library is missing at a symbol's first use, so each
//! library is looked for first (once) and its absence is an `Error::MissingLibrary`.

use crate::ops::matmul::{
    bias_of_product, device_of, dims2, gemm_bufs, like_product, read_ptr, row_major_dims,
    write_ptr, Activation, Gemm, GemmBufs,
};
use crate::runtime::device::CudaDevice;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use cudarc::cublas::sys as cb;
use cudarc::cublaslt::sys as lt;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::size_of;
use std::sync::{Arc, Mutex, OnceLock};

const OP: &str = "matmul";

/// What the registry and the PTX check print for the vendor variants (they have no kernlab
/// kernel, hence no symbol to look for).
pub fn symbols_note() -> &'static str {
    "vendor tier: no kernlab kernel; cuBLAS (cublasSgemm / cublasGemmEx) and cuBLASLt \
     (cublasLtMatmul) choose their own kernels at run time (their names show in \
     `kernlab profile`, not in the PTX)"
}

// ---- pure host logic ---------------------------------------------------------------------------

/// The column-major GEMM that computes the row-major contract: `C[m,n] = op(A)·op(B)` with
/// `A = w` (transposed), `B = a` (as is), `m = N`, `n = M`, `k = K`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlasCall {
    /// op(A) = Aᵀ: A is the column-major `[K, N]` view of `w`'s bytes.
    pub transa_t: bool,
    /// op(B) = B: B is the column-major `[K, M]` view of `a`'s bytes.
    pub transb_t: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
}

impl BlasCall {
    /// The call for `c[M,N] = a[M,K] · w[N,K]ᵀ`.
    pub fn for_gemm(m: usize, n: usize, k: usize) -> BlasCall {
        BlasCall {
            transa_t: true,
            transb_t: false,
            m: n,
            n: m,
            k,
            lda: k,
            ldb: k,
            ldc: n,
        }
    }

    /// cuBLASLt layouts describe the matrices as stored, before op(): (rows, cols, ld) of A,
    /// B and C/D.
    pub fn lt_layouts(&self) -> [(u64, u64, i64); 3] {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let a = if self.transa_t { (k, m) } else { (m, k) };
        let b = if self.transb_t { (n, k) } else { (k, n) };
        [
            (a.0, a.1, self.lda as i64),
            (b.0, b.1, self.ldb as i64),
            (m, n, self.ldc as i64),
        ]
    }

    /// The call for row-major `c[M,N] = a[M,K] · b[K,N]` (neither transposed; the MLP's
    /// `dZ·W`): cuBLAS's A is b's bytes, column-major `[N,K]` (ld N), its B is a's,
    /// column-major `[K,M]` (ld K), both as is.
    pub fn for_nn(m: usize, n: usize, k: usize) -> BlasCall {
        BlasCall {
            transa_t: false,
            transb_t: false,
            m: n,
            n: m,
            k,
            lda: n,
            ldb: k,
            ldc: n,
        }
    }
}

/// cuBLASLt's epilogue for a (bias, activation) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LtEpilogue {
    Default,
    Bias,
    Gelu,
    GeluBias,
    /// GELU_BIAS that also writes GeLU's input (the pre-activation) to an auxiliary matrix.
    GeluAuxBias,
    /// The product times GeLU's derivative at the auxiliary matrix, and that result's sums
    /// along the bias's dimension into the bias pointer (the bias gradient).
    DGeluBGrad,
}

impl LtEpilogue {
    /// Lt applies the bias, then the GeLU — the contract's order. Lt's only GeLU is the tanh
    /// approximation, so the exact (erf) GeLU is refused.
    pub fn select(has_bias: bool, act: Activation) -> Result<LtEpilogue> {
        match (has_bias, act) {
            (false, Activation::None) => Ok(LtEpilogue::Default),
            (true, Activation::None) => Ok(LtEpilogue::Bias),
            (false, Activation::GeluTanh) => Ok(LtEpilogue::Gelu),
            (true, Activation::GeluTanh) => Ok(LtEpilogue::GeluBias),
            (_, Activation::GeluErf) => Err(Error::Invalid(
                "matmul/cublaslt: cuBLASLt has one GeLU epilogue (CUBLASLT_EPILOGUE_GELU, the \
                 tanh approximation); gelu-erf is not available there: use gelu-tanh, or a \
                 hand-written or manual variant for the exact GeLU"
                    .into(),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LtEpilogue::Default => "CUBLASLT_EPILOGUE_DEFAULT",
            LtEpilogue::Bias => "CUBLASLT_EPILOGUE_BIAS",
            LtEpilogue::Gelu => "CUBLASLT_EPILOGUE_GELU",
            LtEpilogue::GeluBias => "CUBLASLT_EPILOGUE_GELU_BIAS",
            LtEpilogue::GeluAuxBias => "CUBLASLT_EPILOGUE_GELU_AUX_BIAS",
            LtEpilogue::DGeluBGrad => "CUBLASLT_EPILOGUE_DGELU_BGRAD",
        }
    }

    /// Whether the epilogue reads (or, for DGELU_BGRAD, writes) the bias pointer.
    pub fn has_bias(self) -> bool {
        !matches!(self, LtEpilogue::Default | LtEpilogue::Gelu)
    }

    /// Whether the epilogue has an auxiliary matrix (GeLU's input).
    pub fn has_aux(self) -> bool {
        matches!(self, LtEpilogue::GeluAuxBias | LtEpilogue::DGeluBGrad)
    }

    fn sys(self) -> lt::cublasLtEpilogue_t {
        use lt::cublasLtEpilogue_t as E;
        match self {
            LtEpilogue::Default => E::CUBLASLT_EPILOGUE_DEFAULT,
            LtEpilogue::Bias => E::CUBLASLT_EPILOGUE_BIAS,
            LtEpilogue::Gelu => E::CUBLASLT_EPILOGUE_GELU,
            LtEpilogue::GeluBias => E::CUBLASLT_EPILOGUE_GELU_BIAS,
            LtEpilogue::GeluAuxBias => E::CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
            LtEpilogue::DGeluBGrad => E::CUBLASLT_EPILOGUE_DGELU_BGRAD,
        }
    }
}

/// The epilogue the `cublaslt` variant runs for `g`, for reports.
pub fn lt_epilogue_name(g: &Gemm) -> &'static str {
    match LtEpilogue::select(g.bias.is_some(), g.act) {
        Ok(e) => e.name(),
        Err(_) => "none (cuBLASLt has no erf GeLU)",
    }
}

/// The largest power of two (up to 256, cuBLASLt's default assumption) dividing a device
/// address: what the heuristic is told about each operand.
pub fn ptr_align(p: u64) -> u32 {
    1u32 << p.trailing_zeros().min(8)
}

/// What a cached cuBLASLt plan depends on (the device ordinal is the outer map's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlanKey {
    pub dtype: DType,
    /// The column-major product: operations, sizes and leading dimensions.
    pub call: BlasCall,
    pub epilogue: LtEpilogue,
    /// Alignment in bytes of Lt's A, B and D, the bias and the auxiliary matrix (see
    /// [`ptr_align`]; 256 for a pointer the epilogue does not have). The heuristic picks
    /// algorithms by them, the epilogue's pointers included.
    pub align: [u32; 5],
}

/// One `cublasLtMatmul`: its plan's key and this call's device addresses (0 for a pointer the
/// epilogue does not have). The auxiliary matrix has D's shape and leading dimension.
struct LtCall {
    key: PlanKey,
    a: u64,
    b: u64,
    d: u64,
    bias: u64,
    aux: u64,
}

impl LtCall {
    fn new(dtype: DType, call: BlasCall, epilogue: LtEpilogue, ptrs: [u64; 5]) -> LtCall {
        let [a, b, d, bias, aux] = ptrs;
        let al = |p: u64| if p == 0 { 256 } else { ptr_align(p) };
        LtCall {
            key: PlanKey {
                dtype,
                call,
                epilogue,
                align: ptrs.map(al),
            },
            a,
            b,
            d,
            bias,
            aux,
        }
    }
}

/// A dimension for cuBLAS's 32-bit interface.
fn dim_i32(variant: &str, what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::UnsupportedShape {
        op: OP.into(),
        variant: variant.into(),
        why: format!("cuBLAS's 32-bit interface takes sizes up to 2^31 − 1; {what} = {v}"),
    })
}

fn blas_type(dt: DType) -> cb::cudaDataType {
    match dt {
        DType::F32 => cb::cudaDataType::CUDA_R_32F,
        DType::BF16 => cb::cudaDataType::CUDA_R_16BF,
        DType::F16 => cb::cudaDataType::CUDA_R_16F,
    }
}

fn lt_type(dt: DType) -> lt::cudaDataType {
    match dt {
        DType::F32 => lt::cudaDataType::CUDA_R_32F,
        DType::BF16 => lt::cudaDataType::CUDA_R_16BF,
        DType::F16 => lt::cudaDataType::CUDA_R_16F,
    }
}

// ---- libraries ---------------------------------------------------------------------------------

/// cuBLAS is there (looked for once; cudarc would panic at the first symbol otherwise).
fn require_cublas() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    if *PRESENT.get_or_init(|| unsafe { cb::is_culib_present() }) {
        Ok(())
    } else {
        Err(Error::MissingLibrary {
            lib: "cuBLAS (libcublas.so)",
            why: "not found on the library path (the cublas variant needs it)".into(),
        })
    }
}

fn require_cublaslt() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    if *PRESENT.get_or_init(|| unsafe { lt::is_culib_present() }) {
        Ok(())
    } else {
        Err(Error::MissingLibrary {
            lib: "cuBLASLt (libcublasLt.so)",
            why: "not found on the library path (the cublaslt variant needs it)".into(),
        })
    }
}

// ---- owned library objects (destroyed on error paths; the cached ones live as long as the
// process, as statics are never dropped) --------------------------------------------------------

struct BlasHandle(cb::cublasHandle_t);
impl Drop for BlasHandle {
    fn drop(&mut self) {
        unsafe { cb::cublasDestroy_v2(self.0) };
    }
}

struct LtHandle(lt::cublasLtHandle_t);
impl Drop for LtHandle {
    fn drop(&mut self) {
        unsafe { lt::cublasLtDestroy(self.0) };
    }
}

struct LtLayout(lt::cublasLtMatrixLayout_t);
impl Drop for LtLayout {
    fn drop(&mut self) {
        unsafe { lt::cublasLtMatrixLayoutDestroy(self.0) };
    }
}

struct LtDesc(lt::cublasLtMatmulDesc_t);
impl Drop for LtDesc {
    fn drop(&mut self) {
        unsafe { lt::cublasLtMatmulDescDestroy(self.0) };
    }
}

struct LtPref(lt::cublasLtMatmulPreference_t);
impl Drop for LtPref {
    fn drop(&mut self) {
        unsafe { lt::cublasLtMatmulPreferenceDestroy(self.0) };
    }
}

/// One cached cuBLASLt GEMM: everything but the pointers.
struct LtPlan {
    desc: LtDesc,
    a: LtLayout,
    b: LtLayout,
    d: LtLayout,
    algo: lt::cublasLtMatmulAlgo_t,
}

struct DeviceState {
    /// The stream the handles work on (and the workspace was last used on).
    stream: Arc<CudaStream>,
    /// Shared by cuBLAS and cuBLASLt: both enqueue on `stream`, so they never overlap.
    workspace: Option<CudaSlice<u8>>,
    blas: Option<BlasHandle>,
    lt: Option<LtHandle>,
    plans: HashMap<PlanKey, LtPlan>,
}

// SAFETY: the raw library handles are only used with the map's lock held, and cuBLAS /
// cuBLASLt handles may be used from any thread (one at a time) once the context is current.
unsafe impl Send for DeviceState {}

static STATE: OnceLock<Mutex<HashMap<usize, DeviceState>>> = OnceLock::new();

/// A cuBLAS status as a result; `call` names the function (built only on failure).
fn check_cb(s: cb::cublasStatus_t, call: impl FnOnce() -> String) -> Result<()> {
    match s {
        cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        e => Err(Error::driver(call(), e)),
    }
}
fn check_lt(s: lt::cublasStatus_t, call: impl FnOnce() -> String) -> Result<()> {
    match s {
        lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        e => Err(Error::driver(call(), e)),
    }
}

/// Workspace size NVIDIA recommends: 32 MiB on Hopper and later, 4 MiB before.
fn workspace_bytes(cc_major: i32) -> usize {
    if cc_major >= 9 {
        32 << 20
    } else {
        4 << 20
    }
}

impl DeviceState {
    /// The state of `dev`'s ordinal, moved onto `dev`'s stream if another `CudaDevice` of the
    /// same ordinal (with its own stream) used it last: that stream is drained first, so the
    /// shared workspace is never in use on two streams at once.
    fn get<'m>(
        map: &'m mut HashMap<usize, DeviceState>,
        dev: &CudaDevice,
    ) -> Result<&'m mut DeviceState> {
        let st = map.entry(dev.ordinal).or_insert_with(|| DeviceState {
            stream: dev.stream.clone(),
            workspace: None,
            blas: None,
            lt: None,
            plans: HashMap::new(),
        });
        if st.stream.cu_stream() != dev.stream.cu_stream() {
            st.stream.synchronize().map_err(|e| {
                Error::driver(
                    "cuStreamSynchronize (the previous stream of the vendor GEMMs)",
                    e,
                )
            })?;
            st.stream = dev.stream.clone();
            if let Some(h) = &st.blas {
                unsafe { cb::cublasSetStream_v2(h.0, dev.stream.cu_stream() as _) }
                    .result()
                    .map_err(|e| Error::driver("cublasSetStream", e))?;
                // cublasSetStream resets the workspace to cuBLAS's own pool.
                if let Some(ws) = &st.workspace {
                    set_blas_workspace(dev, h, ws)?;
                }
            }
        }
        Ok(st)
    }

    fn workspace(&mut self, dev: &CudaDevice) -> Result<&CudaSlice<u8>> {
        if self.workspace.is_none() {
            let bytes = workspace_bytes(dev.props.compute_capability.0);
            self.workspace = Some(dev.alloc_bytes(bytes, "the cuBLAS/cuBLASLt workspace")?);
        }
        Ok(self.workspace.as_ref().expect("set above"))
    }

    fn blas(&mut self, dev: &CudaDevice) -> Result<cb::cublasHandle_t> {
        if let Some(h) = &self.blas {
            return Ok(h.0);
        }
        self.workspace(dev)?;
        let mut raw = std::ptr::null_mut();
        check_cb(unsafe { cb::cublasCreate_v2(&mut raw) }, || {
            "cublasCreate".into()
        })?;
        let h = BlasHandle(raw);
        check_cb(
            unsafe { cb::cublasSetStream_v2(h.0, dev.stream.cu_stream() as _) },
            || "cublasSetStream".into(),
        )?;
        // Exact f32 (no TF32) for sgemm, and split-K partial sums kept in the f32 compute
        // type rather than the 16-bit output type (the contract accumulates in f32).
        check_cb(
            unsafe {
                cb::cublasSetMathMode(
                    h.0,
                    cb::cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION,
                )
            },
            || "cublasSetMathMode".into(),
        )?;
        set_blas_workspace(dev, &h, self.workspace.as_ref().expect("allocated above"))?;
        let raw = h.0;
        self.blas = Some(h);
        Ok(raw)
    }

    fn lt(&mut self) -> Result<lt::cublasLtHandle_t> {
        if let Some(h) = &self.lt {
            return Ok(h.0);
        }
        let mut raw = std::ptr::null_mut();
        check_lt(unsafe { lt::cublasLtCreate(&mut raw) }, || {
            "cublasLtCreate".into()
        })?;
        self.lt = Some(LtHandle(raw));
        Ok(raw)
    }
}

fn set_blas_workspace(dev: &CudaDevice, h: &BlasHandle, ws: &CudaSlice<u8>) -> Result<()> {
    let (p, _g) = ws.device_ptr(&dev.stream);
    check_cb(
        unsafe { cb::cublasSetWorkspace_v2(h.0, p as *mut c_void, ws.len()) },
        || "cublasSetWorkspace".into(),
    )
}

fn lock_state() -> std::sync::MutexGuard<'static, HashMap<usize, DeviceState>> {
    STATE
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn describe(g: &Gemm) -> String {
    format!("{} M={} N={} K={}", g.dtype(), g.m, g.n, g.k)
}

// ---- cuBLAS --------------------------------------------------------------------------------------

/// cuBLAS's operation for "transposed" or not.
fn blas_op(t: bool) -> cb::cublasOperation_t {
    if t {
        cb::cublasOperation_t::CUBLAS_OP_T
    } else {
        cb::cublasOperation_t::CUBLAS_OP_N
    }
}

/// Column-major `C[m,n] = op(A)·op(B)` by `cublasGemmEx` on handle `h`: all three of `dt`,
/// f32 compute, α = 1, β = 0; each matrix a device address and its leading dimension.
///
/// # Safety
/// The addresses must be live device memory holding the matrices the sizes describe.
unsafe fn gemm_ex(
    h: cb::cublasHandle_t,
    (ta, tb): (cb::cublasOperation_t, cb::cublasOperation_t),
    (m, n, k): (i32, i32, i32),
    (pa, lda): (u64, i32),
    (pb, ldb): (u64, i32),
    (pc, ldc): (u64, i32),
    dt: DType,
) -> cb::cublasStatus_t {
    let (alpha, beta) = (1.0f32, 0.0f32);
    cb::cublasGemmEx(
        h,
        ta,
        tb,
        m,
        n,
        k,
        &alpha as *const f32 as *const c_void,
        pa as *const c_void,
        blas_type(dt),
        lda,
        pb as *const c_void,
        blas_type(dt),
        ldb,
        &beta as *const f32 as *const c_void,
        pc as *mut c_void,
        blas_type(dt),
        ldc,
        cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
    )
}

/// `c = a·wᵀ` through cuBLAS: `cublasSgemm` (f32, exact) or `cublasGemmEx` (bf16/f16, f32
/// compute), on the device's stream. No bias, no activation: cuBLAS cannot fuse them.
pub fn run_cublas(g: &Gemm, c: &mut Tensor) -> Result<()> {
    if g.bias.is_some() || g.act != Activation::None {
        return Err(Error::Invalid(
            "cuBLAS has no fused epilogue; use cublaslt or manual (matmul/cublas does the plain \
             matmul only, without bias or activation)"
                .into(),
        ));
    }
    require_cublas()?;
    let call = BlasCall::for_gemm(g.m, g.n, g.k);
    let v = "cublas";
    let (m, n, k) = (
        dim_i32(v, "N", call.m)?,
        dim_i32(v, "M", call.n)?,
        dim_i32(v, "K", call.k)?,
    );
    let (lda, ldb, ldc) = (
        dim_i32(v, "K", call.lda)?,
        dim_i32(v, "K", call.ldb)?,
        dim_i32(v, "N", call.ldc)?,
    );
    let (ta, tb) = (blas_op(call.transa_t), blas_op(call.transb_t));
    let GemmBufs { dev, a, w, c, .. } = gemm_bufs(v, g, c)?;
    dev.ctx
        .bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent (before cuBLAS)", e))?;
    let mut map = lock_state();
    let st = DeviceState::get(&mut map, &dev)?;
    let h = st.blas(&dev)?;
    let (pw, _gw) = w.device_ptr(&dev.stream);
    let (pa, _ga) = a.device_ptr(&dev.stream);
    let (pc, _gc) = c.device_ptr_mut(&dev.stream);
    let (alpha, beta) = (1.0f32, 0.0f32);
    let dt = g.dtype();
    let (name, status) = match dt {
        DType::F32 => ("cublasSgemm", unsafe {
            cb::cublasSgemm_v2(
                h,
                ta,
                tb,
                m,
                n,
                k,
                &alpha,
                pw as *const f32,
                lda,
                pa as *const f32,
                ldb,
                &beta,
                pc as *mut f32,
                ldc,
            )
        }),
        DType::BF16 | DType::F16 => ("cublasGemmEx", unsafe {
            gemm_ex(h, (ta, tb), (m, n, k), (pw, lda), (pa, ldb), (pc, ldc), dt)
        }),
    };
    check_cb(status, || format!("{name} ({})", describe(g)))?;
    drop(map);
    dev.after_launch(name)
}

/// Row-major `c[M,N] = op(a)·op(b)` through cuBLAS (`cublasGemmEx`, f32 compute; f32 exact):
/// `a` is stored `[M,K]`, or `[K,M]` where `ta` (then op(a) = aᵀ); `b` is stored `[K,N]`, or
/// `[N,K]` where `tb`. The MLP's backward uses it for the products whose layouts the matmul
/// contract (`a·wᵀ`) does not cover: `dZ·W` (neither transposed) and `dZᵀ·H` (`ta`).
///
/// As column-major, the buffers hold the transposes, so the call computes `cᵀ = op(b)ᵀ·op(a)ᵀ`:
/// cuBLAS's A is b's buffer and its B is a's, each with its stored width as leading dimension.
/// The product lands in rows `c_row..c_row + M` of `c` (a gradient into its place in a larger
/// output, with no copy).
pub fn run_cublas_rm(
    a: &Tensor,
    ta: bool,
    b: &Tensor,
    tb: bool,
    c: &mut Tensor,
    c_row: usize,
) -> Result<()> {
    let v = "cublas";
    const WHO: &str = "the row-major cuBLAS product";
    let (m, k, n) = row_major_dims(WHO, a, ta, b, tb, c, c_row)?;
    let (ac, bc) = (a.shape()[1], b.shape()[1]);
    require_cublas()?;
    let dev = device_of(WHO, a)?;
    let (pa, pb) = (read_ptr(WHO, a, "a", &dev)?, read_ptr(WHO, b, "b", &dev)?);
    let pc = write_ptr(WHO, c, "c", &dev)? + (c_row * n * a.dtype().size()) as u64;
    let (mi, ni, ki) = (
        dim_i32(v, "N", n)?,
        dim_i32(v, "M", m)?,
        dim_i32(v, "K", k)?,
    );
    let (lda, ldb, ldc) = (
        dim_i32(v, "ld", bc)?,
        dim_i32(v, "ld", ac)?,
        dim_i32(v, "ld", n)?,
    );
    dev.ctx
        .bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent (before cuBLAS)", e))?;
    let mut map = lock_state();
    let st = DeviceState::get(&mut map, &dev)?;
    let h = st.blas(&dev)?;
    let dt = a.dtype();
    // SAFETY: the three buffers are live device allocations of the sizes checked above.
    let status = unsafe {
        gemm_ex(
            h,
            (blas_op(tb), blas_op(ta)),
            (mi, ni, ki),
            (pb, lda),
            (pa, ldb),
            (pc, ldc),
            dt,
        )
    };
    check_cb(status, || {
        format!(
            "cublasGemmEx ({dt} M={m} N={n} K={k}, a{} b{})",
            if ta { "ᵀ" } else { "" },
            if tb { "ᵀ" } else { "" }
        )
    })?;
    drop(map);
    dev.after_launch("cublasGemmEx")
}

// ---- cuBLASLt ------------------------------------------------------------------------------------

/// Set one attribute of a matmul descriptor; `T` must be the attribute's C type.
fn desc_attr<T: Copy>(
    desc: &LtDesc,
    attr: lt::cublasLtMatmulDescAttributes_t,
    value: &T,
) -> Result<()> {
    // SAFETY: `desc` is a live descriptor; Lt copies size_of::<T>() bytes from `value`.
    let s = unsafe {
        lt::cublasLtMatmulDescSetAttribute(
            desc.0,
            attr,
            value as *const T as *const c_void,
            size_of::<T>(),
        )
    };
    check_lt(s, || format!("cublasLtMatmulDescSetAttribute({attr:?})"))
}

/// Set one attribute of a heuristic preference; `T` must be the attribute's C type.
fn pref_attr<T: Copy>(
    pref: &LtPref,
    attr: lt::cublasLtMatmulPreferenceAttributes_t,
    value: &T,
) -> Result<()> {
    // SAFETY: as in `desc_attr`.
    let s = unsafe {
        lt::cublasLtMatmulPreferenceSetAttribute(
            pref.0,
            attr,
            value as *const T as *const c_void,
            size_of::<T>(),
        )
    };
    check_lt(s, || {
        format!("cublasLtMatmulPreferenceSetAttribute({attr:?})")
    })
}

/// Descriptors, layouts and the heuristic's first algorithm for one call's key (its epilogue
/// pointers set, since the heuristic reads their alignment).
fn make_plan(handle: lt::cublasLtHandle_t, c: &LtCall, workspace: usize) -> Result<LtPlan> {
    use lt::cublasLtMatmulDescAttributes_t as D;
    use lt::cublasLtMatmulPreferenceAttributes_t as P;
    let key = &c.key;
    let call = key.call;
    let ty = lt_type(key.dtype);
    let layout = |(rows, cols, ld): (u64, u64, i64)| -> Result<LtLayout> {
        let mut raw = std::ptr::null_mut();
        check_lt(
            unsafe { lt::cublasLtMatrixLayoutCreate(&mut raw, ty, rows, cols, ld) },
            || format!("cublasLtMatrixLayoutCreate({rows} x {cols}, ld {ld})"),
        )?;
        Ok(LtLayout(raw))
    };
    let [la, lb, ld] = call.lt_layouts();
    let (a, b, d) = (layout(la)?, layout(lb)?, layout(ld)?);
    let mut raw = std::ptr::null_mut();
    check_lt(
        unsafe {
            lt::cublasLtMatmulDescCreate(
                &mut raw,
                lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                lt::cudaDataType::CUDA_R_32F,
            )
        },
        || "cublasLtMatmulDescCreate".into(),
    )?;
    let desc = LtDesc(raw);
    let op = |t: bool| -> i32 {
        if t {
            cb::cublasOperation_t::CUBLAS_OP_T as i32
        } else {
            cb::cublasOperation_t::CUBLAS_OP_N as i32
        }
    };
    desc_attr(&desc, D::CUBLASLT_MATMUL_DESC_TRANSA, &op(call.transa_t))?;
    desc_attr(&desc, D::CUBLASLT_MATMUL_DESC_TRANSB, &op(call.transb_t))?;
    desc_attr(
        &desc,
        D::CUBLASLT_MATMUL_DESC_EPILOGUE,
        &(key.epilogue.sys() as u32),
    )?;
    if key.epilogue.has_bias() {
        // The bias (and the bias gradient) has the output's type (Lt's default for these
        // types, set explicitly).
        desc_attr(&desc, D::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &(ty as i32))?;
    }
    if key.epilogue.has_aux() {
        // The auxiliary matrix has D's type (Lt's default) and D's leading dimension.
        desc_attr(
            &desc,
            D::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
            &(call.ldc as i64),
        )?;
    }
    set_pointers(&desc, c)?;
    let mut raw = std::ptr::null_mut();
    check_lt(
        unsafe { lt::cublasLtMatmulPreferenceCreate(&mut raw) },
        || "cublasLtMatmulPreferenceCreate".into(),
    )?;
    let pref = LtPref(raw);
    pref_attr(
        &pref,
        P::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
        &(workspace as u64),
    )?;
    // Split-K partial sums only in the f32 compute type (never in place in bf16/f16).
    pref_attr(
        &pref,
        P::CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
        &(lt::cublasLtReductionScheme_t::CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE as u32),
    )?;
    let [al_a, al_b, al_d, _, _] = key.align;
    pref_attr(&pref, P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a)?;
    pref_attr(&pref, P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b)?;
    pref_attr(&pref, P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d)?;
    pref_attr(&pref, P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d)?;
    let mut result = std::mem::MaybeUninit::<lt::cublasLtMatmulHeuristicResult_t>::zeroed();
    let mut count = 0i32;
    let status = unsafe {
        lt::cublasLtMatmulAlgoGetHeuristic(
            handle,
            desc.0,
            a.0,
            b.0,
            d.0,
            d.0,
            pref.0,
            1,
            result.as_mut_ptr(),
            &mut count,
        )
    };
    let none = |why: String| Error::UnsupportedShape {
        op: OP.into(),
        variant: "cublaslt".into(),
        why: format!(
            "cuBLASLt has no algorithm for {} with {} (alignments of A, B, D, bias, aux: \
             {:?} B): {why}",
            describe_call(key.dtype, &call),
            key.epilogue.name(),
            key.align,
        ),
    };
    match status {
        lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS => {}
        lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED => {
            return Err(none(
                "cublasLtMatmulAlgoGetHeuristic returned CUBLAS_STATUS_NOT_SUPPORTED".into(),
            ))
        }
        s => return Err(Error::driver("cublasLtMatmulAlgoGetHeuristic", s)),
    }
    if count < 1 {
        return Err(none(
            "cublasLtMatmulAlgoGetHeuristic returned no algorithm".into(),
        ));
    }
    // SAFETY: count ≥ 1, so Lt wrote the first result.
    let result = unsafe { result.assume_init() };
    if result.state != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Err(none(format!(
            "the heuristic's algorithm has state {:?}",
            result.state
        )));
    }
    Ok(LtPlan {
        desc,
        a,
        b,
        d,
        algo: result.algo,
    })
}

/// The column-major product in the row-major terms of the call: `c[M,N]`, `op(a)` of `K`.
fn describe_call(dt: DType, call: &BlasCall) -> String {
    format!(
        "{dt} M={} N={} K={} (Lt: A{} B{})",
        call.n,
        call.m,
        call.k,
        if call.transa_t { "ᵀ" } else { "" },
        if call.transb_t { "ᵀ" } else { "" }
    )
}

/// Set this call's epilogue pointers on a (cached) descriptor.
fn set_pointers(desc: &LtDesc, c: &LtCall) -> Result<()> {
    use lt::cublasLtMatmulDescAttributes_t as D;
    if c.key.epilogue.has_bias() {
        desc_attr(desc, D::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias)?;
    }
    if c.key.epilogue.has_aux() {
        desc_attr(desc, D::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &c.aux)?;
    }
    Ok(())
}

/// Enqueue one `cublasLtMatmul` on `dev`'s stream (α = 1, β = 0, D written over C): the plan
/// (descriptors, layouts, algorithm) is made on the first call of a key.
fn lt_matmul(dev: &CudaDevice, c: &LtCall) -> Result<()> {
    require_cublaslt()?;
    dev.ctx
        .bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent (before cuBLASLt)", e))?;
    // The lock is held from the plan lookup to the enqueue: the pointers set on the cached
    // descriptor are the ones this call's cublasLtMatmul reads.
    {
        let mut map = lock_state();
        let st = DeviceState::get(&mut map, dev)?;
        let handle = st.lt()?;
        let ws_len = st.workspace(dev)?.len();
        let plan: &LtPlan = match st.plans.entry(c.key) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let plan = e.into_mut();
                set_pointers(&plan.desc, c)?;
                plan
            }
            std::collections::hash_map::Entry::Vacant(e) => e.insert(make_plan(handle, c, ws_len)?),
        };
        let ws = st.workspace.as_ref().expect("allocated above");
        let (pws, _gws) = ws.device_ptr(&dev.stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let status = unsafe {
            lt::cublasLtMatmul(
                handle,
                plan.desc.0,
                &alpha as *const f32 as *const c_void,
                c.a as *const c_void,
                plan.a.0,
                c.b as *const c_void,
                plan.b.0,
                &beta as *const f32 as *const c_void,
                c.d as *const c_void,
                plan.d.0,
                c.d as *mut c_void,
                plan.d.0,
                &plan.algo,
                pws as *mut c_void,
                ws_len,
                dev.stream.cu_stream() as lt::cudaStream_t,
            )
        };
        check_lt(status, || {
            format!(
                "cublasLtMatmul ({}, {})",
                describe_call(c.key.dtype, &c.key.call),
                c.key.epilogue.name()
            )
        })?;
    }
    dev.after_launch("cublasLtMatmul")
}

/// `c = act(a·wᵀ + bias)` through `cublasLtMatmul` with the epilogue fused, on the device's
/// stream.
pub fn run_cublaslt(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let epilogue = LtEpilogue::select(g.bias.is_some(), g.act)?;
    require_cublaslt()?;
    let GemmBufs { dev, a, w, bias, c } = gemm_bufs("cublaslt", g, c)?;
    let (pw, _gw) = w.device_ptr(&dev.stream);
    let (pa, _ga) = a.device_ptr(&dev.stream);
    let pbias = bias.map(|x| x.device_ptr(&dev.stream));
    let (pc, _gc) = c.device_ptr_mut(&dev.stream);
    let bias_ptr = pbias.as_ref().map_or(0u64, |(p, _)| *p);
    // Lt's A is w, its B is a, C and D are c.
    let call = LtCall::new(
        g.dtype(),
        BlasCall::for_gemm(g.m, g.n, g.k),
        epilogue,
        [pw, pa, pc, bias_ptr, 0],
    );
    lt_matmul(&dev, &call)
}

// ---- cuBLASLt's GeLU training epilogues (the MLP's vendor tier) --------------------------------

const LT: &str = "the cuBLASLt product";

fn lt_mismatch(why: String) -> Error {
    Error::ShapeMismatch { op: OP.into(), why }
}

/// Forward with GELU_AUX_BIAS: row-major `h = gelu_tanh(z)` and `z = a·wᵀ + bias` in one
/// product (`a [M,K]`, `w [N,K]`, `bias [N]`, `h` and `z` `[M,N]`, one dtype). Lt's GeLU is the
/// tanh approximation.
pub fn linear_gelu_aux(
    a: &Tensor,
    w: &Tensor,
    bias: &Tensor,
    h: &mut Tensor,
    z: &mut Tensor,
) -> Result<()> {
    let dt = a.dtype();
    let (m, k, n) = row_major_dims(LT, a, false, w, true, h, 0)?;
    like_product(LT, h, "h", m, n, dt)?;
    like_product(LT, z, "z", m, n, dt)?;
    bias_of_product(LT, bias, n, dt)?;
    let dev = device_of(LT, a)?;
    let ptrs = [
        read_ptr(LT, w, "w", &dev)?,
        read_ptr(LT, a, "a", &dev)?,
        write_ptr(LT, h, "h", &dev)?,
        read_ptr(LT, bias, "bias", &dev)?,
        write_ptr(LT, z, "z", &dev)?,
    ];
    let call = LtCall::new(
        dt,
        BlasCall::for_gemm(m, n, k),
        LtEpilogue::GeluAuxBias,
        ptrs,
    );
    lt_matmul(&dev, &call)
}

/// Backward with DGELU_BGRAD: row-major `dz = (g·w) ⊙ gelu_tanh'(z)` (`g [M,K]`, `w [K,N]`, `z`
/// and `dz` `[M,N]`), and dz's column sums (the bias gradient, `N` values) into row `db_row`
/// of `db` (a tensor of rows of `N`). The MLP's `dZ_{l-1} = (dZ_l·W_l) ⊙ gelu'(Z_{l-1})` and
/// `db_{l-1}` in one product.
pub fn dgrad_dgelu(
    g: &Tensor,
    w: &Tensor,
    z: &Tensor,
    dz: &mut Tensor,
    db: &mut Tensor,
    db_row: usize,
) -> Result<()> {
    let dt = g.dtype();
    let (m, k, n) = row_major_dims(LT, g, false, w, false, dz, 0)?;
    like_product(LT, dz, "dz", m, n, dt)?;
    like_product(LT, z, "z", m, n, dt)?;
    let (br, bc) = dims2(LT, db, "db")?;
    if bc != n || db_row >= br || db.dtype() != dt {
        return Err(lt_mismatch(format!(
            "the bias gradient goes to row {db_row} of a {br}x{bc} {} tensor; it has {n} {dt} values",
            db.dtype()
        )));
    }
    let dev = device_of(LT, g)?;
    // Lt's A is w, its B is g, D is dz; the bias gradient runs along D's (column-major) rows,
    // the output features.
    let ptrs = [
        read_ptr(LT, w, "w", &dev)?,
        read_ptr(LT, g, "g", &dev)?,
        write_ptr(LT, dz, "dz", &dev)?,
        write_ptr(LT, db, "db", &dev)? + (db_row * n * dt.size()) as u64,
        read_ptr(LT, z, "z", &dev)?,
    ];
    let call = LtCall::new(dt, BlasCall::for_nn(m, n, k), LtEpilogue::DGeluBGrad, ptrs);
    lt_matmul(&dev, &call)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BLAS semantics on column-major buffers: C = op(A)·op(B), C m×n.
    #[allow(clippy::too_many_arguments)]
    fn colmajor_gemm(
        call: &BlasCall,
        a: &[f64],
        b: &[f64],
        c: &mut [f64],
        m: usize,
        n: usize,
        k: usize,
    ) {
        let opa = |i: usize, p: usize| {
            if call.transa_t {
                a[p + i * call.lda]
            } else {
                a[i + p * call.lda]
            }
        };
        let opb = |p: usize, j: usize| {
            if call.transb_t {
                b[j + p * call.ldb]
            } else {
                b[p + j * call.ldb]
            }
        };
        for j in 0..n {
            for i in 0..m {
                c[i + j * call.ldc] = (0..k).map(|p| opa(i, p) * opb(p, j)).sum();
            }
        }
    }

    fn vals(n: usize, seed: u64) -> Vec<f64> {
        (0..n)
            .map(|i| ((i as u64 * 2654435761 + seed * 97) % 1009) as f64 / 101.0 - 5.0)
            .collect()
    }

    #[test]
    fn the_column_major_call_computes_the_row_major_contract() {
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 2), (7, 4, 1), (5, 9, 13), (16, 3, 8)] {
            let call = BlasCall::for_gemm(m, n, k);
            assert_eq!(
                (call.transa_t, call.transb_t, call.m, call.n, call.k),
                (true, false, n, m, k)
            );
            assert_eq!((call.lda, call.ldb, call.ldc), (k, k, n));
            // The layout rules cuBLAS checks: lda ≥ k when A is transposed, ldb ≥ k when B
            // is not, ldc ≥ m.
            assert!(call.lda >= call.k && call.ldb >= call.k && call.ldc >= call.m);
            let a = vals(m * k, 1); // row-major [M, K]
            let w = vals(n * k, 2); // row-major [N, K]
            let bias = vals(n, 3);
            let mut c = vec![f64::NAN; m * n];
            // Lt's A is w, its B is a.
            colmajor_gemm(&call, &w, &a, &mut c, call.m, call.n, call.k);
            // Lt's bias runs along the rows of the column-major D (length = D's rows).
            let [_, _, (d_rows, d_cols, ldd)] = call.lt_layouts();
            assert_eq!((d_rows, d_cols, ldd), (n as u64, m as u64, n as i64));
            for j in 0..d_cols as usize {
                for i in 0..d_rows as usize {
                    c[i + j * ldd as usize] += bias[i];
                }
            }
            for r in 0..m {
                for col in 0..n {
                    let want: f64 =
                        (0..k).map(|p| a[r * k + p] * w[col * k + p]).sum::<f64>() + bias[col];
                    let got = c[r * n + col];
                    assert!((got - want).abs() < 1e-9, "{m}x{n}x{k} at ({r},{col})");
                }
            }
        }
    }

    #[test]
    fn lt_layouts_describe_the_stored_matrices() {
        let call = BlasCall::for_gemm(127, 255, 63);
        // A = w stored [K, N] (ld K), B = a stored [K, M] (ld K), D = c stored [N, M] (ld N).
        assert_eq!(
            call.lt_layouts(),
            [(63, 255, 63), (63, 127, 63), (255, 127, 255)]
        );
    }

    #[test]
    fn epilogue_follows_bias_and_activation() {
        use Activation::*;
        let sel = |b, a| LtEpilogue::select(b, a).unwrap();
        assert_eq!(sel(false, None), LtEpilogue::Default);
        assert_eq!(sel(true, None), LtEpilogue::Bias);
        assert_eq!(sel(false, GeluTanh), LtEpilogue::Gelu);
        assert_eq!(sel(true, GeluTanh), LtEpilogue::GeluBias);
        for b in [false, true] {
            let e = LtEpilogue::select(b, GeluErf).unwrap_err().to_string();
            assert!(e.contains("gelu-erf") && e.contains("tanh"), "{e}");
        }
        assert!(sel(true, GeluTanh).has_bias() && !sel(false, GeluTanh).has_bias());
        assert_eq!(sel(true, GeluTanh).name(), "CUBLASLT_EPILOGUE_GELU_BIAS");
        assert_eq!(
            sel(true, GeluTanh).sys() as u32,
            lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS as u32
        );
        assert_eq!(sel(false, None).sys() as u32, 1);
    }

    #[test]
    fn alignment_and_plan_keys() {
        assert_eq!(ptr_align(0), 256);
        assert_eq!(ptr_align(0x7f00_0000_0200), 256);
        assert_eq!(ptr_align(0x7f00_0000_0202), 2);
        assert_eq!(ptr_align(0x7f00_0000_0210), 16);
        let k = PlanKey {
            dtype: DType::BF16,
            call: BlasCall::for_gemm(8, 4, 16),
            epilogue: LtEpilogue::Bias,
            align: [256; 5],
        };
        let mut set = std::collections::HashSet::new();
        set.insert(k);
        assert!(set.contains(&k));
        let lda = BlasCall { lda: 32, ..k.call };
        for other in [
            PlanKey {
                dtype: DType::F16,
                ..k
            },
            PlanKey {
                call: BlasCall::for_gemm(9, 4, 16),
                ..k
            },
            PlanKey {
                call: BlasCall::for_nn(8, 4, 16),
                ..k
            },
            PlanKey { call: lda, ..k },
            PlanKey {
                epilogue: LtEpilogue::GeluBias,
                ..k
            },
            PlanKey {
                align: [256, 2, 256, 256, 256],
                ..k
            },
            PlanKey {
                align: [256, 256, 256, 256, 4],
                ..k
            },
        ] {
            assert!(!set.contains(&other), "{other:?}");
        }
        // A call's key records 256 for the pointers its epilogue has not.
        let c = LtCall::new(
            DType::BF16,
            k.call,
            LtEpilogue::Default,
            [0x200, 0x202, 0x210, 0, 0],
        );
        assert_eq!(c.key.align, [256, 2, 16, 256, 256]);
    }

    #[test]
    fn the_nn_call_computes_the_row_major_product_and_the_training_epilogues() {
        // Row-major c[M,N] = g[M,K]·w[K,N] (the MLP's dZ·W), then DGELU_BGRAD's column sums.
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 2), (7, 4, 1), (5, 9, 13)] {
            let call = BlasCall::for_nn(m, n, k);
            assert_eq!((call.transa_t, call.transb_t), (false, false));
            assert!(call.lda >= call.m && call.ldb >= call.k && call.ldc >= call.m);
            let g = vals(m * k, 4);
            let w = vals(k * n, 5);
            let mut c = vec![f64::NAN; m * n];
            colmajor_gemm(&call, &w, &g, &mut c, call.m, call.n, call.k);
            let [_, _, (d_rows, _, _)] = call.lt_layouts();
            // The bias gradient has D's rows: one value per output column of c.
            assert_eq!(d_rows, n as u64);
            for r in 0..m {
                for col in 0..n {
                    let want: f64 = (0..k).map(|p| g[r * k + p] * w[p * n + col]).sum();
                    assert!((c[r * n + col] - want).abs() < 1e-9, "{m}x{n}x{k}");
                }
            }
        }
        for (e, name, sys) in [
            (
                LtEpilogue::GeluAuxBias,
                "CUBLASLT_EPILOGUE_GELU_AUX_BIAS",
                lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
            ),
            (
                LtEpilogue::DGeluBGrad,
                "CUBLASLT_EPILOGUE_DGELU_BGRAD",
                lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DGELU_BGRAD,
            ),
        ] {
            assert!(e.has_bias() && e.has_aux());
            assert_eq!((e.name(), e.sys() as u32), (name, sys as u32));
        }
        assert!(!LtEpilogue::GeluBias.has_aux() && !LtEpilogue::Default.has_bias());
    }

    #[test]
    fn sizes_past_cublas_int_range_are_a_clear_error() {
        assert_eq!(dim_i32("cublas", "K", 63).unwrap(), 63);
        let e = dim_i32("cublas", "K", 1 << 31).unwrap_err().to_string();
        assert!(e.contains("cublas") && e.contains("2^31"), "{e}");
        assert_eq!(workspace_bytes(9), 32 << 20);
        assert_eq!(workspace_bytes(8), 4 << 20);
    }
}
