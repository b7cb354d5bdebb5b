//! The build's identity, `KERNLAB_BUILD_ID`: a hash of the sources the kernels and their
//! launchers come from (src/, kernels/, the manifest and the lock file). The command line and
//! the Python package both carry it, so that `bench --torch` can refuse a package built from
//! other sources (see baselines/kernlab_baselines/package.py).

use std::path::{Path, PathBuf};

const ROOTS: [&str; 4] = ["src", "kernels", "Cargo.toml", "Cargo.lock"];

fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for e in entries.flatten() {
            files(&e.path(), out);
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
}

fn main() {
    let mut all = Vec::new();
    for root in ROOTS {
        println!("cargo:rerun-if-changed={root}");
        files(Path::new(root), &mut all);
    }
    all.sort();
    // FNV-1a, 64 bits, over each file's path and contents (lengths between, so that moving
    // bytes from one file to the next changes the hash).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes
            .iter()
            .chain((bytes.len() as u64).to_le_bytes().iter())
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for f in &all {
        eat(f.to_string_lossy().replace('\\', "/").as_bytes());
        eat(&std::fs::read(f).unwrap_or_default());
    }
    println!("cargo:rustc-env=KERNLAB_BUILD_ID={h:016x}");
}
