//! `azevac shift start|list|cancel|extend`'s flags: the zonal-shift kind's own subcommand.

use clap::{Args, Subcommand};

use super::*;
use crate::model::Request;

/// `azevac shift`.
#[derive(Debug, Subcommand)]
pub enum Shift {
    /// Start zonal shifts away from a zone for every managed resource deployed there.
    Start(ShiftStart),
    /// List the active zonal shifts (and practice runs), marking the ones azevac started.
    List(ShiftList),
    /// Cancel the zonal shifts azevac started (and clear their journal records).
    Cancel(ShiftCancel),
    /// Give the zonal shifts azevac started and that are still active a new expiry, `--expires-in`
    /// from now (journalled); never another party's shift, an autoshift or a practice run.
    Extend(ShiftExtend),
}

/// `azevac shift start`.
#[derive(Debug, Args)]
pub struct ShiftStart {
    /// The AZ ID to shift traffic away from, e.g. use1-az2.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: String,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub expiry: crate::plugins::zonal_shift::flags::Expiry,
    /// Why (an incident ticket): in the shifts' comment and the journal.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
}

impl ShiftStart {
    /// The evacuation this is: zonal shifts only.
    pub fn request(&self) -> Request {
        use crate::plugins::zonal_shift::{flags::Options, TYPE};
        Request {
            types: vec![TYPE.to_owned()],
            reason: self.reason.clone(),
            options: crate::plugins::to_options(&Options {
                zonal_shift: true,
                expires_in: Some(self.expiry.expires_in.clone()),
                extend: false,
            }),
            ..Request::default()
        }
    }
}

/// `azevac shift list`.
#[derive(Debug, Args)]
pub struct ShiftList {
    /// Only shifts away from this AZ ID.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
}

/// `azevac shift cancel`.
#[derive(Debug, Args)]
pub struct ShiftCancel {
    /// Only azevac's shifts away from this AZ ID (default: all of them).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
}

/// `azevac shift extend`.
#[derive(Debug, Args)]
pub struct ShiftExtend {
    /// Only azevac's shifts away from this AZ ID (default: the zone azevac's shifts are away from).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub expiry: crate::plugins::zonal_shift::flags::Expiry,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
}

impl ShiftExtend {
    /// The evacuation this is: azevac's zonal shifts in force, extended, nothing started.
    pub fn request(&self) -> Request {
        use crate::plugins::zonal_shift::{flags::Options, TYPE};
        Request {
            types: vec![TYPE.to_owned()],
            options: crate::plugins::to_options(&Options {
                zonal_shift: true,
                expires_in: Some(self.expiry.expires_in.clone()),
                extend: true,
            }),
            ..Request::default()
        }
    }
}

impl ShiftCancel {
    /// The recovery this is: zonal shifts only.
    pub fn request(&self) -> Request {
        Request {
            types: vec![crate::plugins::zonal_shift::TYPE.to_owned()],
            ..Request::default()
        }
    }
}
