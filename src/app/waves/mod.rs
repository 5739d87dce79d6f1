//! Recovering in waves behind alarms: how the waves are sized ([`sizing`]: pure), what gates them
//! and how a plan is cut into them ([`gates`]), and the wave loop itself ([`run`]: wait for the
//! alarms, put a wave back through the engine, bake, stop on an alarm).

pub mod gates;
mod run;
pub mod sizing;

pub use gates::{Cut, Gates, Halt};
pub use run::Waved;
pub use sizing::{cut, order, summary, Mark, Step, Unit, Waves, MOST};
