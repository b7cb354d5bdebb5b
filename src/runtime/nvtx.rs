//! NVTX ranges, so Nsight Systems, Nsight Compute (`--nvtx`) and any NVTX tool show kernlab's
//! workloads, variants and iterations by name.
//!
//! Two libraries can carry them, tried in this order:
//! - `libnvToolsExt` (NVTX v2, CUDA ≤ 12), through cudarc's `nvtx` layer;
//! - `libnvtx3interop` (CUDA 13, which no longer ships `libnvToolsExt`): the NVTX v3 C API
//!   built as a shared library. kernlab loads it at run time and calls `nvtxRangePushA` /
//!   `nvtxRangePop`.
//!
//! Either one forwards to the tool that injected itself, and does nothing without one. Where
//! neither loads, no range is emitted (and nothing panics); kernlab's own ranges still go to
//! `kernlab profile --trace`.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

type PushFn = unsafe extern "C" fn(*const c_char) -> c_int;
type PopFn = unsafe extern "C" fn() -> c_int;

/// `libnvtx3interop`'s two entry points, with the library kept loaded.
struct Interop {
    _lib: libloading::Library,
    push: PushFn,
    pop: PopFn,
    path: String,
}

enum Backend {
    NvToolsExt,
    Interop(Interop),
    None,
}

/// Where `libnvtx3interop` may be: the loader's own search first, then the CUDA toolkit's
/// usual folders (`$CUDA_HOME`, `$CUDA_PATH`, /usr/local/cuda), as cudarc looks for CUDA's
/// other libraries.
fn interop_candidates() -> Vec<String> {
    let names = ["libnvtx3interop.so.1", "libnvtx3interop.so"];
    let mut dirs: Vec<String> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .flat_map(|d| [format!("{d}/lib64"), format!("{d}/lib")])
        .collect();
    dirs.push("/usr/local/cuda/lib64".into());
    dirs.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    dirs.push("/usr/local/cuda/targets/sbsa-linux/lib".into());
    let mut out: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    for d in dirs {
        out.extend(names.iter().map(|n| format!("{d}/{n}")));
    }
    out
}

fn load_interop() -> Option<Interop> {
    for path in interop_candidates() {
        // SAFETY: loading a shared library runs its initialisers; libnvtx3interop's only set
        // up NVTX's own (no-op until a tool injects itself) state.
        let Ok(lib) = (unsafe { libloading::Library::new(&path) }) else {
            continue;
        };
        // SAFETY: these are the NVTX C API's signatures (nvToolsExt.h): `int
        // nvtxRangePushA(const char*)` and `int nvtxRangePop(void)`.
        let fns = unsafe {
            match (
                lib.get::<PushFn>(b"nvtxRangePushA\0"),
                lib.get::<PopFn>(b"nvtxRangePop\0"),
            ) {
                (Ok(push), Ok(pop)) => Some((*push, *pop)),
                _ => None,
            }
        };
        if let Some((push, pop)) = fns {
            return Some(Interop {
                _lib: lib,
                push,
                pop,
                path,
            });
        }
    }
    None
}

fn backend() -> &'static Backend {
    static B: OnceLock<Backend> = OnceLock::new();
    B.get_or_init(|| {
        // SAFETY: only tries to dlopen the library by its known names.
        if unsafe { cudarc::nvtx::sys::is_culib_present() } {
            Backend::NvToolsExt
        } else if let Some(i) = load_interop() {
            Backend::Interop(i)
        } else {
            Backend::None
        }
    })
}

/// Whether an NVTX library loaded (checked once).
pub fn available() -> bool {
    !matches!(backend(), Backend::None)
}

/// Which library carries the ranges, if any.
pub fn library() -> Option<String> {
    match backend() {
        Backend::NvToolsExt => Some("libnvToolsExt".into()),
        Backend::Interop(i) => Some(i.path.clone()),
        Backend::None => None,
    }
}

/// One line for reports: whether ranges reach NVTX tools.
pub fn describe() -> String {
    match library() {
        Some(lib) => format!(
            "kernlab ranges (workload, iterations) are in --trace, and emitted as NVTX ranges \
             ({lib} loaded): Nsight Systems and `ncu --nvtx` show them"
        ),
        None => "kernlab ranges (workload, iterations) are in --trace only: neither \
                 libnvToolsExt nor libnvtx3interop loaded, so no NVTX ranges are emitted"
            .into(),
    }
}

enum Open {
    NvToolsExt(#[allow(dead_code)] cudarc::nvtx::safe::Range),
    Interop,
}

/// An NVTX range that ends when dropped; a no-op without an NVTX library. Ranges nest per
/// thread (push/pop), so a range cannot move to another thread (it is not `Send`); end them
/// innermost first.
pub struct Range(Option<Open>, std::marker::PhantomData<*const ()>);

/// Start a range named `name` (NUL bytes, which C strings cannot hold, become spaces).
pub fn range(name: &str) -> Range {
    let msg = name.replace('\0', " ");
    match backend() {
        Backend::None => Range(None, std::marker::PhantomData),
        Backend::NvToolsExt => Range(
            Some(Open::NvToolsExt(
                cudarc::nvtx::safe::Event::message(msg).range(),
            )),
            std::marker::PhantomData,
        ),
        Backend::Interop(i) => {
            let Ok(c) = CString::new(msg) else {
                return Range(None, std::marker::PhantomData);
            };
            // SAFETY: a valid NUL-terminated string, read during the call only.
            unsafe { (i.push)(c.as_ptr()) };
            Range(Some(Open::Interop), std::marker::PhantomData)
        }
    }
}

impl Range {
    /// End the range now (dropping it does the same).
    pub fn end(self) {}
}

impl Drop for Range {
    fn drop(&mut self) {
        if let (Some(Open::Interop), Backend::Interop(i)) = (&self.0, backend()) {
            // SAFETY: pops the range this value pushed on this thread.
            unsafe { (i.pop)() };
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_are_safe_with_or_without_the_library() {
        // Either way nothing panics, nested ranges end innermost first, and a name with a
        // NUL byte is accepted.
        let outer = super::range("kernlab test\0range");
        let inner = super::range("inner");
        inner.end();
        outer.end();
        let d = super::describe();
        assert_eq!(super::available(), super::library().is_some());
        assert!(d.contains(if super::available() {
            "emitted as NVTX ranges"
        } else {
            "no NVTX ranges"
        }));
    }

    #[test]
    fn the_interop_library_is_looked_for_where_cuda_keeps_its_libraries() {
        let c = super::interop_candidates();
        assert_eq!(c[0], "libnvtx3interop.so.1");
        assert!(c
            .iter()
            .any(|p| p == "/usr/local/cuda/lib64/libnvtx3interop.so.1"));
    }
}
