//! The watcher's loop: claim the lease (or stand by), hear the queue, and look at ARC's autoshifts
//! when a message asks or a resync is due; release the lease on the way out.

use std::sync::Arc;
use std::time::Instant;

use super::{describe, Watch};
use crate::app::health::State;
use crate::journal::{Claim, Leadership};
use crate::model::text::clean;

impl Watch<'_> {
    /// Turn until a signal stops the watcher.
    pub(super) async fn run(&mut self) {
        let mut standing_by_for: Option<String> = None;
        let mut next_resync = Instant::now();
        // Set at the start and when the lease was just taken: ARC is read before the first long
        // poll, not after it.
        let mut look_now = true;
        self.beacon.ready(match self.orders.dry_run {
            true => "started: reading its queue, changing nothing (--dry-run)",
            false => "started: claiming the watcher's lease",
        });
        while !self.interrupt.requested() {
            self.beacon.beat();
            if !self.orders.dry_run && !self.holds() {
                if let Some(lost) = self.leader.take() {
                    let why = lost.why_lost();
                    lost.stop();
                    self.beacon.set(State::LeaseLost, &why);
                    // The zone followed is the lease item's to say from now on, not this memory's.
                    self.me.following = None;
                    self.me.acting = None;
                    self.decide(
                        "lease_lost",
                        "lease lost: this watcher stopped acting and stands by".into(),
                        vec![],
                    )
                    .await;
                }
                // The lease's deadline is counted from before the claim was sent: the item's
                // expiry is written after, so this watcher's own clock never runs past it.
                let asked = Instant::now();
                match self.ctx.journal.claim_watch(&self.me, self.ctx.settings.lease).await {
                    Ok(Claim::Held(held)) => {
                        let took_over = standing_by_for.take();
                        self.me.following = held.following.clone();
                        self.me.since = held.since;
                        let what = match (&took_over, &held.following) {
                            (Some(other), Some(zone)) => {
                                format!("took the lease over from watcher {other}, following {zone}")
                            }
                            (Some(other), None) => format!("took the lease over from watcher {other}"),
                            (None, Some(zone)) => format!("holds the lease, following {zone}"),
                            (None, None) => "holds the lease".to_owned(),
                        };
                        self.beacon.set(State::Healthy, &what);
                        self.leader = Some(Leadership::start(
                            &self.ctx.journal,
                            held,
                            self.ctx.settings.lease,
                            asked,
                            Arc::clone(&self.beacon) as Arc<dyn crate::journal::Pulse>,
                        ));
                        self.decide("lease_held", what, vec![]).await;
                        next_resync = Instant::now();
                        look_now = true;
                    }
                    Ok(Claim::Standby(other)) => {
                        if standing_by_for.as_deref() != Some(&other.holder) {
                            crate::say!(
                                "azevac: watch: standing by: watcher {} ({}) holds the lease",
                                clean(&other.holder),
                                clean(&other.caller)
                            );
                            standing_by_for = Some(other.holder.clone());
                        }
                        self.beacon.set(
                            State::Healthy,
                            &format!(
                                "standing by: watcher {} ({}) holds the lease",
                                other.holder, other.caller
                            ),
                        );
                        self.pause(self.ctx.settings.lease / 3).await;
                        continue;
                    }
                    Err(e) => {
                        let why = format!("cannot claim the watcher's lease: {}", describe(&e));
                        crate::say!("azevac: warning: watch: {}", crate::model::text::clean(&why));
                        self.beacon.set(State::LeaseLost, &why);
                        self.pause(self.ctx.settings.lease / 3).await;
                        continue;
                    }
                }
            }
            let wake = if std::mem::take(&mut look_now) {
                false
            } else {
                match self.hear().await {
                    Some(wake) => wake,
                    None => break,
                }
            };
            let resync = Instant::now() >= next_resync;
            if (wake || resync) && !self.interrupt.requested() && self.holds() {
                self.reconcile(resync).await;
                if resync {
                    if !self.interrupt.requested() {
                        self.renew_shifts().await;
                    }
                    next_resync = Instant::now() + self.orders.resync;
                }
            }
        }
        if let Some(leader) = self.leader.take() {
            leader.stop();
            self.me.acting = None;
            match self.ctx.journal.release_watch(&self.me).await {
                Ok(()) => crate::say!("azevac: watch: stopped; lease released"),
                Err(e) => crate::say!(
                    "azevac: warning: watch: stopped; the lease could not be released (it runs out on its own): {}",
                    crate::model::text::clean(&describe(&e))
                ),
            }
        } else {
            crate::say!("azevac: watch: stopped");
        }
    }
}
