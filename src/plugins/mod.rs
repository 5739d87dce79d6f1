//! The plugin seam: one file per kind of zonal action. A plugin plans evacuation lines from what it
//! discovers, carries one line out, plans recovery lines from journal records, reverts one line,
//! and may verify and settle. Everything shared — AZ resolution, the journal protocol (write-ahead,
//! locks, leases), concurrency, ordering and reporting — lives in the engine, once.
//!
//! Subnet-placed types (Auto Scaling, ECS, Lambda) implement the smaller [`SubnetService`] and share
//! one adapter ([`subnets::Subnets`]); Kubernetes nodes, Karpenter NodePools, zonal shifts, NAT
//! routes and database failovers implement [`Plugin`] directly.
//!
//! One job a file: [`plugin`] (the trait), [`subnet_service`] (the subnet-placed kinds' trait),
//! [`registry`] (the kinds as data), [`flags`] (each kind's own flags), [`iam`] (what every run
//! needs whatever the kinds), [`expiring`] (what a kind whose changes end by themselves declares),
//! and the modules no kind owns that several share ([`tasks`], [`shifted`], [`kube`], [`wait`],
//! [`tags`], [`crosszone`]).

pub use crate::model::check::Check;
pub use crate::model::headroom::Demand;
pub use crate::model::plan::SubnetLimit;
pub use crate::model::Finding;
pub use crate::model::Resource;

pub mod expiring;
pub mod flags;
pub mod iam;
pub mod plugin;
pub mod registry;
pub mod subnet_service;
pub mod tasks;

pub use flags::{asked_for, flags, to_options, wait_within, CommandFlags, Flags, Options, LONGEST_WAIT_SECONDS};
pub use iam::{ADMIN_IAM_ACTIONS, CORE_IAM_ACTIONS, CORE_SERVICES, OPERATOR_IAM_ACTIONS};
pub use plugin::{Acted, Plugin, Refreshing, Scope, Stage};
pub use registry::{
    kubernetes_types, no_cluster, paced_rates, select, services, types, Constructor, Registration, Setup, REGISTRY,
};
pub use subnet_service::{Evacuation, Place, Presence, SubnetService};

pub mod asg;
pub mod batch;
pub mod crosszone;
pub mod db;
pub mod ecs;
pub mod eks;
pub mod eventbridge;
pub mod karpenter;
pub mod kube;
pub mod lambda;
pub mod nat;
pub mod scheduler;
pub mod shifted;
pub mod subnets;
pub mod tags;
pub mod vpc_endpoint;
pub mod wait;
pub mod zonal_shift;
