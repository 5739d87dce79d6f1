//! The cross-zone check: an Auto Scaling group behind a load balancer that does not balance across
//! zones must not be drained from a zone the balancer still sends its share to. Before such a group
//! loses subnets, the balancer's traffic must be shifted away (ARC zonal shift), or the operator
//! must say `--force`.

use std::collections::{BTreeMap, BTreeSet};

use futures::{StreamExt, TryStreamExt};

use crate::model::plan::{Item, Status};
use crate::{Error, Result};

/// ELBv2's attribute (on the load balancer, and on a target group that overrides it).
const CROSS_ZONE: &str = "load_balancing.cross_zone.enabled";
/// A target group that defers to its load balancer.
const DEFER: &str = "use_load_balancer_configuration";
/// ELBv2 accepts at most this many ARNs per describe call.
const BATCH: usize = 20;
/// Attribute reads (one per load balancer or target group: no batch read) in flight at once.
const READ_CONCURRENCY: usize = 16;

/// A load balancer that sends each zone its share regardless of the targets there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zonal {
    /// The load balancer's ARN.
    pub arn: String,
    /// Its name.
    pub name: String,
}

/// For each target group, the load balancers that route to it without cross-zone load balancing.
pub async fn zonal_balancers(
    sdk: &aws_config::SdkConfig,
    target_groups: &BTreeSet<String>,
) -> Result<BTreeMap<String, Vec<Zonal>>> {
    let elb = crate::client!(aws_sdk_elasticloadbalancingv2, sdk);
    let wanted: Vec<String> = target_groups.iter().cloned().collect();
    let mut groups = Vec::new();
    for chunk in wanted.chunks(BATCH) {
        let out = elb
            .describe_target_groups()
            .set_target_group_arns(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| Error::from_sdk("elasticloadbalancing:DescribeTargetGroups", e))?;
        groups.extend(out.target_groups().iter().cloned());
    }
    let balancer_arns: BTreeSet<String> = groups
        .iter()
        .flat_map(|g| g.load_balancer_arns().iter().cloned())
        .collect();
    // Whether each load balancer balances across zones by its own setting.
    let arns: Vec<String> = balancer_arns.into_iter().collect();
    let mut described = Vec::new();
    for chunk in arns.chunks(BATCH) {
        let out = elb
            .describe_load_balancers()
            .set_load_balancer_arns(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| Error::from_sdk("elasticloadbalancing:DescribeLoadBalancers", e))?;
        described.extend(out.load_balancers().iter().cloned());
    }
    // The attributes have no batch read: several side by side, not one per call latency in a row
    // (collected first: a lazy map inside the stream trips the Send check of async callers).
    let reads: Vec<_> = described
        .iter()
        .map(|lb| {
            let elb = &elb;
            async move {
                let arn = lb.load_balancer_arn().unwrap_or_default().to_owned();
                let name = lb.load_balancer_name().unwrap_or_default().to_owned();
                // An Application Load Balancer always balances across zones at its own level.
                let application = lb
                    .r#type()
                    .is_some_and(|t| *t == aws_sdk_elasticloadbalancingv2::types::LoadBalancerTypeEnum::Application);
                let cross_zone = application || attribute(elb, Owner::Balancer(&arn)).await?.as_deref() == Some("true");
                Ok::<_, Error>((arn, (name, cross_zone)))
            }
        })
        .collect();
    let balancers: BTreeMap<String, (String, bool)> = futures::stream::iter(reads)
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let reads: Vec<_> = groups
        .iter()
        .map(|group| {
            let elb = &elb;
            async move {
                let arn = group.target_group_arn().unwrap_or_default().to_owned();
                let own = attribute(elb, Owner::TargetGroup(&arn)).await?;
                Ok::<_, Error>((arn, own))
            }
        })
        .collect();
    let own_settings: BTreeMap<String, Option<String>> = futures::stream::iter(reads)
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let mut out = BTreeMap::new();
    for group in groups {
        let arn = group.target_group_arn().unwrap_or_default().to_owned();
        let own = own_settings.get(&arn).cloned().flatten();
        let zonal = group
            .load_balancer_arns()
            .iter()
            .filter_map(|lb| balancers.get(lb).map(|(name, on)| (lb, name, *on)))
            .filter(|(_, _, balancer_on)| match own.as_deref() {
                Some("true") => false,
                Some("false") => true,
                _ => !balancer_on,
            })
            .map(|(lb, name, _)| Zonal {
                arn: lb.clone(),
                name: name.clone(),
            })
            .collect();
        out.insert(arn, zonal);
    }
    Ok(out)
}

enum Owner<'a> {
    Balancer(&'a str),
    TargetGroup(&'a str),
}

/// The cross-zone attribute of a load balancer or a target group (`None`: not set, or deferring).
async fn attribute(elb: &aws_sdk_elasticloadbalancingv2::Client, owner: Owner<'_>) -> Result<Option<String>> {
    let attributes = match owner {
        Owner::Balancer(arn) => elb
            .describe_load_balancer_attributes()
            .load_balancer_arn(arn)
            .send()
            .await
            .map_err(|e| Error::from_sdk("elasticloadbalancing:DescribeLoadBalancerAttributes", e))?
            .attributes()
            .iter()
            .map(|a| (a.key().map(str::to_owned), a.value().map(str::to_owned)))
            .collect::<Vec<_>>(),
        Owner::TargetGroup(arn) => elb
            .describe_target_group_attributes()
            .target_group_arn(arn)
            .send()
            .await
            .map_err(|e| Error::from_sdk("elasticloadbalancing:DescribeTargetGroupAttributes", e))?
            .attributes()
            .iter()
            .map(|a| (a.key().map(str::to_owned), a.value().map(str::to_owned)))
            .collect(),
    };
    Ok(attributes
        .into_iter()
        .find(|(key, _)| key.as_deref() == Some(CROSS_ZONE))
        .and_then(|(_, value)| value)
        .filter(|v| v != DEFER))
}

/// What is known about shifts away from the zone when a group is checked.
#[derive(Debug, Clone, Default)]
pub struct Shifted {
    /// Load balancers (ARN) with a zonal shift away from the zone already active.
    pub active: BTreeSet<String>,
    /// Load balancers whose shift this plan starts first: ARN → the shift line's `resource`.
    pub planned: BTreeMap<String, String>,
    /// Why active shifts could not be listed, if they could not.
    pub unknown: Option<String>,
}

/// Apply the check to one planned group line (pure): `zonal` are the balancers in front of it that
/// do not balance across zones. A balancer shifted away already is fine; one whose shift this plan
/// starts makes the line wait for that shift; otherwise the line is skipped, or with `--force` only
/// warned about.
pub fn check(item: &mut Item, zonal: &[Zonal], shifted: &Shifted, force: bool) {
    if item.status != Status::Planned {
        return;
    }
    let mut unshifted = Vec::new();
    for lb in zonal {
        if shifted.active.contains(&lb.arn) {
            continue;
        }
        match shifted.planned.get(&lb.arn) {
            Some(line) => {
                if !item.requires.contains(line) {
                    item.requires.push(line.clone());
                }
                item.notes.push(format!(
                    "changed only after the zonal shift of load balancer {} (cross-zone load balancing off) has started",
                    lb.name
                ));
            }
            None => unshifted.push(lb.name.clone()),
        }
    }
    if unshifted.is_empty() {
        return;
    }
    let unknown = shifted
        .unknown
        .as_ref()
        .map(|why| format!(" (active zonal shifts could not be listed: {why})"))
        .unwrap_or_default();
    let why = format!(
        "load balancer {} has cross-zone load balancing off and no zonal shift away from {}{unknown}: it would keep \
         sending the zone its share while the group drains",
        unshifted.join(", "),
        item.az_id
    );
    if force {
        item.notes.push(format!("--force: {why}"));
    } else {
        item.status = Status::Skipped;
        item.reason = Some(format!("{why}; pass --zonal-shift to shift it first, or --force"));
        item.removed_subnets = Some(Vec::new());
        item.resulting_subnets = item.current_subnets.clone();
        item.notes.clear();
        item.requires.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Resource;

    fn group() -> Item {
        let resource = Resource {
            resource_type: "asg",
            id: "arn:web".into(),
            name: "web".into(),
            subnets: vec!["a".into(), "b".into()],
            ..Resource::default()
        };
        let zone = BTreeSet::from(["b".to_string()]);
        crate::model::plan::evacuation("use1-az2", &resource, &zone, &Default::default(), None).expect("in zone")
    }

    fn nlb() -> Vec<Zonal> {
        vec![Zonal {
            arn: "arn:nlb".into(),
            name: "edge".into(),
        }]
    }

    #[test]
    fn a_group_behind_a_zonal_balancer_is_skipped_unless_forced() {
        let mut item = group();
        check(&mut item, &nlb(), &Shifted::default(), false);
        assert_eq!(item.status, Status::Skipped);
        let reason = item.reason.clone().unwrap_or_default();
        assert!(
            reason.contains("edge has cross-zone load balancing off") && reason.contains("--zonal-shift"),
            "{reason}"
        );
        assert_eq!(item.resulting_subnets, ["a", "b"]);

        let mut forced = group();
        check(&mut forced, &nlb(), &Shifted::default(), true);
        assert_eq!(forced.status, Status::Planned);
        assert!(forced
            .notes
            .iter()
            .any(|n| n.starts_with("--force: load balancer edge")));
    }

    #[test]
    fn an_active_or_planned_shift_lets_the_group_go() {
        let mut item = group();
        let active = Shifted {
            active: BTreeSet::from(["arn:nlb".to_string()]),
            ..Shifted::default()
        };
        check(&mut item, &nlb(), &active, false);
        assert_eq!(item.status, Status::Planned);
        assert!(item.requires.is_empty());

        let mut item = group();
        let planned = Shifted {
            planned: BTreeMap::from([("arn:nlb".to_string(), "zonal-shift/arn:nlb".to_string())]),
            ..Shifted::default()
        };
        check(&mut item, &nlb(), &planned, false);
        assert_eq!(item.status, Status::Planned);
        assert_eq!(item.requires, ["zonal-shift/arn:nlb"]);
    }

    #[test]
    fn balancers_that_balance_across_zones_need_nothing() {
        let mut item = group();
        check(&mut item, &[], &Shifted::default(), false);
        assert_eq!(item.status, Status::Planned);
        assert!(item.notes.iter().all(|n| !n.contains("cross-zone")));
    }
}
