//! What `azevac watch` reads to follow AWS's zonal autoshift: the events ARC publishes (through
//! EventBridge to an SQS queue), and the autoshift state ARC reports, which decides what the
//! watcher does (an event only wakes it).

pub mod arc;
pub mod event;
pub mod queue;
