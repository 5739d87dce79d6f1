//! Each kind end to end: the real binary against moto (and the fake API server), an estate seeded, evacuated, recovered.

pub mod asg;
pub mod batch;
pub mod db;
pub mod db_cache;
pub mod ecs_lambda;
pub mod eks;
pub mod events;
pub mod karpenter;
pub mod nat;
pub mod pace;
pub mod vpc_endpoint;
pub mod zonal_shift;
