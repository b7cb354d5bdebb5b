//! The CPU backend: the ranks are threads of one process, the tensors CPU tensors. A test
//! backend (module docs of [`super`]): every collective is a deposit by each rank, a barrier,
//! each rank's own reading of every deposit, and a second barrier before the slots are used
//! again. Sums are taken in f64 in rank order and rounded once, so every rank gets the same
//! bits. Point-to-point transfers go through one queue per (sender, receiver).

use super::{Args, Communicator};
use crate::runtime::device::Device;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::{CpuData, Tensor};
use half::{bf16, f16};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

const BACKEND: &str = "cpu";

/// What one rank put in for the collective under way.
struct Deposit {
    /// The collective, and its root where it has one: every rank must be in the same one.
    what: String,
    dtype: DType,
    values: Vec<f64>,
}

struct State {
    slots: Vec<Option<Deposit>>,
    /// Ranks at the barrier now, and how many barriers the group has passed.
    arrived: usize,
    generation: u64,
    /// Why the group can no longer communicate: ranks disagreed about a collective.
    broken: Option<String>,
    /// The ranks that have left the group (their communicator was dropped).
    left: Vec<bool>,
    /// Point-to-point messages, one queue per (from, to).
    mail: Vec<VecDeque<(DType, Vec<f64>)>>,
}

struct Group {
    world: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A rank that panicked while holding the lock left no half-made change that matters
        // more than its absence, which `broken` reports.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One rank of a group of threads; made by [`group`] or [`run`].
pub struct CpuComm {
    rank: usize,
    group: Arc<Group>,
}

/// `world` communicators of one group, rank 0 first; hand each to its own thread.
pub fn group(world: usize) -> Result<Vec<CpuComm>> {
    if world == 0 {
        return Err(Error::Invalid("a group needs at least one rank".into()));
    }
    let group = Arc::new(Group {
        world,
        state: Mutex::new(State {
            slots: (0..world).map(|_| None).collect(),
            arrived: 0,
            generation: 0,
            broken: None,
            left: vec![false; world],
            mail: (0..world * world).map(|_| VecDeque::new()).collect(),
        }),
        changed: Condvar::new(),
    });
    Ok((0..world)
        .map(|rank| CpuComm {
            rank,
            group: group.clone(),
        })
        .collect())
}

/// Run `f` on `world` threads, one rank each, and return each rank's result in rank order, or
/// the first rank's error (in rank order) when any failed.
pub fn run<T: Send>(world: usize, f: impl Fn(&mut CpuComm) -> Result<T> + Sync) -> Result<Vec<T>> {
    super::on_threads(group(world)?, f)
}

impl Drop for CpuComm {
    /// A rank that leaves while others wait on it would leave them waiting forever: it is
    /// marked as gone, and a collective, or a receive from it with nothing queued, fails
    /// saying so.
    fn drop(&mut self) {
        let mut s = self.group.lock();
        s.left[self.rank] = true;
        self.group.changed.notify_all();
    }
}

impl CpuComm {
    fn args<'a>(&self, what: &'a str) -> Args<'a> {
        Args {
            backend: BACKEND,
            rank: self.rank,
            world: self.group.world,
            what,
        }
    }

    /// Wait until every rank has reached this barrier.
    fn barrier<'g>(
        &'g self,
        a: &Args,
        mut s: MutexGuard<'g, State>,
    ) -> Result<MutexGuard<'g, State>> {
        let g = &*self.group;
        if let Some(why) = unusable(&s) {
            return Err(a.err(why));
        }
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == g.world {
            s.arrived = 0;
            s.generation += 1;
            g.changed.notify_all();
            return Ok(s);
        }
        loop {
            s = g.changed.wait(s).unwrap_or_else(|e| e.into_inner());
            if s.generation != generation {
                return Ok(s);
            }
            if let Some(why) = unusable(&s) {
                return Err(a.err(format!("while this rank waited, {why}")));
            }
        }
    }

    /// Put this rank's deposit in, wait for every rank's, check that all are in the same
    /// collective with the same dtype, and return what `read` makes of them (read under the
    /// group's lock); then wait again, so that no rank's next deposit overwrites one another
    /// rank has still to read. Ranks that disagree break the group: each reads the same
    /// deposits, so each fails with the same reason.
    fn exchange<R>(
        &self,
        a: &Args,
        mine: Deposit,
        read: impl FnOnce(&[&Deposit]) -> Result<R>,
    ) -> Result<R> {
        let mut s = self.group.lock();
        s.slots[self.rank] = Some(mine);
        let mut s = self.barrier(a, s)?;
        let outcome = {
            let all: Vec<&Deposit> = s.slots.iter().flatten().collect();
            debug_assert_eq!(all.len(), self.group.world);
            let first = all[0];
            match all
                .iter()
                .enumerate()
                .find(|(_, d)| d.what != first.what || d.dtype != first.dtype)
            {
                Some((r, d)) => Err(a.err(format!(
                    "rank 0 called {} on {}, but rank {r} called {} on {}",
                    first.what, first.dtype, d.what, d.dtype
                ))),
                None => read(&all),
            }
        };
        match outcome {
            Ok(r) => {
                drop(self.barrier(a, s)?);
                Ok(r)
            }
            Err(e) => {
                s.broken.get_or_insert_with(|| e.to_string());
                self.group.changed.notify_all();
                Err(e)
            }
        }
    }

    /// One collective: deposit this rank's `values` (of `dtype`, under the call's description
    /// `what`), check that every rank's deposit holds as many, and return what `read` takes
    /// from all of them.
    fn collective(
        &self,
        a: &Args,
        what: String,
        dtype: DType,
        values: Vec<f64>,
        name: &str,
        read: impl FnOnce(&[&Deposit]) -> Vec<f64>,
    ) -> Result<Vec<f64>> {
        let n = values.len();
        self.exchange(
            a,
            Deposit {
                what,
                dtype,
                values,
            },
            |all| {
                same_len(a, all, n, name)?;
                Ok(read(all))
            },
        )
    }
}

/// Why no collective can complete in this group any more, if so.
fn unusable(s: &State) -> Option<String> {
    if let Some(why) = &s.broken {
        return Some(format!("the group is broken: {why}"));
    }
    s.left
        .iter()
        .position(|&l| l)
        .map(|r| format!("rank {r} left the group"))
}

/// A CPU tensor's values, in f64.
fn values(a: &Args, t: &Tensor, name: &str) -> Result<Vec<f64>> {
    if t.cpu_data().is_none() {
        return Err(a.err(format!(
            "{name} is on {}; the cpu backend takes CPU tensors",
            t.device_kind()
        )));
    }
    a.dense(t, name)?;
    t.to_f64_vec()
}

/// Overwrite a CPU tensor's elements with `v`, rounded to its dtype.
fn store(a: &Args, t: &mut Tensor, name: &str, v: &[f64]) -> Result<()> {
    a.dense(t, name)?;
    let n = t.numel();
    debug_assert_eq!(n, v.len());
    match t.cpu_data_mut() {
        Some(CpuData::F32(d)) => d[..n].iter_mut().zip(v).for_each(|(d, &x)| *d = x as f32),
        Some(CpuData::BF16(d)) => d[..n]
            .iter_mut()
            .zip(v)
            .for_each(|(d, &x)| *d = bf16::from_f64(x)),
        Some(CpuData::F16(d)) => d[..n]
            .iter_mut()
            .zip(v)
            .for_each(|(d, &x)| *d = f16::from_f64(x)),
        None => {
            return Err(a.err(format!(
                "{name} is on the GPU; the cpu backend takes CPU tensors"
            )))
        }
    }
    Ok(())
}

/// The element-wise sum of the deposits' values, in rank order.
fn sum(all: &[&Deposit], range: std::ops::Range<usize>) -> Vec<f64> {
    let mut out = vec![0.0f64; range.len()];
    for d in all {
        for (o, &x) in out.iter_mut().zip(&d.values[range.clone()]) {
            *o += x;
        }
    }
    out
}

/// Every deposit holds `len` values, or the ranks disagree.
fn same_len(a: &Args, all: &[&Deposit], len: usize, name: &str) -> Result<()> {
    match all.iter().position(|d| d.values.len() != len) {
        Some(r) => Err(a.err(format!(
            "{name} has {len} elements here but {} on rank {r}",
            all[r].values.len()
        ))),
        None => Ok(()),
    }
}

impl Communicator for CpuComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world(&self) -> usize {
        self.group.world
    }

    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn device(&self) -> Device {
        Device::Cpu
    }

    fn all_reduce(&mut self, buf: &mut Tensor) -> Result<()> {
        let a = self.args("all-reduce");
        let mine = values(&a, buf, "buf")?;
        let n = mine.len();
        let what = a.what.to_string();
        let total = self.collective(&a, what, buf.dtype(), mine, "buf", |all| sum(all, 0..n))?;
        store(&a, buf, "buf", &total)
    }

    fn reduce_scatter(&mut self, send: &Tensor, recv: &mut Tensor) -> Result<()> {
        let a = self.args("reduce-scatter");
        a.blocks(send, recv, ("send", "recv"))?;
        let mine = values(&a, send, "send")?;
        let (block, r) = (recv.numel(), self.rank);
        let what = a.what.to_string();
        let part = self.collective(&a, what, send.dtype(), mine, "send", |all| {
            sum(all, r * block..(r + 1) * block)
        })?;
        store(&a, recv, "recv", &part)
    }

    fn all_gather(&mut self, send: &Tensor, recv: &mut Tensor) -> Result<()> {
        let a = self.args("all-gather");
        a.blocks(recv, send, ("recv", "send"))?;
        let mine = values(&a, send, "send")?;
        let what = a.what.to_string();
        let whole = self.collective(&a, what, send.dtype(), mine, "send", |all| {
            all.iter().flat_map(|d| d.values.iter().copied()).collect()
        })?;
        store(&a, recv, "recv", &whole)
    }

    fn broadcast(&mut self, buf: &mut Tensor, root: usize) -> Result<()> {
        let a = self.args("broadcast");
        a.peer(root, "root")?;
        let mine = values(&a, buf, "buf")?;
        // The root is part of the call: ranks naming different roots disagree.
        let what = format!("broadcast from rank {root}");
        let theirs = self.collective(&a, what, buf.dtype(), mine, "buf", |all| {
            all[root].values.clone()
        })?;
        store(&a, buf, "buf", &theirs)
    }

    fn send(&mut self, buf: &Tensor, peer: usize) -> Result<()> {
        let a = self.args("send");
        a.peer(peer, "peer")?;
        let v = values(&a, buf, "buf")?;
        let world = self.group.world;
        let mut s = self.group.lock();
        if let Some(why) = &s.broken {
            return Err(a.err(format!("the group is broken: {why}")));
        }
        if s.left[peer] {
            return Err(a.err(format!("rank {peer} has left the group")));
        }
        s.mail[self.rank * world + peer].push_back((buf.dtype(), v));
        self.group.changed.notify_all();
        Ok(())
    }

    fn recv(&mut self, buf: &mut Tensor, peer: usize) -> Result<()> {
        let a = self.args("recv");
        a.peer(peer, "peer")?;
        a.dense(buf, "buf")?;
        if buf.cpu_data().is_none() {
            return Err(a.err("buf is on the GPU; the cpu backend takes CPU tensors"));
        }
        let world = self.group.world;
        let mut s = self.group.lock();
        let (dtype, v) = loop {
            if let Some(m) = s.mail[peer * world + self.rank].pop_front() {
                break m;
            }
            if let Some(why) = &s.broken {
                return Err(a.err(format!(
                    "nothing from rank {peer}, and the group is broken: {why}"
                )));
            }
            if s.left[peer] {
                return Err(a.err(format!(
                    "rank {peer} left the group without sending what this rank waits for"
                )));
            }
            s = self
                .group
                .changed
                .wait(s)
                .unwrap_or_else(|e| e.into_inner());
        };
        drop(s);
        if dtype != buf.dtype() || v.len() != buf.numel() {
            return Err(a.err(format!(
                "rank {peer} sent {} elements of {dtype}, but buf takes {} of {}",
                v.len(),
                buf.numel(),
                buf.dtype()
            )));
        }
        store(&a, buf, "buf", &v)
    }

    fn send_recv(
        &mut self,
        send: &Tensor,
        to: usize,
        recv: &mut Tensor,
        from: usize,
    ) -> Result<()> {
        // Sends are queued here, never waiting on the receiver.
        self.send(send, to)?;
        self.recv(recv, from)
    }
}
