//! The journal's protocol, for every kind: the conformance suite, the engine's rules, kill points, interleavings, leases, faults and limits.

pub mod conformance;
pub mod engine;
pub mod hardening;
pub mod interleave;
pub mod lease;
pub mod limits;
pub mod promise;
pub mod reliability;
pub mod sdk_errors;
