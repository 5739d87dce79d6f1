//! The integration tests, one binary: the real azevac binary against moto server (each test has
//! its own: started from nothing, or forked from scripts/moto_pool.py under scripts/test), the real kube client against the in-process fake API server. One binary links and
//! compiles the shared harness once, and its tests run side by side instead of one binary at a time.

mod common;

mod app;
mod commands;
mod docs;
mod protocol;

mod kinds;
