//! Checking: the inputs every variant is validated and timed on, the f64 reference, and the
//! comparison of an output with it. Every tool (bench, sweep, profile, autotune) validates
//! through here before it times anything; the op's descriptor supplies what differs by op.

pub mod compare;
mod inputs;
mod reference;

pub use compare::Check;
pub use inputs::*;
pub use reference::*;
