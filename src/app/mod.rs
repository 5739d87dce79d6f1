//! What a run is for, above the engine: runs across accounts, recovery in waves behind alarms,
//! notifications, the watcher's events and health, the exposure report's reads.

pub mod accounts;
pub mod autoshift;
pub mod exposure;
pub mod health;
pub mod notify;
pub mod waves;
