//! azevac: the control-plane evacuation of an AWS Availability Zone, and its exact reversal.
//!
//! The binary (`main.rs`) only parses flags and maps errors to exit codes; everything it does is
//! reachable from here so that the integration tests and the demo seeder drive the same code.

pub mod app;
pub mod aws;
pub mod cli;
pub mod commands;
pub mod engine;
pub mod error;
pub mod journal;
pub mod model;
pub mod plugins;
pub mod process;
pub mod report;

pub use error::{Error, Result};
