//! Sizing the waves of a recovery (`recover --waves 1,10%,50%,100%`): how many resources each wave puts back,
//! and which. Putting a whole estate back into a zone that has just recovered is the same
//! thundering herd as a deployment, so each wave spreads its risk as a careful deployment does:
//! every type, account and cluster appears in the first wave that has room for it, and resources
//! the operator marks with a tag go first or last. Pure: the plan's lines in, an order and the
//! cuts between waves out.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The most waves a recovery is cut into: more is a typo, not a plan.
pub const MOST: usize = 20;

/// One step of `--waves`: how many resources are back once the wave has ended, counted from the
/// first wave (cumulative, as deployment configurations count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// This many resources in all.
    Count(usize),
    /// This share of the resources in all (rounded up), 1 to 100.
    Percent(u8),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Count(n) => write!(f, "{n}"),
            Step::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// `--waves`: the steps in order, the last one always everything (100%: a recovery in waves
/// that stopped short of the end would leave records nobody asked to keep).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waves(Vec<Step>);

impl Waves {
    /// The steps, the last one 100%.
    pub fn steps(&self) -> &[Step] {
        &self.0
    }

    /// Where each wave ends in a list of `total` resources (cumulative, increasing, the last one
    /// `total`): a step that would add nothing (5 after 10%, of 20) is left out.
    pub fn cuts(&self, total: usize) -> Vec<usize> {
        let mut cuts: Vec<usize> = Vec::new();
        for step in &self.0 {
            let reach = match *step {
                Step::Count(n) => n,
                Step::Percent(p) => (total * usize::from(p)).div_ceil(100),
            }
            .min(total);
            if reach > cuts.last().copied().unwrap_or(0) {
                cuts.push(reach);
            }
        }
        cuts
    }
}

impl fmt::Display for Waves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let steps: Vec<String> = self.0.iter().map(Step::to_string).collect();
        f.write_str(&steps.join(","))
    }
}

impl FromStr for Waves {
    type Err = String;

    /// `1,10%,50%,100%`: counts and percentages, each larger than the one of its kind before;
    /// a last step short of 100% is followed by one that is (the rest come back last).
    fn from_str(text: &str) -> Result<Waves, String> {
        const EXAMPLE: &str = "e.g. --waves 1,10%,50%,100%";
        let mut steps = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let step = match part.strip_suffix('%') {
                Some(number) => match number.parse::<u8>() {
                    Ok(p @ 1..=100) => Step::Percent(p),
                    _ => return Err(format!("wave `{part}`: a share is 1% to 100% ({EXAMPLE})")),
                },
                None => match part.parse::<usize>() {
                    Ok(n) if n >= 1 => Step::Count(n),
                    _ => {
                        return Err(format!(
                            "wave `{part}`: each wave is a number of resources (1 or more) or a share (10%) ({EXAMPLE})"
                        ))
                    }
                },
            };
            let grows = steps.iter().rev().find_map(|before| match (before, &step) {
                (Step::Count(a), Step::Count(b)) => Some(b > a),
                (Step::Percent(a), Step::Percent(b)) => Some(b > a),
                _ => None,
            });
            if grows == Some(false) {
                return Err(format!(
                    "wave `{part}`: waves count from the start, so each is larger than the one before ({EXAMPLE})"
                ));
            }
            steps.push(step);
        }
        if steps.last() != Some(&Step::Percent(100)) {
            steps.push(Step::Percent(100));
        }
        if steps.len() > MOST {
            return Err(format!("{} waves: at most {MOST} ({EXAMPLE})", steps.len()));
        }
        Ok(Waves(steps))
    }
}

/// Where the operator asked a resource to go: `--first-tag` before the others, `--last-tag` after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// Tagged with a `--first-tag`.
    First,
    /// Neither.
    Middle,
    /// Tagged with a `--last-tag` (and no `--first-tag`).
    Last,
}

/// One resource to put back, as the order sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Its type.
    pub resource_type: String,
    /// Its account (`None`: the caller's own).
    pub account: Option<String>,
    /// What else it belongs to that a bad wave could take down at once (an EKS or ECS cluster).
    pub cluster: Option<String>,
    /// Where the operator asked it to go.
    pub mark: Mark,
}

/// The order in which `units` come back: first the marked-first, then the rest, then the
/// marked-last; within each, spread so that any first few cover as many types, then accounts,
/// then clusters as they can (each group in turn, types taking turns, and within a type its
/// accounts). Returns indices into `units`; a group keeps the order its units came in.
pub fn order(units: &[Unit]) -> Vec<usize> {
    let mut order = Vec::with_capacity(units.len());
    for mark in [Mark::First, Mark::Middle, Mark::Last] {
        let picked: Vec<usize> = (0..units.len()).filter(|&i| units[i].mark == mark).collect();
        order.extend(spread(units, &picked));
    }
    order
}

/// `picked` (indices into `units`) taking turns: by type, within a type by account, within an
/// account by cluster, each in the order first seen.
fn spread(units: &[Unit], picked: &[usize]) -> Vec<usize> {
    // Nested in first-seen order, so that the turns follow the plan's order: a dry run and the real
    // run it was read for cut the same waves.
    type Clusters = Vec<(Option<String>, Vec<usize>)>;
    type Accounts = Vec<(Option<String>, Clusters)>;
    let mut by_type: Vec<(String, Accounts)> = Vec::new();
    for &i in picked {
        let unit = &units[i];
        let accounts = entry(&mut by_type, unit.resource_type.clone());
        let clusters = entry(accounts, unit.account.clone());
        entry(clusters, unit.cluster.clone()).push(i);
    }
    let by_type: Vec<Vec<usize>> = by_type
        .into_iter()
        .map(|(_, accounts)| {
            turns(
                accounts
                    .into_iter()
                    .map(|(_, clusters)| turns(clusters.into_iter().map(|(_, units)| units).collect()))
                    .collect(),
            )
        })
        .collect();
    turns(by_type)
}

/// The value under `key` in a list kept in first-seen order, added empty if new.
fn entry<K: PartialEq, V: Default>(list: &mut Vec<(K, V)>, key: K) -> &mut V {
    let at = match list.iter().position(|(k, _)| *k == key) {
        Some(at) => at,
        None => {
            list.push((key, V::default()));
            list.len() - 1
        }
    };
    &mut list[at].1
}

/// The lists taking turns: the first of each, then the second of each, and so on.
fn turns(lists: Vec<Vec<usize>>) -> Vec<usize> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    for round in 0..longest {
        out.extend(lists.iter().filter_map(|l| l.get(round)));
    }
    out
}

/// `units` cut into waves: the indices of each wave's units, in [`order`], at `waves`' cuts.
pub fn cut(units: &[Unit], waves: &Waves) -> Vec<Vec<usize>> {
    let order = order(units);
    let mut start = 0;
    waves
        .cuts(order.len())
        .into_iter()
        .map(|end| {
            let wave = order[start..end].to_vec();
            start = end;
            wave
        })
        .collect()
}

/// Per type, how many units of a wave: `asg 2, ecs 1`, for the lines that say what a wave holds.
pub fn summary(units: &[Unit], wave: &[usize]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in wave {
        *counts.entry(units[i].resource_type.as_str()).or_default() += 1;
    }
    counts
        .iter()
        .map(|(t, n)| format!("{t} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unit(resource_type: &str, account: Option<&str>, cluster: Option<&str>) -> Unit {
        Unit {
            resource_type: resource_type.into(),
            account: account.map(Into::into),
            cluster: cluster.map(Into::into),
            mark: Mark::Middle,
        }
    }

    #[test]
    fn waves_count_from_the_start_and_end_with_everything() {
        let waves: Waves = "1,10%,50%,100%".parse().expect("parses");
        assert_eq!(waves.cuts(40), vec![1, 4, 20, 40]);
        assert_eq!(waves.cuts(3), vec![1, 2, 3], "10% of 3 is 1 resource, already back");
        assert_eq!(waves.cuts(0), Vec::<usize>::new());
        let short: Waves = "2,25%".parse().expect("parses");
        assert_eq!(short.to_string(), "2,25%,100%", "the rest come back last");
        assert_eq!(short.cuts(100), vec![2, 25, 100]);
        assert_eq!("5".parse::<Waves>().expect("parses").cuts(3), vec![3]);
    }

    #[test]
    fn waves_that_cannot_be_meant_are_refused_with_an_example() {
        for bad in ["", "0", "10%,5%", "5,5", "0%", "101%", "x", "1,,2", "-1", "1.5"] {
            let error = bad.parse::<Waves>().expect_err(bad);
            assert!(error.contains("--waves 1,10%,50%,100%"), "{bad}: {error}");
        }
        let many: Vec<String> = (1..=MOST).map(|n| n.to_string()).collect();
        assert!(
            many.join(",").parse::<Waves>().is_err(),
            "20 counts and the implied 100%"
        );
    }

    #[test]
    fn the_first_wave_covers_every_type_then_every_account_then_every_cluster() {
        let units = vec![
            unit("asg", None, None),
            unit("asg", None, None),
            unit("asg", Some("2"), None),
            unit("eks", None, Some("a")),
            unit("eks", None, Some("a")),
            unit("eks", None, Some("b")),
            unit("ecs", None, None),
        ];
        let order = order(&units);
        assert_eq!(order, vec![0, 3, 6, 2, 5, 1, 4]);
        let waves: Waves = "3,5".parse().expect("parses");
        assert_eq!(cut(&units, &waves), vec![vec![0, 3, 6], vec![2, 5], vec![1, 4]]);
    }

    #[test]
    fn marked_resources_go_first_or_last() {
        let mut units = vec![
            unit("asg", None, None),
            unit("ecs", None, None),
            unit("lambda", None, None),
        ];
        units[0].mark = Mark::Last;
        units[2].mark = Mark::First;
        assert_eq!(order(&units), vec![2, 1, 0]);
    }

    proptest! {
        /// Whatever the steps: every resource comes back exactly once, the waves in order, none
        /// empty, the last one ending with everything.
        #[test]
        fn every_resource_comes_back_exactly_once(
            steps in proptest::collection::vec(prop_oneof![
                (1usize..50).prop_map(|n| n.to_string()),
                (1u8..=100).prop_map(|p| format!("{p}%")),
            ], 1..6),
            kinds in proptest::collection::vec((0u8..3, 0u8..3, 0u8..2, 0u8..3), 0..60),
        ) {
            let units: Vec<Unit> = kinds
                .iter()
                .map(|(t, a, c, m)| Unit {
                    resource_type: format!("t{t}"),
                    account: (*a > 0).then(|| a.to_string()),
                    cluster: (*c > 0).then(|| c.to_string()),
                    mark: [Mark::First, Mark::Middle, Mark::Last][usize::from(*m)],
                })
                .collect();
            if let Ok(waves) = steps.join(",").parse::<Waves>() {
                let cut = cut(&units, &waves);
                prop_assert!(cut.iter().all(|w| !w.is_empty()));
                let mut all: Vec<usize> = cut.concat();
                all.sort_unstable();
                prop_assert_eq!(all, (0..units.len()).collect::<Vec<_>>());
                let marks: Vec<Mark> = cut.concat().iter().map(|&i| units[i].mark).collect();
                prop_assert!(marks.windows(2).all(|w| w[0] <= w[1]), "marks in order");
            }
        }

        /// Any text: parsed or refused with a line that says what a wave is, never a panic.
        #[test]
        fn any_text_parses_or_is_refused(text in "[0-9%, a-z.-]{0,24}") {
            match text.parse::<Waves>() {
                Ok(waves) => prop_assert_eq!(waves.steps().last(), Some(&Step::Percent(100))),
                Err(error) => prop_assert!(error.contains("--waves")),
            }
        }
    }
}
