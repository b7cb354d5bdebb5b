//! NVTX ranges, so Nsight Systems (and any NVTX tool) shows kernlab's workloads, variants and
//! iterations by name. Through cudarc's `nvtx` layer, which loads `libnvToolsExt`; where that
//! library is absent no range is emitted (and nothing panics): kernlab's own ranges still go
//! to `kernlab profile --trace`.

use std::sync::OnceLock;

/// Whether `libnvToolsExt` loads (checked once).
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the library by its known names.
    *OK.get_or_init(|| unsafe { cudarc::nvtx::sys::is_culib_present() })
}

/// One line for reports: whether ranges reach NVTX tools.
pub fn describe() -> &'static str {
    if available() {
        "kernlab ranges (workload, iterations) are in --trace, and emitted as NVTX ranges \
         (libnvToolsExt loaded): Nsight Systems shows them"
    } else {
        "kernlab ranges (workload, iterations) are in --trace only: libnvToolsExt did not \
         load, so no NVTX ranges are emitted"
    }
}

/// An NVTX range that ends when dropped (the guard inside ends it); a no-op without the
/// library.
pub struct Range(#[allow(dead_code)] Option<cudarc::nvtx::safe::Range>);

/// Start a range named `name` (NUL bytes, which C strings cannot hold, become spaces).
pub fn range(name: &str) -> Range {
    if !available() {
        return Range(None);
    }
    let msg = name.replace('\0', " ");
    Range(Some(cudarc::nvtx::safe::Event::message(msg).range()))
}

impl Range {
    /// End the range now (dropping it does the same).
    pub fn end(self) {}
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_are_safe_with_or_without_the_library() {
        // Either way nothing panics, and a name with a NUL byte is accepted.
        let r = super::range("kernlab test\0range");
        r.end();
        assert!(!super::describe().is_empty());
    }
}
