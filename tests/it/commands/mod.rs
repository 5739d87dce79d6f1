//! The commands as an operator meets them: saved plans, bad input, doctor, exposure and headroom, output, logs, parsers, the output schema.

pub mod apply;
pub mod bad_input;
pub mod doctor;
pub mod exposure;
pub mod headroom;
pub mod log_format;
pub mod output;
pub mod parsers;
pub mod schema;
