use kernlab::runtime::comm::{cpu, nccl, Collective, Communicator};
use kernlab::runtime::error::Error;
use kernlab::runtime::tensor::Tensor;
use kernlab::{DType, Device};

const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];
/// One element, an odd count, and one past a power of two.
const LENS: [usize; 3] = [1, 7, 4097];

/// Rank `rank`'s values: distinct per rank and element, never zero, exactly representable in
/// every dtype (small multiples of 1/8), so any misplaced value shows.
fn input(rank: usize, n: usize, salt: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (((i * 7 + rank * 13 + salt * 5) % 61) as f64 - 30.0 + 0.5) / 8.0)
        .collect()
}

fn tensor(v: &[f64], dt: DType) -> Tensor {
    Tensor::from_f64(v, &[v.len()], dt).unwrap()
}

fn rounded(v: &[f64], dt: DType) -> Vec<f64> {
    tensor(v, dt).to_f64_vec().unwrap()
}

/// The sum of every rank's input, in rank order, rounded once to `dt`.
fn sum_of(world: usize, n: usize, dt: DType) -> Vec<f64> {
    let mut s = vec![0.0; n];
    for r in 0..world {
        for (s, x) in s.iter_mut().zip(rounded(&input(r, n, 0), dt)) {
            *s += x;
        }
    }
    rounded(&s, dt)
}

/// all-reduce over 1 to 4 ranks, every dtype, odd lengths: every rank ends with the sum of the
/// inputs rounded once, bit for bit the same on every rank.
#[test]
fn all_reduce_sums_every_ranks_buffer_on_every_rank() {
    for world in 1..=4 {
        for dt in DTYPES {
            for n in LENS {
                let got = cpu::run(world, |c| {
                    let mut t = tensor(&input(c.rank(), n, 0), dt);
                    c.all_reduce(&mut t)?;
                    t.to_f64_vec()
                })
                .unwrap();
                let want = sum_of(world, n, dt);
                for (r, g) in got.iter().enumerate() {
                    assert_eq!(g, &want, "world {world} {dt} n {n} rank {r}");
                }
            }
        }
    }
}

/// reduce-scatter hands rank r block r of the sum; all-gather puts every rank's block in rank
/// order; the two together are an all-reduce.
#[test]
fn reduce_scatter_then_all_gather_is_an_all_reduce() {
    for world in 1..=4 {
        for dt in DTYPES {
            for block in LENS {
                let n = world * block;
                let got = cpu::run(world, |c| {
                    let send = tensor(&input(c.rank(), n, 0), dt);
                    let mut part = Tensor::empty(&[block], dt, &Device::Cpu)?;
                    part.poison_nan()?;
                    c.reduce_scatter(&send, &mut part)?;
                    let mine = part.to_f64_vec()?;
                    let mut whole = Tensor::empty(&[world, block], dt, &Device::Cpu)?;
                    whole.poison_nan()?;
                    c.all_gather(&part, &mut whole)?;
                    Ok((mine, whole.to_f64_vec()?))
                })
                .unwrap();
                let want = sum_of(world, n, dt);
                for (r, (mine, whole)) in got.iter().enumerate() {
                    assert_eq!(mine[..], want[r * block..(r + 1) * block], "{dt} rank {r}");
                    assert_eq!(whole, &want, "world {world} {dt} block {block} rank {r}");
                }
            }
        }
    }
}

/// all-gather of distinct per-rank values: block r of every rank's output is rank r's input.
#[test]
fn all_gather_keeps_rank_order() {
    let (world, block, dt) = (3, 5, DType::BF16);
    let got = cpu::run(world, |c| {
        let send = tensor(&input(c.rank(), block, 1), dt);
        let mut recv = Tensor::empty(&[world * block], dt, &Device::Cpu)?;
        c.all_gather(&send, &mut recv)?;
        recv.to_f64_vec()
    })
    .unwrap();
    for g in got {
        for r in 0..world {
            assert_eq!(
                g[r * block..(r + 1) * block],
                rounded(&input(r, block, 1), dt)
            );
        }
    }
}

/// broadcast from each root: every rank ends with the root's values.
#[test]
fn broadcast_copies_the_roots_buffer_to_every_rank() {
    for world in 1..=4 {
        for root in 0..world {
            let got = cpu::run(world, |c| {
                let mut t = tensor(&input(c.rank(), 9, 2), DType::F16);
                c.broadcast(&mut t, root)?;
                t.to_f64_vec()
            })
            .unwrap();
            let want = rounded(&input(root, 9, 2), DType::F16);
            assert!(got.iter().all(|g| g == &want), "world {world} root {root}");
        }
    }
}

/// send/recv around a ring, twice: each rank receives its left neighbour's values, in the order
/// they were sent.
#[test]
fn send_and_recv_pass_values_around_a_ring_in_order() {
    for world in 1..=4 {
        let got = cpu::run(world, |c| {
            let (me, right, left) = (
                c.rank(),
                (c.rank() + 1) % world,
                (c.rank() + world - 1) % world,
            );
            for salt in 0..2 {
                c.send(&tensor(&input(me, 6, salt), DType::F32), right)?;
            }
            let mut out = vec![];
            for _ in 0..2 {
                let mut t = Tensor::empty(&[6], DType::F32, &Device::Cpu)?;
                c.recv(&mut t, left)?;
                out.push(t.to_f64_vec()?);
            }
            // The same ring in one step a rank.
            let mut t = Tensor::empty(&[6], DType::F32, &Device::Cpu)?;
            c.send_recv(&tensor(&input(me, 6, 2), DType::F32), right, &mut t, left)?;
            out.push(t.to_f64_vec()?);
            Ok(out)
        })
        .unwrap();
        for (r, g) in got.iter().enumerate() {
            let left = (r + world - 1) % world;
            assert_eq!(g[0], input(left, 6, 0), "world {world} rank {r}");
            assert_eq!(g[1], input(left, 6, 1), "world {world} rank {r}");
            assert_eq!(g[2], input(left, 6, 2), "world {world} rank {r}");
        }
    }
}

fn comm_err(e: Error) -> String {
    assert!(matches!(e, Error::Comm { .. }), "{e:?}");
    e.to_string()
}

/// A rank that fails before a collective makes the others' collective fail, naming it, instead
/// of leaving them waiting; ranks that disagree about the collective, its dtype, its size or
/// its root fail on every rank.
#[test]
fn a_rank_that_leaves_or_disagrees_fails_the_group_instead_of_hanging() {
    let e = cpu::run(3, |c| {
        if c.rank() == 1 {
            return Err(Error::Invalid("rank 1 gave up".into()));
        }
        let mut t = tensor(&[1.0, 2.0], DType::F32);
        c.all_reduce(&mut t)
    })
    .unwrap_err();
    let msg = comm_err(e);
    assert!(msg.contains("rank 1 left the group"), "{msg}");

    let results: Vec<String> = (0..2)
        .map(|case| {
            let e = cpu::run(2, |c| {
                let mut t = tensor(&[1.0; 4], DType::F32);
                match (case, c.rank()) {
                    (0, 1) => {
                        let mut h = tensor(&[1.0; 4], DType::BF16);
                        c.all_reduce(&mut h)
                    }
                    (0, _) => c.all_reduce(&mut t),
                    (_, r) => c.broadcast(&mut t, r),
                }
            })
            .unwrap_err();
            comm_err(e)
        })
        .collect();
    assert!(
        results[0].contains("bf16") && results[0].contains("f32"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("broadcast from rank 0") && results[1].contains("rank 1"),
        "{}",
        results[1]
    );

    let e = cpu::run(2, |c| {
        let mut t = tensor(&vec![1.0; 3 + c.rank()], DType::F32);
        c.all_reduce(&mut t)
    })
    .unwrap_err();
    let msg = comm_err(e);
    assert!(msg.contains("3 elements") && msg.contains('4'), "{msg}");
}

/// Bad arguments on a rank's own side: clear errors naming the rank and the call.
#[test]
fn bad_arguments_are_clear_errors() {
    assert!(cpu::group(0).is_err());
    let e = cpu::run(2, |c| {
        let send = tensor(&[1.0; 5], DType::F32);
        let mut recv = tensor(&[0.0; 2], DType::F32);
        c.reduce_scatter(&send, &mut recv)
    })
    .unwrap_err();
    let msg = comm_err(e);
    assert!(
        msg.contains("rank 0, reduce-scatter") && msg.contains("2 blocks"),
        "{msg}"
    );
    let e = cpu::run(2, |c| {
        let mut t = tensor(&[1.0], DType::F32);
        c.broadcast(&mut t, 2)
    })
    .unwrap_err();
    assert!(comm_err(e).contains("root 2 is not a rank of this group of 2"));
    let e = cpu::run(2, |c| {
        if c.rank() == 0 {
            c.send(&tensor(&[1.0; 3], DType::F32), 1)
        } else {
            let mut t = tensor(&[0.0; 2], DType::F32);
            c.recv(&mut t, 0)
        }
    })
    .unwrap_err();
    let msg = comm_err(e);
    assert!(
        msg.contains("rank 0 sent 3 elements of f32, but buf takes 2"),
        "{msg}"
    );
    let e = cpu::run(1, |c| {
        let mut t = Tensor::empty_strided(&[2, 2], &[4, 1], DType::F32, &Device::Cpu)?;
        c.all_reduce(&mut t)
    })
    .unwrap_err();
    assert!(comm_err(e).contains("contiguous"));
}

/// nccl-tests' bus-bandwidth factors.
#[test]
fn bus_factors_follow_nccl_tests() {
    let f = |c: Collective, n| c.bus_factor(n);
    assert_eq!(f(Collective::AllReduce, 1), 0.0);
    assert_eq!(f(Collective::AllReduce, 8), 1.75);
    assert_eq!(f(Collective::ReduceScatter, 4), 0.75);
    assert_eq!(f(Collective::AllGather, 2), 0.5);
    assert_eq!(f(Collective::Broadcast, 8), 1.0);
    let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["all-reduce", "reduce-scatter", "all-gather", "broadcast"]
    );
}

/// Where NCCL loads, `describe` names its version and file; where it does not, the error says
/// where kernlab looked and how to point it at the library.
#[test]
fn nccl_names_its_version_or_says_how_to_install_it() {
    match nccl::describe() {
        Ok(d) => assert!(d.starts_with("NCCL 2.") && d.contains("libnccl"), "{d}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains("libnccl.so.2") && msg.contains("KERNLAB_NCCL"),
                "{msg}"
            );
        }
    }
}

/// Through NCCL over every GPU here (one rank on a one-GPU machine): each collective and the
/// ring's send/recv give what the CPU backend gives for the same inputs, bit for bit where
/// nothing is summed, and within one rounding of the dtype where NCCL sums (it may add in
/// another order than rank order).
#[test]
#[ignore = "needs a CUDA GPU and NCCL: tools/gpu-suite.sh runs it (--include-ignored)"]
fn nccl_collectives_match_the_cpu_backend() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    drop(dev);
    if let Err(e) = nccl::describe() {
        panic!("a GPU is here but {e}");
    }
    let gpus = kernlab::runtime::device::cuda_probe().unwrap();
    for dt in DTYPES {
        let block = 4097;
        let n = gpus * block;
        let run = |c: &mut dyn Communicator| -> kernlab::Result<Vec<Vec<f64>>> {
            let dev = c.device();
            let on = |v: &[f64]| tensor(v, dt).to_device(&dev);
            let (me, world) = (c.rank(), c.world());
            let mut all = on(&input(me, n, 0))?;
            c.all_reduce(&mut all)?;
            let mut part = Tensor::empty(&[block], dt, &dev)?;
            c.reduce_scatter(&on(&input(me, n, 0))?, &mut part)?;
            let mut whole = Tensor::empty(&[n], dt, &dev)?;
            c.all_gather(&on(&input(me, block, 1))?, &mut whole)?;
            let mut b = on(&input(me, 33, 2))?;
            c.broadcast(&mut b, world - 1)?;
            let mut got = Tensor::empty(&[9], dt, &dev)?;
            c.send_recv(
                &on(&input(me, 9, 3))?,
                (me + 1) % world,
                &mut got,
                (me + world - 1) % world,
            )?;
            [all, part, whole, b, got]
                .iter()
                .map(|t| t.to_f64_vec())
                .collect()
        };
        let want = cpu::run(gpus, |c| run(c)).unwrap();
        let got = nccl::run(gpus, |c| run(c)).unwrap();
        let tol = match dt {
            DType::F32 => 1e-6,
            _ => 1e-2,
        };
        for (r, (g, w)) in got.iter().zip(&want).enumerate() {
            for (i, (g, w)) in g.iter().zip(w).enumerate() {
                let summed = i < 2;
                for (x, y) in g.iter().zip(w) {
                    let ok = if summed {
                        (x - y).abs() <= tol * y.abs().max(1.0)
                    } else {
                        x == y
                    };
                    assert!(ok, "{dt} rank {r} result {i}: {x} against {y}");
                }
            }
        }
    }
}

/// `kernlab bench collectives` over NCCL on every GPU here: validated, timed, one row a size.
#[test]
#[ignore = "needs a CUDA GPU and NCCL: tools/gpu-suite.sh runs it (--include-ignored)"]
fn bench_collectives_runs_over_nccl_on_every_gpu_here() {
    if crate::common::cuda().is_none() {
        return;
    }
    let gpus = kernlab::runtime::device::cuda_probe().unwrap();
    let out = crate::common::run_cli(&[
        "bench",
        "collectives",
        "--bytes",
        "2^12,2^20",
        "--iters",
        "3",
        "--dtype",
        "bf16",
    ])
    .unwrap();
    assert!(
        out.contains(&format!("nccl over {gpus} rank(s), bf16")),
        "{out}"
    );
    for c in ["all-reduce", "reduce-scatter", "all-gather"] {
        assert_eq!(out.matches(&format!("│ {c} ")).count(), 2, "{c}: {out}");
    }
}
