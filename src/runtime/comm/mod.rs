//! Collectives between ranks: the communication layer, beside the device layer and under the
//! tools. A [`Communicator`] is one rank of a group; every rank of the group calls the same
//! collectives in the same order, each on its own tensors.
//!
//! Backends:
//! - [`nccl`]: one rank a GPU, one thread a rank, in one process, through NCCL.
//! - [`cpu`]: the ranks are threads of one process and the tensors live on the CPU. It is a
//!   test backend: it lets a parallel schedule's arithmetic be checked with 1 to N ranks where
//!   there is no GPU, and is no way to run anything faster. Its sums are taken in f64 in rank
//!   order and rounded once to the tensor's dtype, so every rank gets the same bits.
//!
//! The sizes and rates follow nccl-tests' conventions ([`Collective::bus_factor`]).

pub mod cpu;
pub mod nccl;

use crate::runtime::device::Device;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;

/// The collectives kernlab's parallel schedules use and `bench` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// Every rank ends with the element-wise sum of every rank's buffer.
    AllReduce,
    /// Rank r ends with block r of the sum (the input is `world` equal blocks).
    ReduceScatter,
    /// Every rank ends with every rank's block, in rank order.
    AllGather,
    /// Every rank ends with the root's buffer.
    Broadcast,
}

impl Collective {
    pub const ALL: [Collective; 4] = [
        Collective::AllReduce,
        Collective::ReduceScatter,
        Collective::AllGather,
        Collective::Broadcast,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all-reduce",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::AllGather => "all-gather",
            Collective::Broadcast => "broadcast",
        }
    }

    /// nccl-tests' bus-bandwidth factor over `world` ranks: bus bandwidth = algorithm bandwidth
    /// (the collective's size ÷ its time) × this. The size is the larger buffer: the all-reduce
    /// buffer, reduce-scatter's input, all-gather's output, the broadcast buffer. The factor
    /// is what each rank's link must carry per byte of that size in a ring (2(n−1)/n for an
    /// all-reduce: a reduce-scatter then an all-gather), so that bus bandwidth reads against
    /// the link's own rate whatever the rank count.
    pub fn bus_factor(self, world: usize) -> f64 {
        let n = world.max(1) as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::ReduceScatter | Collective::AllGather => (n - 1.0) / n,
            Collective::Broadcast => 1.0,
        }
    }
}

/// One rank of a group. Each rank calls the same collectives, in the same order, with tensors
/// of one dtype and matching sizes; a rank that leaves the group (fails or ends) while others
/// wait in a collective makes theirs fail, with an error saying so, rather than hang.
pub trait Communicator: Send {
    /// This rank, 0 ≤ rank < world.
    fn rank(&self) -> usize;
    /// The number of ranks in the group.
    fn world(&self) -> usize;
    /// The backend's name, for reports and errors.
    fn backend(&self) -> &'static str;
    /// Where this rank's tensors live.
    fn device(&self) -> Device;
    /// `buf` ← the element-wise sum of every rank's `buf`.
    fn all_reduce(&mut self, buf: &mut Tensor) -> Result<()>;
    /// `recv` ← block `rank` of the element-wise sum of every rank's `send`, which holds
    /// `world` blocks of `recv`'s size.
    fn reduce_scatter(&mut self, send: &Tensor, recv: &mut Tensor) -> Result<()>;
    /// `recv` ← every rank's `send`, in rank order (`world` blocks of `send`'s size).
    fn all_gather(&mut self, send: &Tensor, recv: &mut Tensor) -> Result<()>;
    /// `buf` ← rank `root`'s `buf`.
    fn broadcast(&mut self, buf: &mut Tensor, root: usize) -> Result<()>;
    /// Hand `buf`'s values to rank `peer`, which takes them with [`Communicator::recv`].
    fn send(&mut self, buf: &Tensor, peer: usize) -> Result<()>;
    /// `buf` ← the values rank `peer` sent, in the order it sent them.
    fn recv(&mut self, buf: &mut Tensor, peer: usize) -> Result<()>;
    /// `send` to rank `to` and `recv` from rank `from` as one step, so that a ring of ranks,
    /// each sending before it receives, does not wait on itself.
    fn send_recv(&mut self, send: &Tensor, to: usize, recv: &mut Tensor, from: usize)
        -> Result<()>;
}

/// The checks every backend makes on its own rank's arguments before it communicates.
pub(crate) struct Args<'a> {
    pub backend: &'static str,
    pub rank: usize,
    pub world: usize,
    pub what: &'a str,
}

impl Args<'_> {
    pub fn err(&self, why: impl Into<String>) -> Error {
        Error::Comm {
            backend: self.backend,
            rank: self.rank,
            what: self.what.to_string(),
            why: why.into(),
        }
    }

    /// A dense tensor with at least one element.
    pub fn dense(&self, t: &Tensor, name: &str) -> Result<()> {
        if !t.is_contiguous() {
            return Err(self.err(format!(
                "{name} must be contiguous (shape {:?}, strides {:?})",
                t.shape(),
                t.strides()
            )));
        }
        if t.numel() == 0 {
            return Err(self.err(format!("{name} has no elements (shape {:?})", t.shape())));
        }
        Ok(())
    }

    /// `big` holds `world` blocks of `small`'s size, in `small`'s dtype.
    pub fn blocks(&self, big: &Tensor, small: &Tensor, names: (&str, &str)) -> Result<()> {
        self.dense(big, names.0)?;
        self.dense(small, names.1)?;
        if big.dtype() != small.dtype() {
            return Err(self.err(format!(
                "{} is {} but {} is {}",
                names.0,
                big.dtype(),
                names.1,
                small.dtype()
            )));
        }
        if big.numel() != self.world * small.numel() {
            return Err(self.err(format!(
                "{} must hold {} blocks (one a rank) of {}'s {} elements, {}, but holds {}",
                names.0,
                self.world,
                names.1,
                small.numel(),
                self.world * small.numel(),
                big.numel()
            )));
        }
        Ok(())
    }

    /// Another rank of the group.
    pub fn peer(&self, peer: usize, role: &str) -> Result<()> {
        if peer >= self.world {
            return Err(self.err(format!(
                "{role} {peer} is not a rank of this group of {}",
                self.world
            )));
        }
        Ok(())
    }
}

/// Run `f` once a communicator, each on its own thread, and return each rank's result in rank
/// order, or the first rank's error (in rank order); a rank's panic is raised again here.
pub(crate) fn on_threads<C: Send, T: Send>(
    comms: Vec<C>,
    f: impl Fn(&mut C) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let results: Vec<Result<T>> = std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = comms
            .into_iter()
            .map(|mut c| s.spawn(move || f(&mut c)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect()
}
