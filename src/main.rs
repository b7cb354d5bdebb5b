//! The `kernlab` binary: everything is in `kernlab::cli`.

use std::io::Write as _;

fn main() {
    // Before any thread starts, and inherited by every process kernlab starts (docs/parallel.md).
    kernlab::runtime::comm::nccl::keep_nvls_off();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = kernlab::cli::run(std::env::args_os(), &mut stdout) {
        // clap's own errors (and --help / --version) print themselves, with their exit code.
        if let Some(ce) = e.downcast_ref::<clap::Error>() {
            ce.exit();
        }
        // The reader of stdout stopped early (`kernlab list | head -1`): the output files are
        // written before the tables (autotune's after its tuning, whatever stdout does); end
        // quietly, with the shell's status for a process a closed pipe stopped (128 + SIGPIPE).
        let broken_pipe = e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        });
        if broken_pipe {
            std::process::exit(141);
        }
        let _ = writeln!(std::io::stderr(), "error: {e:#}");
        std::process::exit(1);
    }
}
