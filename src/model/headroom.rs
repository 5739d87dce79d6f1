//! Static stability before capacity moves: the zones that remain must hold what leaves. For every
//! planned evacuation line of a subnet-placed type, the free IP addresses of the subnets it keeps
//! against what moves there. Lines whose remaining subnets overlap share those addresses: their
//! subnets are counted once, and the lines take from them in plan order. Pure (demands and free
//! counts in, verdicts out); the engine reads the subnets and applies the verdicts.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Headroom, Plan, Status};

/// What one planned line moves into the subnets it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// The line's `resource`.
    pub resource: String,
    /// What moves, in the operator's words (`instances`, `tasks`, `network interfaces`).
    pub units: &'static str,
    /// One key per IP address it takes; a key two lines share is one address.
    pub needs: Vec<String>,
    /// The subnets the line keeps.
    pub remaining: Vec<String>,
    /// A caveat for the plan line besides the headroom (Auto Scaling: at MaxSize).
    pub note: Option<String>,
}

/// Each demand's headroom, by resource: lines are joined when their remaining subnets overlap (the
/// connected components of shared subnets); a component's free addresses are its subnets' counts,
/// each subnet once (a subnet not in `free` has none: it no longer exists); within a component the
/// lines take addresses in the order given, and a line that would take more than is left does not
/// fit (and takes nothing, so the lines after it may still fit).
pub fn assess(demands: &[Demand], free: &BTreeMap<String, u64>) -> BTreeMap<String, Headroom> {
    let components = components(demands);
    let mut out = BTreeMap::new();
    for members in components {
        let subnets: BTreeSet<&String> = members.iter().flat_map(|&i| &demands[i].remaining).collect();
        let free_ips: u64 = subnets.iter().map(|s| free.get(*s).copied().unwrap_or(0)).sum();
        let mut taken: BTreeSet<&String> = BTreeSet::new();
        for &i in &members {
            let demand = &demands[i];
            let mine: BTreeSet<&String> = demand.needs.iter().collect();
            let moving = mine.difference(&taken).count();
            let fits = u64::try_from(taken.len() + moving).unwrap_or(u64::MAX) <= free_ips;
            let headroom = Headroom {
                units: demand.units.to_owned(),
                moving,
                free_ips,
                ahead: taken.len(),
                // Named up to a few: a thousand groups in one VPC's subnets would otherwise make
                // a million names, in memory and in the JSON.
                shared_with: members
                    .iter()
                    .filter(|&&j| j != i)
                    .take(SHARED_NAMED)
                    .map(|&j| demands[j].resource.clone())
                    .collect(),
                sharing: members.len() - 1,
                fits,
            };
            if fits {
                taken.extend(mine);
            }
            out.insert(demand.resource.clone(), headroom);
        }
    }
    out
}

/// Put the verdicts on the plan's lines: each line's headroom, its demand's note, and for a line
/// that does not fit a warning and, unless `force`, a skip with the shortfall as the reason.
pub fn apply(plan: &mut Plan, demands: &[Demand], free: &BTreeMap<String, u64>, force: bool) {
    let verdicts = assess(demands, free);
    let mut planned: BTreeMap<String, usize> = BTreeMap::new();
    for (i, item) in plan.items.iter().enumerate().rev() {
        if item.status == Status::Planned {
            // The first planned line of a resource, as a search from the start would find.
            planned.insert(item.resource.clone(), i);
        }
    }
    for demand in demands {
        let Some(item) = planned.get(&demand.resource).map(|&i| &mut plan.items[i]) else {
            continue;
        };
        if let Some(note) = &demand.note {
            item.notes.push(note.clone());
        }
        let Some(headroom) = verdicts.get(&demand.resource) else {
            continue;
        };
        if !headroom.fits {
            let shortfall = headroom.shortfall();
            if force {
                item.notes.push(format!("warning: {shortfall}; going ahead (--force)"));
            } else {
                item.status = Status::Skipped;
                item.reason = Some(format!("{HELD_BACK}: {shortfall} (--force to go ahead)"));
                item.removed_subnets = Some(Vec::new());
                item.resulting_subnets = item.current_subnets.clone();
                item.actions = None;
                item.notes.clear();
            }
        }
        item.headroom = Some(headroom.clone());
    }
}

/// How many of the lines sharing a line's subnets its headroom names (`sharing` counts them all).
pub const SHARED_NAMED: usize = 10;

/// How the reason of a line held back for lack of headroom starts.
pub const HELD_BACK: &str = "not enough headroom";

/// Groups of demands (indices, in order) whose remaining subnets overlap, directly or through others.
fn components(demands: &[Demand]) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..demands.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut owner: BTreeMap<&String, usize> = BTreeMap::new();
    for (i, demand) in demands.iter().enumerate() {
        for subnet in &demand.remaining {
            match owner.get(subnet) {
                Some(&j) => {
                    let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                    parent[a.max(b)] = a.min(b);
                }
                None => {
                    owner.insert(subnet, i);
                }
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..demands.len() {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    groups.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(resource: &str, units: usize, remaining: &[&str]) -> Demand {
        Demand {
            resource: resource.into(),
            units: "tasks",
            needs: (0..units).map(|n| format!("{resource}/task-{n}")).collect(),
            remaining: remaining.iter().map(|s| s.to_string()).collect(),
            note: None,
        }
    }

    fn free(counts: &[(&str, u64)]) -> BTreeMap<String, u64> {
        counts.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    }

    #[test]
    fn a_line_that_does_not_fit_says_so() {
        let verdicts = assess(&[demand("web", 14, &["a", "b"])], &free(&[("a", 2), ("b", 4)]));
        let web = &verdicts["web"];
        assert!(!web.fits);
        assert_eq!(
            web.shortfall(),
            "remaining subnets have 6 free IPs; 14 tasks would move"
        );
        let fits = assess(&[demand("web", 6, &["a", "b"])], &free(&[("a", 2), ("b", 4)]));
        assert!(fits["web"].fits);
        assert_eq!(fits["web"].describe(), "6 free IPs for 6 tasks");
    }

    #[test]
    fn shared_subnets_are_counted_once_and_taken_in_order() {
        // Each fits alone (8 free), not together: the first goes, the second is held back.
        let demands = [
            demand("a", 5, &["s1"]),
            demand("b", 5, &["s1", "s2"]),
            demand("c", 1, &["s3"]),
        ];
        let verdicts = assess(&demands, &free(&[("s1", 8), ("s2", 0), ("s3", 1)]));
        assert!(verdicts["a"].fits);
        assert_eq!(verdicts["a"].free_ips, 8, "s1 counted once");
        assert!(!verdicts["b"].fits);
        assert_eq!(verdicts["b"].ahead, 5);
        assert_eq!(verdicts["b"].shared_with, ["a"]);
        assert!(verdicts["b"].shortfall().contains("8 free IPs (5 taken by other lines"));
        assert!(verdicts["c"].fits && verdicts["c"].shared_with.is_empty());
    }

    #[test]
    fn a_shared_key_is_one_address() {
        let mut f = demand("f", 0, &["s1"]);
        let mut g = demand("g", 0, &["s1"]);
        f.needs = vec!["eni:s1:sg-1".into()];
        g.needs = vec!["eni:s1:sg-1".into()];
        let verdicts = assess(&[f, g], &free(&[("s1", 1)]));
        assert!(verdicts["f"].fits && verdicts["g"].fits);
        assert_eq!(verdicts["g"].moving, 0);
    }

    #[test]
    fn a_deleted_subnet_has_no_room() {
        let verdicts = assess(&[demand("web", 1, &["gone"])], &BTreeMap::new());
        assert!(!verdicts["web"].fits);
    }
}
