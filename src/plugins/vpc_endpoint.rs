//! Interface VPC endpoints: subnets live in the endpoint's `SubnetIds`, one network interface each.
//!
//! Traffic, not capacity: clients in every zone resolve the endpoint's regional DNS name to all its
//! interfaces, the zone's too, so the zone's interface is taken out (`ModifyVpcEndpoint`
//! `RemoveSubnetIds`) before capacity moves, and put back last. EC2 deletes that interface, and
//! makes a new one when the subnet is added back: azevac journals the address the interface had
//! ([`Action::Address`]) and `recover` asks for it again (`SubnetConfigurations`), so that
//! allow-lists keyed on it keep working. An address taken meanwhile is refused by EC2: the subnet is
//! then added back without it (the endpoint serves the zone again) and the line says the address
//! changed, from what to what.
//!
//! Only `Interface` endpoints are listed. Gateway endpoints have no subnets (route tables only), and
//! Gateway Load Balancer endpoints have exactly one subnet, which the never-empty rule would keep
//! anyway: neither is listed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_ec2::config::http::HttpResponse;
use aws_sdk_ec2::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_ec2::operation::modify_vpc_endpoint::ModifyVpcEndpointError;
use aws_sdk_ec2::types::{Filter, NetworkInterface, SubnetConfiguration, VpcEndpoint};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;
use super::wait::Poll;
use super::{Evacuation, Place, Plugin, Presence, Resource, Setup, Stage, SubnetService};
use crate::model::action::encode;
use crate::model::{Command, Record};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of interface VPC endpoints.
pub const TYPE: &str = "vpc-endpoint";

/// How the registry knows this kind: its calls, its IAM actions, its journal actions.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["ec2"],
    changes_through: &["ec2"],
    iam_actions: &[
        "ec2:DescribeVpcEndpoints",
        "ec2:DescribeNetworkInterfaces",
        "ec2:ModifyVpcEndpoint",
    ],
    build: plugin,
    flags: None,
    describe: crate::model::Record::words_as::<Action>,
    cluster: super::no_cluster,
    expiring: None,
};

/// `DescribeVpcEndpoints` pages at most 1,000 endpoints.
const PAGE: i32 = 1000;
/// The smallest page `DescribeVpcEndpoints` takes (doctor's probe).
const PROBE_PAGE: i32 = 5;
/// Interface IDs a `DescribeNetworkInterfaces` filter takes at once.
const INTERFACES_AT_ONCE: usize = 200;
/// How long a change waits for the endpoint to be `available` (EC2 keeps it `pending` while it
/// makes and deletes interfaces), before and after it.
const SETTLE: Duration = Duration::from_secs(300);
/// How often that wait looks again.
const POLL: Duration = Duration::from_secs(5);

/// What the `vpc-endpoint` kind journals besides subnets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The address(es) of the endpoint's interface in a subnet azevac removed: `recover` asks for
    /// them again.
    Address(Address),
}

/// An endpoint interface's addresses in one subnet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    /// The subnet.
    pub subnet: String,
    /// Its private IPv4 address (absent on an IPv6-only endpoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<String>,
    /// Its IPv6 address (absent on an IPv4-only endpoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<String>,
}

impl Address {
    /// `10.0.1.5` or `10.0.1.5 and 2600:1f18::5`.
    fn addresses(&self) -> String {
        let all: Vec<&str> = [self.ipv4.as_deref(), self.ipv6.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if all.is_empty() {
            "no address".to_owned()
        } else {
            all.join(" and ")
        }
    }

    /// Whether `other` has the addresses this one has (an address this one lacks is not asked for).
    fn kept_by(&self, other: &Address) -> bool {
        (self.ipv4.is_none() || self.ipv4 == other.ipv4) && (self.ipv6.is_none() || self.ipv6 == other.ipv6)
    }
}

impl crate::model::action::Action for Action {
    fn describe(&self) -> String {
        match self {
            Action::Address(a) => format!("address in {}: {}", a.subnet, a.addresses()),
        }
    }

    fn legacy(_: &str) -> Option<Self> {
        // A kind newer than journal format 2: it never wrote a string of its own.
        None
    }
}

/// One network interface of an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Interface {
    id: String,
    az: String,
    address: Address,
}

/// What this kind keeps in an endpoint's `detail`: its own typed value, never read with a default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Detail {
    /// `vpce-...`.
    endpoint_id: String,
    /// As EC2 says it (`available`, `pending`, `pendingAcceptance`...).
    state: String,
    /// Its interfaces (as far as `DescribeNetworkInterfaces` shows them).
    interfaces: Vec<Interface>,
    /// Recover: the addresses asked for again, in the subnets put back (from the journal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ask: Vec<Address>,
}

/// The interface VPC endpoints plugin.
#[derive(Debug, Clone)]
pub struct VpcEndpoints {
    ec2: aws_sdk_ec2::Client,
    region: String,
    poll: Duration,
    settle: Duration,
}

/// Registry constructor: VPC endpoints apply to every run.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let region = setup.sdk.region().map(|r| r.as_ref().to_owned()).unwrap_or_default();
        let service = VpcEndpoints::new(crate::client!(aws_sdk_ec2, &setup.sdk), region);
        Ok(Some(Subnets::journalling::<Action>(service, &setup.sdk)))
    })
}

/// How a state reads, whatever its case (EC2 answers `available`; its model says `Available`).
fn is_state(state: &str, wanted: &str) -> bool {
    state.eq_ignore_ascii_case(wanted)
}

/// Why an endpoint in `state` is not changed (`None`: it is changed). `pending` is waited for.
fn state_skip(state: &str) -> Option<String> {
    (!is_state(state, "available") && !is_state(state, "pending")).then(|| {
        format!(
            "state {}: only available endpoints are changed",
            crate::model::text::clean(state)
        )
    })
}

/// Whether EC2 refused a change because an address asked for is held by another interface (or,
/// on some paths, another resource): AWS answers `InvalidIPAddress.InUse`, and words the refusal
/// "in use" / "already assigned" where it answers with a generic code.
fn address_taken(code: Option<&str>, message: Option<&str>) -> bool {
    let code = code.unwrap_or_default().to_ascii_lowercase();
    let message = message.unwrap_or_default().to_ascii_lowercase();
    code.contains("inuse") || message.contains("in use") || message.contains("already assigned")
}

/// The subnets a change adds and removes, in order.
fn difference(current: &[String], wanted: &[String]) -> (Vec<String>, Vec<String>) {
    let add = wanted.iter().filter(|s| !current.contains(s)).cloned().collect();
    let remove = current.iter().filter(|s| !wanted.contains(s)).cloned().collect();
    (add, remove)
}

/// The journal actions of an evacuation of this endpoint from the zone named `az_name`: the
/// addresses of its interfaces there.
fn addresses_in(detail: &Detail, subnets: &[String], az_name: &str) -> Vec<Action> {
    detail
        .interfaces
        .iter()
        .filter(|i| !az_name.is_empty() && i.az == az_name && subnets.contains(&i.address.subnet))
        .map(|i| Action::Address(i.address.clone()))
        .collect()
}

/// What recovering asks for again: the journalled addresses of the subnets it puts back (those the
/// endpoint is not in now, and that the record removed).
fn asked_again(actions: Vec<Action>, record: &Record, current: &[String]) -> Vec<Address> {
    actions
        .into_iter()
        .map(|Action::Address(a)| a)
        .filter(|a| record.removed_subnets.contains(&a.subnet) && !current.contains(&a.subnet))
        .collect()
}

/// The line's words for the addresses asked for again, after EC2 refused them (`why`): each one
/// got back, or changed from what to what (`now`: the endpoint's interfaces by subnet).
fn told(asked: &[&Address], now: &BTreeMap<String, Address>, why: &str) -> Vec<String> {
    asked
        .iter()
        .map(|a| match now.get(&a.subnet) {
            Some(got) if a.kept_by(got) => format!("address in {}: {} again", a.subnet, a.addresses()),
            Some(got) => format!(
                "address in {} changed from {} to {}: {why}; update allow-lists keyed on the old address",
                a.subnet,
                a.addresses(),
                got.addresses()
            ),
            None => format!(
                "address in {} changed from {}: {why}; the new interface is not made yet (see the endpoint)",
                a.subnet,
                a.addresses()
            ),
        })
        .collect()
}

fn interface(n: &NetworkInterface) -> Option<Interface> {
    Some(Interface {
        id: n.network_interface_id()?.to_owned(),
        az: n.availability_zone().unwrap_or_default().to_owned(),
        address: Address {
            subnet: n.subnet_id()?.to_owned(),
            ipv4: n.private_ip_address().map(str::to_owned),
            ipv6: n
                .ipv6_addresses()
                .iter()
                .find_map(|a| a.ipv6_address())
                .map(str::to_owned),
        },
    })
}

impl VpcEndpoints {
    /// A plugin over this client, naming endpoints in `region`.
    pub fn new(ec2: aws_sdk_ec2::Client, region: String) -> Self {
        VpcEndpoints {
            ec2,
            region,
            poll: POLL,
            settle: SETTLE,
        }
    }

    /// How often, and how long, a change waits for the endpoint to be available.
    pub fn with_waits(mut self, poll: Duration, settle: Duration) -> Self {
        self.poll = poll;
        self.settle = settle;
        self
    }

    /// `arn:<partition>:ec2:<region>:<owner>:vpc-endpoint/<id>`.
    fn arn(&self, owner: &str, id: &str) -> String {
        format!(
            "arn:{}:ec2:{}:{owner}:vpc-endpoint/{id}",
            crate::model::arn::partition(&self.region),
            self.region
        )
    }

    /// Every interface endpoint, every page. Read by listing rather than by `VpcEndpointIds`:
    /// that refuses the whole call when one of the IDs is gone.
    async fn endpoints(&self) -> Result<Vec<VpcEndpoint>> {
        self.ec2
            .describe_vpc_endpoints()
            .filters(Filter::builder().name("vpc-endpoint-type").values("Interface").build())
            .max_results(PAGE)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("ec2:DescribeVpcEndpoints", e))
    }

    /// The interfaces of these IDs, by ID.
    async fn interfaces(&self, ids: &BTreeSet<String>) -> Result<BTreeMap<String, Interface>> {
        let ids: Vec<String> = ids.iter().cloned().collect();
        let mut found = BTreeMap::new();
        for chunk in ids.chunks(INTERFACES_AT_ONCE) {
            let page: Vec<NetworkInterface> = self
                .ec2
                .describe_network_interfaces()
                .filters(
                    Filter::builder()
                        .name("network-interface-id")
                        .set_values(Some(chunk.to_vec()))
                        .build(),
                )
                .into_paginator()
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("ec2:DescribeNetworkInterfaces", e))?;
            found.extend(page.iter().filter_map(interface).map(|i| (i.id.clone(), i)));
        }
        Ok(found)
    }

    /// The endpoints (those of `wanted` ARNs only, when given) with their interfaces, as resources.
    async fn resources(&self, wanted: Option<&BTreeSet<&String>>) -> Result<Vec<Resource>> {
        let endpoints: Vec<(String, VpcEndpoint)> = self
            .endpoints()
            .await?
            .into_iter()
            // A deleted endpoint stays listed for a while: it is gone.
            .filter(|e| !e.state().is_some_and(|s| is_state(s.as_str(), "deleted")))
            .filter(|e| !e.subnet_ids().is_empty())
            .filter_map(|e| {
                let arn = self.arn(e.owner_id().unwrap_or_default(), e.vpc_endpoint_id()?);
                Some((arn, e))
            })
            .filter(|(arn, _)| wanted.is_none_or(|w| w.contains(arn)))
            .collect();
        let ids: BTreeSet<String> = endpoints
            .iter()
            .flat_map(|(_, e)| e.network_interface_ids().iter().cloned())
            .collect();
        let interfaces = if ids.is_empty() {
            BTreeMap::new()
        } else {
            self.interfaces(&ids).await?
        };
        Ok(endpoints
            .into_iter()
            .map(|(arn, e)| to_resource(arn, &e, &interfaces))
            .collect())
    }

    /// One endpoint as EC2 has it now (`None`: gone).
    async fn endpoint(&self, id: &str) -> Result<Option<VpcEndpoint>> {
        match self.ec2.describe_vpc_endpoints().vpc_endpoint_ids(id).send().await {
            Ok(out) => Ok(out.vpc_endpoints().first().cloned()),
            Err(e) if e.code().is_some_and(|c| c.starts_with("InvalidVpcEndpointId")) => Ok(None),
            Err(e) => Err(Error::from_sdk("ec2:DescribeVpcEndpoints", e)),
        }
    }

    /// Wait until the endpoint is `available`, at most the settle time; returns it, or why not.
    async fn available(&self, id: &str, name: &str) -> Result<std::result::Result<VpcEndpoint, String>> {
        // Said once, when there is something to wait for.
        let said = std::sync::atomic::AtomicBool::new(false);
        let waited = super::wait::until(self.settle, self.poll, |_| async {
            let Some(endpoint) = self.endpoint(id).await? else {
                return Ok(Poll::Reached(Err("the endpoint no longer exists".to_owned())));
            };
            let state = endpoint.state().map(|s| s.as_str().to_owned()).unwrap_or_default();
            if is_state(&state, "available") {
                return Ok(Poll::Reached(Ok(endpoint)));
            }
            if !is_state(&state, "pending") {
                return Ok(Poll::Reached(Err(format!(
                    "it is {}",
                    crate::model::text::clean(&state)
                ))));
            }
            if !said.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::info!(endpoint = %name, "endpoint pending; waiting until it is available");
            }
            Ok(Poll::Pending(()))
        })
        .await?;
        Ok(waited.unwrap_or_else(|()| Err(format!("still pending after {} s", self.settle.as_secs()))))
    }

    /// [`VpcEndpoints::modify`], sent again while EC2 refuses it because the endpoint is `pending`
    /// (`IncorrectState`), for at most the settle time. A read can show the endpoint `available`
    /// before EC2 takes a change again (eventual consistency: right after another change, of this
    /// run's other zone, say); the refusal says nothing changed, so sending it again is safe.
    async fn modify_once_free(
        &self,
        id: &str,
        add: &[String],
        remove: &[String],
        asked: &[&Address],
    ) -> Result<std::result::Result<(), SdkError<ModifyVpcEndpointError, HttpResponse>>> {
        let sent = super::wait::until(self.settle, self.poll, |_| async {
            Ok(match self.modify(id, add, remove, asked).await {
                Err(e) if e.code() == Some("IncorrectState") => Poll::Pending(e),
                other => Poll::Reached(other),
            })
        })
        .await?;
        Ok(sent.unwrap_or_else(Err))
    }

    /// `ModifyVpcEndpoint` with the subnets added (asking for `asked` addresses) and removed.
    async fn modify(
        &self,
        id: &str,
        add: &[String],
        remove: &[String],
        asked: &[&Address],
    ) -> std::result::Result<(), SdkError<ModifyVpcEndpointError, HttpResponse>> {
        // Only the subnets added: an address asked for in a subnet the endpoint is in would replace
        // that subnet's interface.
        let configurations: Vec<SubnetConfiguration> = asked
            .iter()
            .map(|a| {
                SubnetConfiguration::builder()
                    .subnet_id(&a.subnet)
                    .set_ipv4(a.ipv4.clone())
                    .set_ipv6(a.ipv6.clone())
                    .build()
            })
            .collect();
        self.ec2
            .modify_vpc_endpoint()
            .vpc_endpoint_id(id)
            .set_add_subnet_ids((!add.is_empty()).then(|| add.to_vec()))
            .set_remove_subnet_ids((!remove.is_empty()).then(|| remove.to_vec()))
            .set_subnet_configurations((!configurations.is_empty()).then_some(configurations))
            .send()
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl SubnetService for VpcEndpoints {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// Traffic leaves the zone before capacity does, and comes back after it.
    fn stage(&self, command: Command) -> Stage {
        match command {
            Command::Evacuate => Stage::First,
            Command::Recover => Stage::Last,
        }
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        self.resources(None).await
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        let wanted: BTreeSet<&String> = ids.iter().collect();
        Ok(self
            .resources(Some(&wanted))
            .await?
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect())
    }

    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        self.apply_and_tell(resource, subnets).await.map(|_| ())
    }

    async fn apply_and_tell(&self, resource: &Resource, subnets: &[String]) -> Result<Option<Vec<String>>> {
        let detail: Detail = resource.detail_as()?;
        let (add, remove) = difference(&resource.subnets, subnets);
        if add.is_empty() && remove.is_empty() {
            return Ok(None);
        }
        let id = detail.endpoint_id.as_str();
        // EC2 refuses a change while the endpoint is pending (a change of its own, or of ours of
        // another zone a moment ago).
        if !is_state(&detail.state, "available") {
            if let Err(why) = self.available(id, &resource.name).await? {
                return Err(Error::NotSettled {
                    resource: resource.name.clone(),
                    why: format!("not available ({why}): nothing changed"),
                });
            }
        }
        let asked: Vec<&Address> = detail.ask.iter().filter(|a| add.contains(&a.subnet)).collect();
        let refused = match self.modify_once_free(id, &add, &remove, &asked).await? {
            Ok(()) => None,
            Err(e) if !asked.is_empty() && address_taken(e.code(), e.message()) => {
                // The address is held by something else now: the zone gets the endpoint back with
                // a new address rather than not at all, and the line says so.
                let why = format!(
                    "EC2 refused the old address ({})",
                    crate::model::text::clean(e.code().unwrap_or("taken"))
                );
                tracing::warn!(endpoint = %resource.name, %why, "adding the subnet back without its old address");
                self.modify_once_free(id, &add, &remove, &[])
                    .await?
                    .map_err(|e| Error::from_sdk("ec2:ModifyVpcEndpoint", e))?;
                Some(why)
            }
            Err(e) => return Err(Error::from_sdk("ec2:ModifyVpcEndpoint", e)),
        };
        // EC2 keeps the endpoint pending while it makes and deletes the interfaces: the read-back
        // and the next change (another zone's record) wait for it, bounded.
        let settled = match self.available(id, &resource.name).await? {
            Ok(endpoint) => Some(endpoint),
            Err(why) => {
                tracing::warn!(endpoint = %resource.name, %why, "changed; not available yet");
                None
            }
        };
        let Some(why) = refused else {
            return Ok(None);
        };
        let ids: BTreeSet<String> = settled
            .iter()
            .flat_map(|e| e.network_interface_ids().iter().cloned())
            .collect();
        let now: BTreeMap<String, Address> = if ids.is_empty() {
            BTreeMap::new()
        } else {
            self.interfaces(&ids)
                .await?
                .into_values()
                .map(|i| (i.address.subnet.clone(), i.address))
                .collect()
        };
        Ok(Some(told(&asked, &now, &why)))
    }

    /// The endpoint's interface(s) in the zone. It moves no addresses: it keeps its interfaces in
    /// the other subnets, so it needs none there.
    async fn presence(&self, resources: &[Resource], place: &Place<'_>) -> Result<BTreeMap<String, Presence>> {
        let mut found = BTreeMap::new();
        for resource in resources {
            let detail: Detail = resource.detail_as()?;
            let in_zone = detail
                .interfaces
                .iter()
                .filter(|i| place.zone_subnets.contains(&i.address.subnet) || i.az == place.zone.name)
                .map(|i| i.id.clone())
                .collect();
            found.insert(
                resource.id.clone(),
                Presence {
                    in_zone,
                    needs: Vec::new(),
                    units: "network interfaces",
                    note: None,
                },
            );
        }
        Ok(found)
    }

    fn plan_evacuation(&self, resource: &mut Resource, how: &Evacuation) -> Result<Vec<String>> {
        let detail: Detail = resource.detail_as()?;
        Ok(encode(&addresses_in(&detail, &resource.subnets, &how.az_name)))
    }

    /// Asks for the journalled addresses again in the subnets it puts back. A record whose actions
    /// this version cannot read fails its line.
    fn plan_recovery(&self, resource: &mut Resource, record: &Record) -> Result<Vec<String>> {
        let actions = record.actions_as::<Action>()?;
        let mut detail: Detail = resource.detail_as()?;
        detail.ask = asked_again(actions, record, &resource.subnets);
        resource.set_detail(&detail);
        Ok(detail
            .ask
            .iter()
            .map(|a| format!("ask again for the address in {}: {}", a.subnet, a.addresses()))
            .collect())
    }

    async fn probe(&self) -> Vec<super::Check> {
        let endpoints = self.ec2.describe_vpc_endpoints().max_results(PROBE_PAGE).send().await;
        vec![super::Check::answered(TYPE, "ec2:DescribeVpcEndpoints", endpoints)]
    }
}

/// What the operator should know before an endpoint loses a subnet.
const INTERFACE_NOTE: &str =
    "EC2 deletes the endpoint's interface in the zone (its regional DNS name stops answering with \
     that address, its zonal name there stops answering); recover makes a new one, asking for the same address";

fn to_resource(arn: String, endpoint: &VpcEndpoint, interfaces: &BTreeMap<String, Interface>) -> Resource {
    let id = endpoint.vpc_endpoint_id().unwrap_or_default().to_owned();
    let state = endpoint.state().map(|s| s.as_str().to_owned()).unwrap_or_default();
    let tags = super::tags::fold(endpoint.tags().iter().map(|t| (t.key(), t.value())));
    let mut notes = vec![INTERFACE_NOTE.to_owned()];
    if is_state(&state, "pending") {
        notes.push(format!(
            "pending: the change waits until it is available (at most {} s)",
            SETTLE.as_secs()
        ));
    }
    let detail = Detail {
        endpoint_id: id.clone(),
        state: state.clone(),
        interfaces: endpoint
            .network_interface_ids()
            .iter()
            .filter_map(|n| interfaces.get(n).cloned())
            .collect(),
        ask: Vec::new(),
    };
    Resource {
        resource_type: TYPE,
        name: tags.get("Name").cloned().unwrap_or_else(|| id.clone()),
        id: arn,
        subnets: endpoint.subnet_ids().to_vec(),
        tags,
        unsupported: state_skip(&state),
        notes,
        detail: serde_json::to_value(detail).unwrap_or_default(),
        identity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::action::Action as _;
    use aws_sdk_ec2::operation::describe_network_interfaces::DescribeNetworkInterfacesOutput;
    use aws_sdk_ec2::operation::describe_vpc_endpoints::DescribeVpcEndpointsOutput;
    use aws_sdk_ec2::operation::modify_vpc_endpoint::ModifyVpcEndpointOutput;
    use aws_sdk_ec2::types::{NetworkInterfaceIpv6Address, State, Tag, VpcEndpointType};
    use aws_smithy_mocks::{mock, MockResponseInterceptor, Rule, RuleMode};
    use proptest::prelude::*;

    const ARN: &str = "arn:aws:ec2:us-east-1:123456789012:vpc-endpoint/vpce-1";

    /// An EC2 client answered by `rules` (aws-sdk-ec2 has no test-util here: built by hand).
    fn client(rules: &[&Rule]) -> aws_sdk_ec2::Client {
        let mut interceptor = MockResponseInterceptor::new().rule_mode(RuleMode::MatchAny);
        for rule in rules {
            interceptor = interceptor.with_rule(rule);
        }
        let config = aws_sdk_ec2::Config::builder()
            .behavior_version(aws_sdk_ec2::config::BehaviorVersion::latest())
            .region(aws_sdk_ec2::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_ec2::config::Credentials::new("a", "b", None, None, "test"))
            .retry_config(aws_sdk_ec2::config::retry::RetryConfig::disabled())
            .http_client(aws_smithy_mocks::create_mock_http_client())
            .interceptor(interceptor)
            .build();
        aws_sdk_ec2::Client::from_conf(config)
    }

    fn plugin(rules: &[&Rule]) -> VpcEndpoints {
        // A settle time far above a mocked read's, even on a loaded machine (a wait that ran out
        // early would read once less than the test counts); 1 ms between reads keeps it short.
        VpcEndpoints::new(client(rules), "us-east-1".into())
            .with_waits(Duration::from_millis(1), Duration::from_millis(500))
    }

    fn endpoint(state: &str, subnets: &[&str]) -> VpcEndpoint {
        let mut e = VpcEndpoint::builder()
            .vpc_endpoint_id("vpce-1")
            .owner_id("123456789012")
            .vpc_endpoint_type(VpcEndpointType::Interface)
            .state(State::from(state))
            .tags(Tag::builder().key("Name").value("sqs").build());
        for (n, s) in subnets.iter().enumerate() {
            e = e.subnet_ids(*s).network_interface_ids(format!("eni-{n}"));
        }
        e.build()
    }

    fn nic(n: usize, subnet: &str, az: &str, ipv4: &str) -> NetworkInterface {
        NetworkInterface::builder()
            .network_interface_id(format!("eni-{n}"))
            .subnet_id(subnet)
            .availability_zone(az)
            .private_ip_address(ipv4)
            .ipv6_addresses(
                NetworkInterfaceIpv6Address::builder()
                    .ipv6_address(format!("2600::{n}"))
                    .build(),
            )
            .build()
    }

    fn address(subnet: &str, ipv4: &str, ipv6: Option<&str>) -> Address {
        Address {
            subnet: subnet.into(),
            ipv4: Some(ipv4.into()),
            ipv6: ipv6.map(str::to_owned),
        }
    }

    fn listing(endpoints: Vec<VpcEndpoint>) -> Rule {
        mock!(aws_sdk_ec2::Client::describe_vpc_endpoints)
            .match_requests(|r| r.vpc_endpoint_ids().is_empty())
            .then_output(move || {
                DescribeVpcEndpointsOutput::builder()
                    .set_vpc_endpoints(Some(endpoints.clone()))
                    .build()
            })
    }

    fn interfaces(nics: Vec<NetworkInterface>) -> Rule {
        mock!(aws_sdk_ec2::Client::describe_network_interfaces).then_output(move || {
            DescribeNetworkInterfacesOutput::builder()
                .set_network_interfaces(Some(nics.clone()))
                .build()
        })
    }

    /// Interface endpoints only (the type filter), keyed by ARN, named by their Name tag, with their
    /// interfaces; a deleted one is gone; one not available nor pending is skipped with its state.
    #[tokio::test]
    async fn discovery_lists_interface_endpoints_with_their_interfaces() {
        let mut deleted = endpoint("deleted", &["subnet-x"]);
        deleted.vpc_endpoint_id = Some("vpce-9".into());
        let mut rejected = endpoint("rejected", &["subnet-x"]);
        rejected.vpc_endpoint_id = Some("vpce-2".into());
        let list = listing(vec![
            endpoint("available", &["subnet-a", "subnet-b"]),
            deleted,
            rejected,
        ]);
        let nics = interfaces(vec![
            nic(0, "subnet-a", "us-east-1a", "10.0.1.5"),
            nic(1, "subnet-b", "us-east-1b", "10.0.2.5"),
        ]);
        let found = plugin(&[&list, &nics]).discover().await.expect("discover");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].id, ARN);
        assert_eq!(found[0].name, "sqs");
        assert_eq!(found[0].subnets, ["subnet-a", "subnet-b"]);
        assert_eq!(found[0].unsupported, None);
        let detail: Detail = found[0].detail_as().expect("detail");
        assert_eq!(detail.interfaces.len(), 2);
        assert_eq!(
            detail.interfaces[1].address,
            address("subnet-b", "10.0.2.5", Some("2600::1"))
        );
        assert_eq!(
            found[1].unsupported.as_deref(),
            Some("state rejected: only available endpoints are changed")
        );
    }

    /// Evacuation journals the addresses of the zone's interface; recovery asks for them again only
    /// in the subnets it puts back.
    #[test]
    fn the_zones_addresses_are_journalled_and_asked_for_again() {
        let detail = Detail {
            endpoint_id: "vpce-1".into(),
            state: "available".into(),
            interfaces: vec![
                Interface {
                    id: "eni-0".into(),
                    az: "us-east-1a".into(),
                    address: address("subnet-a", "10.0.1.5", None),
                },
                Interface {
                    id: "eni-1".into(),
                    az: "us-east-1b".into(),
                    address: address("subnet-b", "10.0.2.5", None),
                },
            ],
            ask: Vec::new(),
        };
        let subnets = vec!["subnet-a".to_owned(), "subnet-b".to_owned()];
        let actions = addresses_in(&detail, &subnets, "us-east-1b");
        assert_eq!(actions, [Action::Address(address("subnet-b", "10.0.2.5", None))]);
        assert!(addresses_in(&detail, &subnets, "").is_empty());
        assert_eq!(actions[0].describe(), "address in subnet-b: 10.0.2.5");
        let record = Record {
            az_id: "use1-az2".into(),
            resource: ARN.into(),
            resource_type: TYPE.into(),
            removed_subnets: vec!["subnet-b".into()],
            state: crate::model::State::Done,
            version: 1,
            resource_name: None,
            original_subnets: subnets.clone(),
            actions: Vec::new(),
            run_id: None,
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        };
        let other = Action::Address(address("subnet-c", "10.0.3.5", None));
        let asked = asked_again(vec![actions[0].clone(), other.clone()], &record, &["subnet-a".into()]);
        assert_eq!(asked, [address("subnet-b", "10.0.2.5", None)]);
        // Already back (a later change put it back): nothing asked.
        assert!(asked_again(vec![actions[0].clone()], &record, &subnets).is_empty());
    }

    #[test]
    fn a_taken_address_is_told_apart_from_other_refusals() {
        assert!(address_taken(Some("InvalidIPAddress.InUse"), None));
        assert!(address_taken(
            Some("InvalidParameterValue"),
            Some("The address 10.0.1.5 is already in use")
        ));
        assert!(!address_taken(Some("InvalidParameterValue"), Some("bad subnet")));
        assert!(!address_taken(Some("IncorrectState"), None));
        assert!(!address_taken(None, None));
    }

    #[test]
    fn states_other_than_available_and_pending_are_skipped() {
        assert_eq!(state_skip("available"), None);
        assert_eq!(state_skip("Pending"), None);
        for state in [
            "pendingAcceptance",
            "deleting",
            "failed",
            "rejected",
            "expired",
            "partial",
        ] {
            assert!(state_skip(state).is_some_and(|s| s.contains(state)), "{state}");
        }
    }

    #[test]
    fn the_line_says_which_address_changed_from_what_to_what() {
        let old = address("subnet-b", "10.0.2.5", None);
        let now = BTreeMap::from([("subnet-b".to_owned(), address("subnet-b", "10.0.2.77", Some("2600::7")))]);
        let told_ = told(&[&old], &now, "EC2 refused the old address (InvalidIPAddress.InUse)");
        assert_eq!(
            told_,
            ["address in subnet-b changed from 10.0.2.5 to 10.0.2.77 and 2600::7: EC2 refused the old address (InvalidIPAddress.InUse); update allow-lists keyed on the old address"]
        );
        let same = BTreeMap::from([("subnet-b".to_owned(), address("subnet-b", "10.0.2.5", Some("2600::7")))]);
        assert_eq!(told(&[&old], &same, "x"), ["address in subnet-b: 10.0.2.5 again"]);
        assert!(told(&[&old], &BTreeMap::new(), "x")[0].contains("not made yet"));
    }

    fn resource(state: &str, subnets: &[&str], ask: Vec<Address>) -> Resource {
        let nics: BTreeMap<String, Interface> = BTreeMap::new();
        let mut r = to_resource(ARN.into(), &endpoint(state, subnets), &nics);
        let mut detail: Detail = r.detail_as().expect("detail");
        detail.ask = ask;
        r.set_detail(&detail);
        r
    }

    fn by_id(state: &'static str, subnets: &'static [&'static str]) -> Rule {
        mock!(aws_sdk_ec2::Client::describe_vpc_endpoints)
            .match_requests(|r| r.vpc_endpoint_ids() == ["vpce-1"])
            .then_output(move || {
                DescribeVpcEndpointsOutput::builder()
                    .vpc_endpoints(endpoint(state, subnets))
                    .build()
            })
    }

    /// Evacuation removes the zone's subnet only (no address asked for) and waits until the
    /// endpoint is available again.
    #[tokio::test]
    async fn evacuation_removes_the_subnet_and_waits_for_the_endpoint() {
        let modify = mock!(aws_sdk_ec2::Client::modify_vpc_endpoint)
            .match_requests(|r| {
                r.vpc_endpoint_id() == Some("vpce-1")
                    && r.remove_subnet_ids() == ["subnet-b"]
                    && r.add_subnet_ids().is_empty()
                    && r.subnet_configurations().is_empty()
            })
            .then_output(|| ModifyVpcEndpointOutput::builder().r#return(true).build());
        let read = mock!(aws_sdk_ec2::Client::describe_vpc_endpoints)
            .sequence()
            .output(|| {
                DescribeVpcEndpointsOutput::builder()
                    .vpc_endpoints(endpoint("pending", &["subnet-a"]))
                    .build()
            })
            .output(|| {
                DescribeVpcEndpointsOutput::builder()
                    .vpc_endpoints(endpoint("available", &["subnet-a"]))
                    .build()
            })
            .build();
        let vpce = plugin(&[&modify, &read]);
        let told_ = vpce
            .apply_and_tell(
                &resource("available", &["subnet-a", "subnet-b"], Vec::new()),
                &["subnet-a".into()],
            )
            .await
            .expect("changed");
        assert_eq!(told_, None);
        assert_eq!((modify.num_calls(), read.num_calls()), (1, 2));
    }

    /// A pending endpoint is waited for, bounded: one that stays pending is not changed.
    #[tokio::test]
    async fn an_endpoint_that_stays_pending_is_not_changed() {
        let modify = mock!(aws_sdk_ec2::Client::modify_vpc_endpoint)
            .then_output(|| ModifyVpcEndpointOutput::builder().r#return(true).build());
        let read = by_id("pending", &["subnet-a", "subnet-b"]);
        let err = plugin(&[&modify, &read])
            .apply_and_tell(
                &resource("pending", &["subnet-a", "subnet-b"], Vec::new()),
                &["subnet-a".into()],
            )
            .await
            .expect_err("not changed");
        assert!(err.to_string().contains("still pending"), "{err}");
        assert_eq!(modify.num_calls(), 0);
    }

    /// Recovery asks for the journalled address in the subnet it adds back; EC2 refuses it (taken):
    /// the subnet is added back without it, and the line says what the address is now.
    #[tokio::test]
    async fn a_taken_address_is_given_up_and_the_change_is_told() {
        let asked = mock!(aws_sdk_ec2::Client::modify_vpc_endpoint)
            .match_requests(|r| {
                r.add_subnet_ids() == ["subnet-b"]
                    && r.subnet_configurations().len() == 1
                    && r.subnet_configurations()[0].ipv4() == Some("10.0.2.5")
                    && r.subnet_configurations()[0].subnet_id() == Some("subnet-b")
            })
            .then_error(|| {
                ModifyVpcEndpointError::generic(
                    aws_sdk_ec2::error::ErrorMetadata::builder()
                        .code("InvalidIPAddress.InUse")
                        .message("The specified address 10.0.2.5 is already in use.")
                        .build(),
                )
            });
        let plain = mock!(aws_sdk_ec2::Client::modify_vpc_endpoint)
            .match_requests(|r| r.add_subnet_ids() == ["subnet-b"] && r.subnet_configurations().is_empty())
            .then_output(|| ModifyVpcEndpointOutput::builder().r#return(true).build());
        let read = by_id("available", &["subnet-a", "subnet-b"]);
        let nics = interfaces(vec![
            nic(0, "subnet-a", "us-east-1a", "10.0.1.5"),
            nic(1, "subnet-b", "us-east-1b", "10.0.2.77"),
        ]);
        let told_ = plugin(&[&asked, &plain, &read, &nics])
            .apply_and_tell(
                &resource("available", &["subnet-a"], vec![address("subnet-b", "10.0.2.5", None)]),
                &["subnet-a".into(), "subnet-b".into()],
            )
            .await
            .expect("changed")
            .expect("told");
        assert_eq!((asked.num_calls(), plain.num_calls()), (1, 1));
        assert!(
            told_[0].starts_with("address in subnet-b changed from 10.0.2.5 to 10.0.2.77"),
            "{told_:?}"
        );
    }

    /// Any other refusal fails the line, and is not retried without the address.
    #[tokio::test]
    async fn another_refusal_fails_the_line() {
        let modify = mock!(aws_sdk_ec2::Client::modify_vpc_endpoint).then_error(|| {
            ModifyVpcEndpointError::generic(
                aws_sdk_ec2::error::ErrorMetadata::builder()
                    .code("DuplicateSubnetsInSameZone")
                    .message("Found another VPC endpoint subnet in the availability zone")
                    .build(),
            )
        });
        let err = plugin(&[&modify])
            .apply_and_tell(
                &resource("available", &["subnet-a"], vec![address("subnet-b", "10.0.2.5", None)]),
                &["subnet-a".into(), "subnet-b".into()],
            )
            .await
            .expect_err("refused");
        assert!(
            crate::error::describe(&err).contains("DuplicateSubnetsInSameZone"),
            "{err}"
        );
        assert_eq!(modify.num_calls(), 1);
    }

    /// EC2 refuses a change while the endpoint is `pending` even where a read said `available`
    /// (eventual consistency): the change is sent again until it is taken, nothing lost.
    #[tokio::test]
    async fn a_change_refused_as_pending_is_sent_again() {
        let modify = mock!(aws_sdk_ec2::Client::modify_vpc_endpoint)
            .sequence()
            .error(|| {
                ModifyVpcEndpointError::generic(
                    aws_sdk_ec2::error::ErrorMetadata::builder()
                        .code("IncorrectState")
                        .message("The VPC endpoint is in the pending state")
                        .build(),
                )
            })
            .output(|| ModifyVpcEndpointOutput::builder().r#return(true).build())
            .build();
        let read = by_id("available", &["subnet-a"]);
        let told_ = plugin(&[&modify, &read])
            .apply_and_tell(
                &resource("available", &["subnet-a", "subnet-b"], Vec::new()),
                &["subnet-a".into()],
            )
            .await
            .expect("changed once EC2 took it");
        assert_eq!(told_, None);
        assert_eq!(modify.num_calls(), 2);
    }

    fn ip() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[0-9a-f:.]{1,39}")
    }

    proptest! {
        /// Whatever the addresses, an action reads back as it was written, and its words name the
        /// subnet.
        #[test]
        fn actions_round_trip(subnet in "subnet-[0-9a-f]{1,17}", ipv4 in ip(), ipv6 in ip()) {
            let action = Action::Address(Address { subnet: subnet.clone(), ipv4, ipv6 });
            let encoded = crate::model::action::encode_one(&action);
            prop_assert_eq!(crate::model::action::decode::<Action>(&encoded), Ok(action.clone()));
            prop_assert!(action.describe().contains(&subnet));
        }
    }
}
