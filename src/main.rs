//! The `kernlab` binary: everything is in `kernlab::cli`.

fn main() {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = kernlab::cli::run(std::env::args_os(), &mut stdout) {
        // clap's own errors (and --help / --version) print themselves, with their exit code.
        if let Some(ce) = e.downcast_ref::<clap::Error>() {
            ce.exit();
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
