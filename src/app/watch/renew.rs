//! The watcher keeps azevac's zonal shifts from lapsing in a long incident: on each resync, the
//! shifts that end within the hour are extended, as `azevac shift extend` does.

use std::collections::BTreeSet;

use std::time::Duration;

use super::Watch;
use crate::app::Order;
use crate::model::Request;

impl Watch<'_> {
    /// Extend azevac's zonal shifts (the caller's own account's) that end within the hour, zone by
    /// zone, as `azevac shift extend` does: the watcher keeps them from lapsing in a long incident,
    /// whoever started them and whatever zone it follows.
    pub(super) async fn renew_shifts(&mut self) {
        use crate::plugins::zonal_shift::{expiry, RENEW_WITHIN, TYPE};
        let records: Vec<_> = match self.ctx.journal.of_type(TYPE, None).await {
            Ok(entries) => entries
                .into_iter()
                .filter_map(std::result::Result::ok)
                .filter(|r| r.account_id.is_none())
                .collect(),
            Err(e) => {
                crate::say!(
                    "azevac: warning: watch: cannot read azevac's zonal shifts from the journal: {}",
                    crate::model::text::clean(&super::describe(&e))
                );
                return;
            }
        };
        if records.is_empty() {
            return;
        }
        let ending: BTreeSet<String> = match expiry::of(&self.ctx.sdk, &records, RENEW_WITHIN).await {
            Ok(shifts) => shifts
                .into_iter()
                .flatten()
                .filter(|s| s.standing == expiry::Standing::Active && s.expiring(RENEW_WITHIN))
                .map(|s| s.az_id)
                .collect(),
            Err(e) => {
                crate::say!(
                    "azevac: warning: watch: cannot read from ARC when azevac's zonal shifts end: {}",
                    crate::model::text::clean(&super::describe(&e))
                );
                return;
            }
        };
        for zone in ending {
            if !self.holds() || self.interrupt.requested() {
                return;
            }
            self.decide(
                "shifts_extended",
                format!("azevac's zonal shifts away from {zone} end within the hour: extending them"),
                vec![],
            )
            .await;
            let mut ctx = self.ctx.for_another_run(self.guarded());
            ctx.heading = Some("shift extend");
            let extend = extension();
            let order = Order {
                notify: &[],
                kubeconfig: None,
                wait: false,
                wait_timeout: Duration::ZERO,
                ..self.orders.order(&zone, &extend)
            };
            self.acting(Some(format!("extending azevac's zonal shifts away from {zone}")));
            let extended = ctx.evacuate(self.screen, order).await;
            self.acting(None);
            match extended {
                Ok(outcome) => self.note_interrupted(&outcome),
                Err(e) => crate::say!(
                    "azevac: warning: watch: could not extend azevac's zonal shifts away from {zone}: {}",
                    crate::model::text::clean(&super::describe(&e))
                ),
            }
        }
    }
}

/// The evacuation `shift extend` is, for every zone: azevac's zonal shifts in force given a new
/// expiry of the default length from now, nothing started.
fn extension() -> Request {
    use crate::plugins::zonal_shift::{flags::Options, DEFAULT_EXPIRES_IN, TYPE};
    Request {
        types: vec![TYPE.to_owned()],
        options: crate::plugins::to_options(&Options {
            zonal_shift: true,
            expires_in: Some(DEFAULT_EXPIRES_IN.to_owned()),
            extend: true,
        }),
        ..Request::default()
    }
}
