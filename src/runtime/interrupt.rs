//! Ctrl-C for long runs: the first SIGINT asks the run to stop after the point it is measuring
//! (so the finished points are kept and written), a second one stops the process at once.
//! Nothing is installed until a command asks ([`install`]); library users keep the default.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Async-signal-safe: an atomic store, then the default action for the next one.
    REQUESTED.store(true, Ordering::SeqCst);
    // SAFETY: signal() with SIG_DFL is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Catch the first Ctrl-C (SIGINT) from now on: [`requested`] turns true and the run stops
/// after its current point; a second Ctrl-C ends the process as usual.
pub fn install() {
    REQUESTED.store(false, Ordering::SeqCst);
    // SAFETY: the handler only stores to an atomic and resets the disposition.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
}

/// Whether Ctrl-C was pressed since [`install`].
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Mark an interrupt as requested (tests of the interrupted path).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}
