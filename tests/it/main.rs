//! The integration tests, one binary: the real azevac binary against moto server (each test has
//! its own: started from nothing, or forked from scripts/moto_pool.py under scripts/test), the real kube client against the in-process fake API server. One binary links and
//! compiles the shared harness once, and its tests run side by side instead of one binary at a time.

mod common;

mod accounts;
mod apply;
mod as_code;
mod asg;
mod bad_input;
mod batch;
mod conformance;
mod db;
mod db_cache;
mod demo_seed;
mod docs;
mod doctor;
mod ecs_lambda;
mod eks;
mod emulator;
mod engine;
mod events;
mod exposure;
mod hardening;
mod headroom;
mod health;
mod interleave;
mod karpenter;
mod kinds;
mod lease;
mod least_privilege;
mod limits;
mod log_format;
mod nat;
mod notify;
mod output;
mod pace;
mod parsers;
mod promise;
mod registry;
mod reliability;
mod schema;
mod sdk_errors;
mod templates;
mod vpc_endpoint;
mod watch;
mod waves;
mod zonal_shift;
