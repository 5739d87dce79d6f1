//! Where things are: AZ IDs and names, and which subnets lie in which AZ ID.
//!
//! AZ names (`us-east-1b`) are shuffled per account, AZ IDs (`use1-az2`) are not, so everything in
//! azevac keys on the ID and maps names through EC2; nothing here guesses from a name's letter.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_ec2::types::Filter;

use crate::model::Site;
use crate::{Error, Result};

/// The region an AZ ID belongs to, from its prefix as AWS forms it: the region's area code, the
/// initials of its direction, its number (`use1` us-east-1, `apne1` ap-northeast-1, `euc2`
/// eu-central-2, `usgw1` us-gov-west-1). Local and Wavelength Zone IDs (`use1-bos1-az1`) carry their
/// parent region's prefix. `None` when the text does not have that shape.
pub fn region_of_az_id(az_id: &str) -> Option<String> {
    let prefix = az_id.split('-').next()?;
    let letters: String = prefix.chars().take_while(char::is_ascii_lowercase).collect();
    let number = &prefix[letters.len()..];
    if letters.len() < 3 || number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (area, direction) = letters.split_at(2);
    let (area, direction) = match (area, direction) {
        ("us", "gw") => ("us-gov", "w"),
        ("us", "ge") => ("us-gov", "e"),
        other => other,
    };
    let direction = match direction {
        "e" => "east",
        "w" => "west",
        "n" => "north",
        "s" => "south",
        "c" => "central",
        "ne" => "northeast",
        "nw" => "northwest",
        "se" => "southeast",
        "sw" => "southwest",
        _ => return None,
    };
    Some(format!("{area}-{direction}-{number}"))
}

/// Attempts of the first call before an unreachable or non-EC2 endpoint is reported.
const QUICK_ATTEMPTS: u32 = 2;

/// What a failed `DescribeAvailabilityZones` means. Only an answer that is no EC2 answer at all (a
/// 404 or an HTML page: the endpoint does not serve EC2 for this region) or an opt-in region that is
/// not enabled is a wrong region; an EC2 error such as a 500 is EC2 failing, and says so.
fn zones_error(
    region: &str,
    err: aws_sdk_ec2::error::SdkError<
        aws_sdk_ec2::operation::describe_availability_zones::DescribeAvailabilityZonesError,
        aws_smithy_runtime_api::http::Response,
    >,
) -> Error {
    use aws_sdk_ec2::error::ProvideErrorMetadata;
    let opt_in = err.code() == Some("OptInRequired");
    match Error::from_sdk("ec2:DescribeAvailabilityZones", err) {
        Error::Unsupported { source, .. } => Error::WrongRegion {
            region: region.to_owned(),
            source,
        },
        Error::Aws { source, .. } if opt_in => Error::WrongRegion {
            region: region.to_owned(),
            source,
        },
        other => other,
    }
}

/// EC2 accepts at most 200 values in one filter.
const FILTER_VALUES_PER_CALL: usize = 200;

/// One Availability Zone (or Local Zone) of the region, as EC2 names it for this account.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Zone {
    /// The AZ ID, the same in every account (`use1-az2`).
    pub id: String,
    /// This account's name for it (`us-east-1c`).
    pub name: String,
}

/// The zones of one region, from a single `DescribeAvailabilityZones` call.
#[derive(Debug, Clone)]
pub struct Zones {
    region: String,
    zones: Vec<Zone>,
}

impl Zones {
    /// Build from known zones (tests, or a caller that already has them).
    pub fn new(region: impl Into<String>, mut zones: Vec<Zone>) -> Self {
        zones.sort_by(|a, b| a.id.cmp(&b.id));
        Zones {
            region: region.into(),
            zones,
        }
    }

    /// Read the region's zones that this account can use.
    ///
    /// This is the first call of every command, so it is where a wrong region or endpoint shows: an
    /// endpoint that refuses connections or answers with something that is not EC2 fails after two
    /// quick attempts instead of the whole retry budget, while a throttled or failing EC2 (an AWS
    /// error, 5xx included) gets the normal patient retries and is reported as what it is.
    pub async fn load(ec2: &aws_sdk_ec2::Client, region: &str) -> Result<Self> {
        let quick = aws_sdk_ec2::config::Builder::default()
            .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(QUICK_ATTEMPTS));
        let first = ec2
            .describe_availability_zones()
            .customize()
            .config_override(quick)
            .send()
            .await;
        // An endpoint that takes the connection and never answers is as unreachable as one that
        // refuses it: two attempt timeouts are enough to say so.
        let first = match first {
            Err(e @ aws_sdk_ec2::error::SdkError::TimeoutError(_)) => {
                return Err(Error::Unreachable {
                    operation: "ec2:DescribeAvailabilityZones",
                    source: Box::new(crate::error::SdkFailure::new(e)),
                })
            }
            other => other,
        };
        let out = match first.map_err(|e| zones_error(region, e)) {
            Ok(out) => out,
            Err(
                e @ (Error::WrongRegion { .. }
                | Error::Unreachable { .. }
                | Error::NoCredentials { .. }
                | Error::AccessDenied { .. }),
            ) => return Err(e),
            Err(_) => ec2
                .describe_availability_zones()
                .send()
                .await
                .map_err(|e| zones_error(region, e))?,
        };
        let zones: Vec<Zone> = out
            .availability_zones()
            .iter()
            .filter_map(|z| {
                Some(Zone {
                    id: z.zone_id()?.to_owned(),
                    name: z.zone_name()?.to_owned(),
                })
            })
            .collect();
        if zones.is_empty() {
            return Err(Error::BadInput(format!(
                "region {region} shows no Availability Zones to this account: check --region / AWS_REGION"
            )));
        }
        Ok(Zones::new(region, zones))
    }

    /// Find the zone with this AZ ID. A zone *name*, or an ID the region does not have, is refused
    /// with the region's valid IDs in the message.
    pub fn resolve(&self, az_id: &str) -> Result<Zone> {
        if let Some(zone) = self.zones.iter().find(|z| z.id == az_id) {
            return Ok(zone.clone());
        }
        let hint = match self.zones.iter().find(|z| z.name == az_id) {
            Some(z) => format!(
                " ({az_id} is this account's AZ *name*; its AZ ID is {}: pass --az-id {})",
                z.id, z.id
            ),
            None => String::new(),
        };
        let valid = self
            .zones
            .iter()
            .map(|z| format!("{} ({})", z.id, z.name))
            .collect::<Vec<_>>()
            .join(", ");
        Err(Error::UnknownAz {
            given: az_id.to_owned(),
            region: self.region.clone(),
            hint,
            valid,
        })
    }

    /// The AZ ID of this account's AZ name, if the region has it.
    pub fn id_of(&self, az_name: &str) -> Option<&str> {
        self.zones.iter().find(|z| z.name == az_name).map(|z| z.id.as_str())
    }

    /// Every zone of the region, by AZ ID.
    pub fn all(&self) -> &[Zone] {
        &self.zones
    }

    /// The AZ name of an AZ ID, if the region has it.
    pub fn name_of(&self, az_id: &str) -> Option<&str> {
        self.zones.iter().find(|z| z.id == az_id).map(|z| z.name.as_str())
    }
}

/// Every subnet the account can see in one AZ ID (one paginated, filtered call).
pub async fn subnets_in_zone(ec2: &aws_sdk_ec2::Client, az_id: &str) -> Result<BTreeSet<String>> {
    let located = sites_where(ec2, "availability-zone-id", &[az_id.to_owned()]).await?;
    Ok(located.into_keys().collect())
}

/// Where each of these subnets that still exists lies (AZ ID and VPC); a deleted subnet is simply
/// absent. Batched: one call per 200 subnets, never one per subnet.
pub async fn locate_subnets(
    ec2: &aws_sdk_ec2::Client,
    subnet_ids: &BTreeSet<String>,
) -> Result<BTreeMap<String, Site>> {
    let ids: Vec<String> = subnet_ids.iter().cloned().collect();
    sites_where(ec2, "subnet-id", &ids).await
}

/// Where each subnet with one of these `values` of the filter `name` (`subnet-id`, `vpc-id`,
/// `availability-zone-id`) lies: subnet → AZ ID and VPC. One call per 200 values, paginated.
pub async fn sites_where(ec2: &aws_sdk_ec2::Client, name: &str, values: &[String]) -> Result<BTreeMap<String, Site>> {
    let found = chunked(name, values, |filter| subnets_where(ec2, filter)).await?;
    Ok(found
        .into_iter()
        .filter_map(|s| {
            let site = Site {
                az_id: s.availability_zone_id?,
                vpc: s.vpc_id?,
            };
            Some((s.subnet_id?, site))
        })
        .collect())
}

/// The Name tag of each of these subnets that has one (for `-o wide`). Batched like
/// [`locate_subnets`]: one call per 200 subnets.
pub async fn subnet_names(
    ec2: &aws_sdk_ec2::Client,
    subnet_ids: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>> {
    let ids: Vec<String> = subnet_ids.iter().cloned().collect();
    let found = chunked("subnet-id", &ids, |filter| subnets_where(ec2, filter)).await?;
    Ok(found
        .into_iter()
        .filter_map(|s| {
            let name = s.tags().iter().find(|t| t.key() == Some("Name"))?.value()?.to_owned();
            Some((s.subnet_id?, name))
        })
        .collect())
}

/// The free IP addresses (`AvailableIpAddressCount`) of each of these subnets that still exists.
/// Batched like [`locate_subnets`]: one call per 200 subnets.
pub async fn free_ips(ec2: &aws_sdk_ec2::Client, subnet_ids: &BTreeSet<String>) -> Result<BTreeMap<String, u64>> {
    let ids: Vec<String> = subnet_ids.iter().cloned().collect();
    let found = chunked("subnet-id", &ids, |filter| subnets_where(ec2, filter)).await?;
    Ok(found
        .into_iter()
        .filter_map(|s| {
            let count = u64::try_from(s.available_ip_address_count?).unwrap_or(0);
            Some((s.subnet_id?, count))
        })
        .collect())
}

/// One read per 200 values of the EC2 filter `name` (the most one filter takes), the results
/// joined: every EC2 read by a list of IDs goes through here.
pub async fn chunked<T, F, Fut>(name: &str, values: &[String], read: F) -> Result<Vec<T>>
where
    F: Fn(Filter) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>>>,
{
    let mut out = Vec::new();
    for chunk in values.chunks(FILTER_VALUES_PER_CALL) {
        let filter = Filter::builder().name(name).set_values(Some(chunk.to_vec())).build();
        out.extend(read(filter).await?);
    }
    Ok(out)
}

/// A network interface, as the exposure and headroom reads need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Its ID.
    pub id: String,
    /// Its subnet.
    pub subnet: String,
    /// Its security groups, sorted and comma-joined (Lambda shares one per subnet and set).
    pub groups: String,
    /// Its `InterfaceType` (`interface`, `lambda`, `vpc_endpoint`...).
    pub kind: String,
}

/// The network interfaces with one of these `values` of `filter` (`subnet-id`,
/// `network-interface-id`), 200 values a call, paginated.
pub async fn interfaces(ec2: &aws_sdk_ec2::Client, filter: &str, values: &BTreeSet<String>) -> Result<Vec<Interface>> {
    let values: Vec<String> = values.iter().cloned().collect();
    let found = chunked(filter, &values, |filter| async move {
        let page: Vec<aws_sdk_ec2::types::NetworkInterface> = ec2
            .describe_network_interfaces()
            .filters(filter)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("ec2:DescribeNetworkInterfaces", e))?;
        Ok(page)
    })
    .await?;
    Ok(found
        .into_iter()
        .filter_map(|n| {
            let mut groups: Vec<String> = n
                .groups()
                .iter()
                .filter_map(|g| g.group_id().map(str::to_owned))
                .collect();
            groups.sort();
            Some(Interface {
                kind: n.interface_type().map(|t| t.as_str().to_owned()).unwrap_or_default(),
                id: n.network_interface_id?,
                subnet: n.subnet_id?,
                groups: groups.join(","),
            })
        })
        .collect())
}

/// `DescribeSubnets` with one filter: filters (unlike `SubnetIds`) do not fail the whole call when
/// one subnet has been deleted.
async fn subnets_where(ec2: &aws_sdk_ec2::Client, filter: Filter) -> Result<Vec<aws_sdk_ec2::types::Subnet>> {
    ec2.describe_subnets()
        .filters(filter)
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .map_err(|e| Error::from_sdk("ec2:DescribeSubnets", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones() -> Zones {
        Zones::new(
            "us-east-1",
            vec![
                Zone {
                    id: "use1-az6".into(),
                    name: "us-east-1a".into(),
                },
                Zone {
                    id: "use1-az1".into(),
                    name: "us-east-1b".into(),
                },
                Zone {
                    id: "use1-az2".into(),
                    name: "us-east-1c".into(),
                },
            ],
        )
    }

    #[test]
    fn resolves_an_az_id() {
        let zone = zones().resolve("use1-az2").expect("known ID");
        assert_eq!(zone.name, "us-east-1c");
    }

    #[test]
    fn refuses_an_az_name_and_names_its_id() {
        let err = zones().resolve("us-east-1c").expect_err("a name is not an ID");
        let msg = err.to_string();
        assert!(msg.contains("its AZ ID is use1-az2"), "{msg}");
        assert!(
            msg.contains("use1-az1 (us-east-1b), use1-az2 (us-east-1c), use1-az6 (us-east-1a)"),
            "{msg}"
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn refuses_an_unknown_id_and_lists_the_valid_ones() {
        let msg = zones().resolve("use1-az9").expect_err("unknown").to_string();
        assert!(
            msg.starts_with("\"use1-az9\" is not an AZ ID in us-east-1; valid AZ IDs: use1-az1"),
            "{msg}"
        );
    }

    #[test]
    fn an_az_id_names_its_region() {
        for (az_id, region) in [
            ("use1-az2", Some("us-east-1")),
            ("usw2-az1", Some("us-west-2")),
            ("euw1-az3", Some("eu-west-1")),
            ("euc2-az1", Some("eu-central-2")),
            ("apne1-az4", Some("ap-northeast-1")),
            ("apse5-az1", Some("ap-southeast-5")),
            ("cnnw1-az1", Some("cn-northwest-1")),
            ("usgw1-az1", Some("us-gov-west-1")),
            ("use1-bos1-az1", Some("us-east-1")),
            ("us-east-1c", None),
            ("az2", None),
            ("usx1-az1", None),
            ("", None),
        ] {
            assert_eq!(region_of_az_id(az_id).as_deref(), region, "{az_id}");
        }
    }
}
