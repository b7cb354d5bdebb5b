//! Print the PTX of one kernel: `cargo run --example dump_ptx -- softmax.cu sm_90a SYMBOL`;
//! with a fourth argument `--module`, the whole module's PTX (loadable by cuModuleLoadData).
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let src = kernlab::kernels::ALL
        .iter()
        .find(|s| s.file == a[1])
        .expect("file");
    let c = kernlab::device::nvrtc::compile(
        src,
        &a[2],
        &kernlab::device::nvrtc::default_options(&a[2]),
        &a[3],
    )
    .unwrap();
    if a.get(4).is_some_and(|f| f == "--module") {
        println!("{}", c.ptx);
    } else {
        println!(
            "{}",
            kernlab::device::nvrtc::ptx_entry_body(&c.ptx, &a[3]).unwrap()
        );
    }
    eprintln!("{:?}", c.ptxas_info(&a[3]));
}
