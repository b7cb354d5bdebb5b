//! The tools, above ops and check: `bench` (validate, then time, against ceilings), `sweep`,
//! `profile` (CUPTI), `inspect` (PTX/SASS), `tune` (autotune's measuring). They iterate over
//! op descriptors and never match on an op.

pub mod bench;
pub mod collectives;
pub mod compile;
pub mod inspect;
pub mod profile;
pub mod sweep;
pub mod tune;
