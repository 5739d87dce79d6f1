//! What the whole process shares, below every layer: the lines it writes to stderr (`say!`, the
//! JSON events of `--log-format json`) and the signals it takes (Ctrl-C, SIGTERM).

pub mod events;
pub mod interrupt;
