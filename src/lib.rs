//! azevac: the control-plane evacuation of an AWS Availability Zone, and its exact reversal.
//!
//! The binary (`main.rs`) only parses flags and maps errors to exit codes; everything it does is
//! reachable from here so that the integration tests and the demo seeder drive the same code.

pub mod accounts;
pub mod action;
pub mod alarms;
pub mod arn;
pub mod autoshift;
pub mod aws;
pub mod check;
pub mod cli;
pub mod commands;
pub mod crosszone;
pub mod engine;
pub mod error;
pub mod events;
pub mod exposure;
pub mod headroom;
pub mod health;
pub mod interrupt;
pub mod journal;
pub mod model;
pub mod notify;
pub mod pacing;
pub mod plan;
pub mod plugins;
pub mod report;
pub mod stats;
pub mod text;
pub mod topology;
pub mod waves;

pub use error::{Error, Result};
