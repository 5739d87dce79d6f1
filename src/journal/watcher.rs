//! The watcher's lease: which `azevac watch` acts for a region, as one item in the journal table.
//! Any number of watchers may run (in other regions, accounts or hosts, for static stability);
//! exactly one holds the lease and acts, the others stand by and read it.
//!
//! The item lives in the partition `#watcher` (sort key: the region watched), with no
//! `resource_type`, so the type index never lists it and no reader of records sees it. Its holder
//! renews it every third of the lease. A holder stops acting a quarter of a lease before its lease
//! runs out by its own clock; a standby takes the lease over only a quarter of a lease after it ran
//! out by the item's clock: between the two lies half a lease, for clock skew and the call in flight.
//! A takeover inherits the zone the lapsed holder was following, so no evacuation is forgotten.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;

use super::record::{epoch_seconds, n, s};
use super::{Journal, PK, SK};
use crate::{Error, Result};

/// The partition the watchers' lease items are in.
pub const WATCHER_PARTITION: &str = "#watcher";

/// What a watcher's lease item says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Watcher {
    /// The region watched (the item's sort key).
    pub region: String,
    /// The holder's run ID.
    pub holder: String,
    /// Who runs it (the STS caller ARN).
    pub caller: String,
    /// The queue it reads.
    pub queue: String,
    /// When it took the lease, in seconds since the epoch.
    pub since: u64,
    /// When the lease runs out unless renewed, in seconds since the epoch.
    pub expires_at: u64,
    /// When it last heard from the queue (a receive that answered), in seconds since the epoch.
    pub heard_at: Option<u64>,
    /// The AZ ID it is following (evacuated on AWS's autoshift, not yet recovered).
    pub following: Option<String>,
    /// What it is doing now that keeps it from its queue ("evacuating use1-az2"), if anything.
    pub acting: Option<String>,
    /// How long its lease lasts, in seconds (0: an item written before this was kept).
    pub lease: u64,
}

impl Watcher {
    /// Whether the lease has run out, with the standby's margin of a quarter of `lease` (none for
    /// a lease given up).
    pub fn lapsed(&self, lease: Duration) -> bool {
        self.released() || self.expires_at + (lease / 4).as_secs().max(1) < epoch_seconds()
    }

    /// Whether its holder gave the lease up (stopped cleanly).
    pub fn released(&self) -> bool {
        self.expires_at == 0
    }

    /// Whether it is acting now (its lease has not run out).
    pub fn active(&self) -> bool {
        !self.released() && self.expires_at >= epoch_seconds()
    }

    fn item(&self) -> HashMap<String, AttributeValue> {
        let mut item = HashMap::from([
            (PK.to_owned(), s(WATCHER_PARTITION)),
            (SK.to_owned(), s(&self.region)),
            ("holder".to_owned(), s(&self.holder)),
            ("caller".to_owned(), s(&self.caller)),
            ("queue".to_owned(), s(&self.queue)),
            ("since".to_owned(), n(self.since)),
            ("expires_at".to_owned(), n(self.expires_at)),
        ]);
        if let Some(heard) = self.heard_at {
            item.insert("heard_at".to_owned(), n(heard));
        }
        if let Some(zone) = &self.following {
            item.insert("following".to_owned(), s(zone));
        }
        if let Some(acting) = &self.acting {
            item.insert("acting".to_owned(), s(acting));
        }
        if self.lease > 0 {
            item.insert("lease".to_owned(), n(self.lease));
        }
        item
    }

    fn parse(item: &HashMap<String, AttributeValue>) -> Option<Watcher> {
        let text = |key: &str| item.get(key).and_then(|v| v.as_s().ok()).cloned();
        let number = |key: &str| item.get(key).and_then(|v| v.as_n().ok()).and_then(|n| n.parse().ok());
        Some(Watcher {
            region: text(SK)?,
            holder: text("holder")?,
            caller: text("caller").unwrap_or_default(),
            queue: text("queue").unwrap_or_default(),
            since: number("since").unwrap_or_default(),
            expires_at: number("expires_at")?,
            heard_at: number("heard_at"),
            following: text("following"),
            acting: text("acting"),
            lease: number("lease").unwrap_or_default(),
        })
    }
}

/// What a claim on the lease came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This watcher holds the lease (taken, taken over, or already its own): as written.
    Held(Watcher),
    /// Another watcher holds it.
    Standby(Watcher),
}

impl Journal {
    /// The lease item of the watcher of `region`, if any (strongly consistent).
    pub async fn watcher(&self, region: &str) -> Result<Option<Watcher>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .consistent_read(true)
            .key(PK, s(WATCHER_PARTITION))
            .key(SK, s(region))
            .send()
            .await
            .map_err(|e| self.map_err("dynamodb:GetItem", e))?;
        Ok(out.item().and_then(Watcher::parse))
    }

    /// Claim the lease for `me` (its `expires_at` is set here, `lease` from now): taken when there
    /// is none, kept when it is already `me`'s, taken over when the holder's has lapsed. The zone
    /// followed is the item's, never `me`'s: what a watcher remembers from a lease it lost may be
    /// stale. Conditional on the item read, so that of two standbys taking over at once exactly one
    /// wins.
    pub async fn claim_watch(&self, me: &Watcher, lease: Duration) -> Result<Claim> {
        let current = self.watcher(&me.region).await?;
        let mut mine = Watcher {
            expires_at: epoch_seconds() + lease.as_secs(),
            lease: lease.as_secs(),
            following: current.as_ref().and_then(|held| held.following.clone()),
            acting: None,
            ..me.clone()
        };
        let put = self.client.put_item().table_name(&self.table);
        let put = match &current {
            None => put.condition_expression("attribute_not_exists(#pk)"),
            Some(held) if held.holder == me.holder => put
                .condition_expression("holder = :holder")
                .expression_attribute_values(":holder", s(&me.holder)),
            Some(held) if held.lapsed(lease) => {
                mine.since = epoch_seconds();
                put.condition_expression("holder = :old AND expires_at = :old_expires")
                    .expression_attribute_values(":old", s(&held.holder))
                    .expression_attribute_values(":old_expires", n(held.expires_at))
            }
            Some(held) => return Ok(Claim::Standby(held.clone())),
        };
        let put = match &current {
            None => put.expression_attribute_names("#pk", PK),
            Some(_) => put,
        };
        match put.set_item(Some(mine.item())).send().await {
            Ok(_) => Ok(Claim::Held(mine)),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                // Another watcher claimed it between the read and the write: it holds it now.
                match self.watcher(&me.region).await? {
                    Some(held) if held.holder != me.holder => Ok(Claim::Standby(held)),
                    _ => Err(Error::BadInput(
                        "the watcher's lease changed while it was claimed; run azevac watch again".into(),
                    )),
                }
            }
            Err(e) => Err(self.map_err("dynamodb:PutItem", e)),
        }
    }

    /// Renew `me`'s lease, `lease` from now, writing what it says (heard, following). `Ok(false)`:
    /// the lease is no longer `me`'s (it lapsed and was taken over, or was released).
    pub async fn renew_watch(&self, me: &Watcher, lease: Duration) -> Result<bool> {
        let mine = Watcher {
            expires_at: epoch_seconds() + lease.as_secs(),
            lease: lease.as_secs(),
            ..me.clone()
        };
        let out = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(mine.item()))
            .condition_expression("holder = :holder")
            .expression_attribute_values(":holder", s(&me.holder))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(self.map_err("dynamodb:PutItem", e)),
        }
    }

    /// Give up `me`'s lease (a watcher that stops cleanly): it runs out now, so that a standby
    /// takes over at once. The item stays, with the zone followed, for the next watcher to inherit.
    /// Nothing happens when the lease is no longer `me`'s.
    pub async fn release_watch(&self, me: &Watcher) -> Result<()> {
        let mut released = me.clone();
        released.expires_at = 0;
        let out = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(released.item()))
            .condition_expression("holder = :holder")
            .expression_attribute_values(":holder", s(&me.holder))
            .send()
            .await;
        match out {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(self.map_err("dynamodb:PutItem", e)),
        }
    }
}
