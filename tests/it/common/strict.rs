//! The strict layer: what AWS does that moto does not, modelled in front of the emulator (issue 50).
//! The proxy runs every call through it once [`super::proxy::Proxy::strict`] is on; each rule
//! names the AWS document it follows.
//!
//! - **Eventual consistency.** "Eventual consistency in the Amazon EC2 API" (EC2 API reference,
//!   and the same of Auto Scaling, ECS, Batch, EventBridge and Scheduler): a read right after a
//!   write may answer with the state from before it. Modelled: at each write of a service, every
//!   read of that service seen so far is answered, for its next [`STALE_READS`] tries, as it would
//!   have been answered just before the write (read again from the emulator at that moment, so
//!   another party's change made before the write is in it). The window is counted in reads, not
//!   seconds, so that every run goes the same way; a test says when time passes
//!   ([`super::proxy::Proxy::settle_reads`]: an operator's next command, seconds later).
//! - **Lambda's revisions and update lifecycle.** Lambda API reference, UpdateFunctionConfiguration
//!   and "Lambda function states": an update leaves `LastUpdateStatus` `InProgress` for a while;
//!   another update meanwhile is refused with `ResourceConflictException` (409); the function's
//!   `RevisionId` changes on every update and again when it completes (aws/aws-sdk#377), and an
//!   update naming another revision is refused with `PreconditionFailedException` (412).
//! - **Updates that take a while.** AWS Batch User Guide, "Updating compute environments": during an
//!   update "the status of the compute environment changes to `UPDATING`", and an environment is
//!   updated again only once it is `VALID` (a second `UpdateComputeEnvironment` meanwhile is refused
//!   with Batch's `ClientException`). AWS PrivateLink Guide, "Interface endpoint lifecycle": an
//!   endpoint being changed is `pending` until its network interfaces are made and deleted, and EC2
//!   refuses another `ModifyVpcEndpoint` meanwhile (`IncorrectState`, EC2 API reference, "Error
//!   codes": "the resource is in an incorrect state for the request"). Modelled: after such an update,
//!   the next [`UPDATE_READS`] reads of the resource show it `UPDATING` / `pending`, and an update
//!   before then is refused with the service's error.
//! - **At most 16 subnets.** ECS `AwsVpcConfiguration.subnets` ("All specified subnets must be
//!   from the same VPC. You can specify up to 16 subnets"), Lambda `VpcConfig.SubnetIds` (a list
//!   of at most 16), EventBridge and EventBridge Scheduler ECS targets (`AwsVpcConfiguration`,
//!   likewise 16): a longer list is refused with the service's validation error.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::Response;
use serde_json::Value;

/// How many reads of one request after a write still see the state from before it.
pub const STALE_READS: usize = 2;
/// How many reads of a Lambda function see its update `InProgress`.
pub const UPDATE_READS: usize = 2;
/// AWS's limit on an awsvpc configuration's or a Lambda function's subnets.
pub const MOST_SUBNETS: usize = 16;

/// The services whose reads are answered eventually consistently here. DynamoDB is left out (the
/// journal reads with strong consistency and writes conditionally), and so are the services the
/// proxy answers itself or in part (ARC, RDS, ElastiCache), STS, and Lambda, whose lifecycle is
/// modelled instead.
const EVENTUAL: &[&str] = &["ec2", "autoscaling", "ecs", "batch", "events", "scheduler"];

/// One read as sent, to send again when a write freezes what it saw.
#[derive(Clone)]
pub struct Sent {
    /// The HTTP method.
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// Its headers, as sent.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: String,
}

/// An answer as kept.
#[derive(Clone)]
pub struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

impl Answer {
    /// The answer, as an HTTP response.
    pub fn response(&self) -> Response<Body> {
        Response::builder()
            .status(self.status)
            .header("content-type", &self.content_type)
            .body(Body::from(self.body.clone()))
            .expect("response")
    }
}

/// One Lambda function's revision and update in progress.
#[derive(Default)]
struct Function {
    revision: u64,
    in_progress_reads: usize,
}

/// What the strict layer keeps.
#[derive(Default)]
pub struct Strict {
    /// Whether it is on.
    pub on: bool,
    /// Each read seen (by service, then by request), as sent.
    reads: BTreeMap<String, BTreeMap<String, Sent>>,
    /// Reads answered from before a write: the answer and how many tries it still serves.
    stale: BTreeMap<String, (Answer, usize)>,
    /// Lambda functions by name.
    functions: BTreeMap<String, Function>,
    /// Batch environments (`batch:NAME`) and VPC endpoints (`ec2:vpce-…`) being updated: how many
    /// more reads show the update in progress.
    updating: BTreeMap<String, usize>,
    /// How many reads a Batch or VPC endpoint update shows in progress (0: [`UPDATE_READS`]).
    pub update_reads: usize,
    /// Stale answers given and refusals made, for the tests to see that the rules ran.
    pub stale_answers: usize,
    /// Refusals made, as `service:code`.
    pub refusals: Vec<String>,
}

/// What the layer makes of a call before it reaches the emulator.
pub enum Before {
    /// Forward it (with this body in place of the request's, when given).
    Forward(Option<String>),
    /// Answer this instead.
    Answer(Response<Body>),
    /// A write: forward it once these reads (of its service) were read again and frozen.
    Freeze(Vec<(String, Sent)>),
}

/// Whether a call reads: REST GETs, and actions named Describe/List/Get.
pub fn is_read(method: &str, action: &str) -> bool {
    let name = action.rsplit('/').next().unwrap_or(action).to_ascii_lowercase();
    method == "GET"
        || ["describe", "list", "get", "batchget"]
            .iter()
            .any(|p| name.starts_with(p))
}

/// The key a read is kept under: the request as sent, less what varies between two sends of it.
fn key(service: &str, method: &str, uri: &str, body: &str) -> String {
    format!("{service} {method} {uri} {body}")
}

impl Strict {
    /// Before the call reaches the emulator.
    pub fn before(&mut self, service: &str, method: &str, uri: &str, action: &str, body: &str) -> Before {
        if let Some(refusal) = too_many_subnets(service, body) {
            self.refusals.push(format!("{service}:{}", refusal.0));
            return Before::Answer(error(service, 400, refusal.0, &refusal.1));
        }
        if service == "lambda" {
            return self.lambda_before(method, uri, body);
        }
        if let Some(key) = updated(service, uri, action, body) {
            // A refusal is a look at the update in progress, as a read is: it counts as one.
            if let Some(left) = self.updating.get_mut(&key).filter(|left| **left > 0) {
                *left -= 1;
                let (code, refusal) = if service == "batch" {
                    let name = key.trim_start_matches("batch:");
                    let message = format!("Cannot update compute environment {name}: its status is UPDATING");
                    ("ClientException", error(service, 400, "ClientException", &message))
                } else {
                    let id = key.trim_start_matches("ec2:");
                    let message = format!("The VPC endpoint {id} is in the pending state and cannot be modified.");
                    (
                        "IncorrectState",
                        super::proxy::service_error("ec2", 400, "IncorrectState", &message),
                    )
                };
                self.refusals.push(format!("{service}:{code}"));
                return Before::Answer(refusal);
            }
        }
        if !EVENTUAL.contains(&service) {
            return Before::Forward(None);
        }
        if is_read(method, action) {
            let k = key(service, method, uri, body);
            if let Some((answer, left)) = self.stale.get_mut(&k) {
                *left -= 1;
                let answer = answer.clone();
                if *left == 0 {
                    self.stale.remove(&k);
                }
                self.stale_answers += 1;
                return Before::Answer(answer.response());
            }
            return Before::Forward(None);
        }
        let reads = self.reads.get(service).cloned().unwrap_or_default();
        Before::Freeze(reads.into_iter().collect())
    }

    /// Time passes: the writes made so far show in every read, and Lambda's updates complete. A
    /// Batch or VPC endpoint update outlasts that (minutes, where reads lag by seconds): the next
    /// run still reads it in progress, for its reads, and waits.
    pub fn time_passes(&mut self) {
        self.stale.clear();
        for function in self.functions.values_mut() {
            if function.in_progress_reads > 0 {
                function.in_progress_reads = 0;
                function.revision += 1;
            }
        }
    }

    /// A read was answered by the emulator: kept, to be read again at the service's next write.
    pub fn read_seen(&mut self, service: &str, sent: Sent) {
        if EVENTUAL.contains(&service) {
            let k = key(service, &sent.method, &sent.uri, &sent.body);
            self.reads.entry(service.to_owned()).or_default().insert(k, sent);
        }
    }

    /// A write is about to be forwarded: these are its service's reads as they answer now.
    pub fn freeze(&mut self, frozen: Vec<(String, u16, String, String)>) {
        for (k, status, content_type, body) in frozen {
            if status == 200 {
                let answer = Answer {
                    status,
                    content_type,
                    body,
                };
                self.stale.insert(k, (answer, STALE_READS));
            }
        }
    }

    /// Lambda, before the call: an update refused while another runs or with another revision.
    fn lambda_before(&mut self, method: &str, uri: &str, body: &str) -> Before {
        let Some((name, configuration)) = function_path(uri) else {
            return Before::Forward(None);
        };
        if !(method == "PUT" && configuration) {
            return Before::Forward(None);
        }
        let function = self.functions.entry(name.clone()).or_default();
        if function.in_progress_reads > 0 {
            self.refusals.push("lambda:ResourceConflictException".into());
            return Before::Answer(error(
                "lambda",
                409,
                "ResourceConflictException",
                &format!(
                    "The operation cannot be performed at this time. An update is in progress for resource: \
                     arn:aws:lambda:us-east-1:123456789012:function:{name}"
                ),
            ));
        }
        let mut request: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let sent = request.get("RevisionId").and_then(Value::as_str).map(str::to_owned);
        if sent.is_some_and(|r| r != revision_id(&name, function.revision)) {
            self.refusals.push("lambda:PreconditionFailedException".into());
            return Before::Answer(error(
                "lambda",
                412,
                "PreconditionFailedException",
                "The Revision Id provided does not match the latest Revision Id. Call the GetFunction/GetAlias API \
                 to retrieve the latest Revision Id",
            ));
        }
        // The emulator keeps revisions of its own: this layer's are the ones that count.
        if let Some(object) = request.as_object_mut() {
            object.remove("RevisionId");
        }
        Before::Forward(Some(request.to_string()))
    }

    /// After the emulator answered: the answer as this layer shows it, if it differs.
    pub fn after(
        &mut self,
        service: &str,
        (method, uri, action, request): (&str, &str, &str, &str),
        status: u16,
        body: &str,
    ) -> Option<String> {
        if service == "lambda" {
            return self.lambda_after(method, uri, status, body);
        }
        if status != 200 {
            return None;
        }
        if let Some(key) = updated(service, uri, action, request) {
            let reads = if self.update_reads == 0 {
                UPDATE_READS
            } else {
                self.update_reads
            };
            self.updating.insert(key, reads);
            return None;
        }
        match (service, action) {
            ("batch", a) if a.ends_with("describecomputeenvironments") => self.batch_described(body),
            ("ec2", "DescribeVpcEndpoints") => self.endpoints_described(body),
            _ => None,
        }
    }

    /// A description of compute environments: those being updated read `UPDATING`, once less.
    fn batch_described(&mut self, body: &str) -> Option<String> {
        let mut answer: Value = serde_json::from_str(body).ok()?;
        let mut changed = false;
        for environment in answer.get_mut("computeEnvironments")?.as_array_mut()? {
            let name = environment["computeEnvironmentName"].as_str().unwrap_or_default();
            if let Some(left) = self.updating.get_mut(&format!("batch:{name}")).filter(|l| **l > 0) {
                *left -= 1;
                environment["status"] = Value::String("UPDATING".into());
                changed = true;
            }
        }
        changed.then(|| answer.to_string())
    }

    /// A description of VPC endpoints (EC2's XML): those being changed read `pending`, once less.
    fn endpoints_described(&mut self, body: &str) -> Option<String> {
        let mut text = body.to_owned();
        let mut changed = false;
        for (key, left) in self
            .updating
            .iter_mut()
            .filter(|(k, l)| k.starts_with("ec2:") && **l > 0)
        {
            let tag = format!("<vpcEndpointId>{}</vpcEndpointId>", key.trim_start_matches("ec2:"));
            let Some(at) = text.find(&tag) else {
                continue;
            };
            // Its own `state`: the first after its ID, before the next endpoint's ID.
            let end = text[at + tag.len()..]
                .find("<vpcEndpointId>")
                .map_or(text.len(), |n| at + tag.len() + n);
            let Some(open) = text[at..end].find("<state>").map(|n| at + n + "<state>".len()) else {
                continue;
            };
            let Some(close) = text[open..end].find("</state>").map(|n| open + n) else {
                continue;
            };
            text.replace_range(open..close, "pending");
            *left -= 1;
            changed = true;
        }
        changed.then_some(text)
    }

    /// Lambda, after the emulator answered: the answer carries this layer's revision and status,
    /// and an update starts its lifecycle.
    fn lambda_after(&mut self, method: &str, uri: &str, status: u16, body: &str) -> Option<String> {
        if status != 200 {
            return None;
        }
        let mut answer: Value = serde_json::from_str(body).ok()?;
        match function_path(uri) {
            Some((name, true)) if method == "PUT" => {
                let function = self.functions.entry(name.clone()).or_default();
                function.revision += 1;
                function.in_progress_reads = UPDATE_READS;
                stamp(&mut answer, &name, function.revision, true);
            }
            Some((name, _)) if method == "GET" => {
                let function = self.functions.entry(name.clone()).or_default();
                let in_progress = function.in_progress_reads > 0;
                let shown = function.revision;
                if in_progress {
                    function.in_progress_reads -= 1;
                    if function.in_progress_reads == 0 {
                        // The update completes: its revision changes once more.
                        function.revision += 1;
                    }
                }
                match answer.get_mut("Configuration") {
                    Some(configuration) => stamp(configuration, &name, shown, in_progress),
                    None => stamp(&mut answer, &name, shown, in_progress),
                }
            }
            None if method == "GET" && uri.contains("/functions") => {
                let functions = answer.get_mut("Functions").and_then(Value::as_array_mut)?;
                for configuration in functions {
                    let name = configuration["FunctionName"].as_str().unwrap_or_default().to_owned();
                    let function = self.functions.entry(name.clone()).or_default();
                    let in_progress = function.in_progress_reads > 0;
                    stamp(configuration, &name, function.revision, in_progress);
                }
            }
            _ => return None,
        }
        Some(answer.to_string())
    }
}

/// The function a Lambda path names, and whether it is its `/configuration`.
fn function_path(uri: &str) -> Option<(String, bool)> {
    let path = uri.split('?').next().unwrap_or(uri);
    let rest = path.strip_prefix("/2015-03-31/functions/")?;
    let mut parts = rest.splitn(2, '/');
    let named = percent_decode(parts.next()?);
    if named.is_empty() {
        return None;
    }
    let tail = parts.next().unwrap_or_default();
    if !(tail.is_empty() || tail == "configuration") {
        return None;
    }
    let name = match named.split_once("function:") {
        Some((_, after)) => after.split(':').next().unwrap_or(after).to_owned(),
        None => named,
    };
    Some((name, tail == "configuration"))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn revision_id(name: &str, revision: u64) -> String {
    format!("{name}-revision-{revision}")
}

/// A function configuration as this layer shows it.
fn stamp(configuration: &mut Value, name: &str, revision: u64, in_progress: bool) {
    if let Some(object) = configuration.as_object_mut() {
        object.insert("RevisionId".into(), Value::String(revision_id(name, revision)));
        let status = if in_progress { "InProgress" } else { "Successful" };
        object.insert("LastUpdateStatus".into(), Value::String(status.into()));
        object.insert("State".into(), Value::String("Active".into()));
    }
}

/// A list of subnets longer than AWS takes, in a call that sets one: the service's error.
fn too_many_subnets(service: &str, body: &str) -> Option<(&'static str, String)> {
    let code = match service {
        "ecs" => "InvalidParameterException",
        "lambda" => "InvalidParameterValueException",
        "events" | "scheduler" => "ValidationException",
        _ => return None,
    };
    let request: Value = serde_json::from_str(body).ok()?;
    let longest = longest_subnet_list(&request);
    (longest > MOST_SUBNETS).then(|| {
        (
            code,
            format!("subnets can have at most {MOST_SUBNETS} items; {longest} were given"),
        )
    })
}

/// The longest list of subnets anywhere in a request.
fn longest_subnet_list(value: &Value) -> usize {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match (k.to_ascii_lowercase().as_str(), v) {
                ("subnets" | "subnetids", Value::Array(list)) => list.len(),
                _ => longest_subnet_list(v),
            })
            .max()
            .unwrap_or(0),
        Value::Array(list) => list.iter().map(longest_subnet_list).max().unwrap_or(0),
        _ => 0,
    }
}

/// The resource an update that takes a while names (`batch:NAME`, `ec2:vpce-…`), if the call is one.
fn updated(service: &str, uri: &str, action: &str, body: &str) -> Option<String> {
    match service {
        "batch"
            if uri
                .split('?')
                .next()
                .unwrap_or(uri)
                .ends_with("/updatecomputeenvironment") =>
        {
            let request: Value = serde_json::from_str(body).ok()?;
            let named = request["computeEnvironment"].as_str()?;
            let name = named.rsplit('/').next().unwrap_or(named);
            Some(format!("batch:{name}"))
        }
        "ec2" if action == "ModifyVpcEndpoint" => body
            .split('&')
            .find_map(|kv| kv.strip_prefix("VpcEndpointId="))
            .map(|id| format!("ec2:{id}")),
        _ => None,
    }
}

/// An error in a JSON service's wire format.
fn error(service: &str, status: u16, code: &str, message: &str) -> Response<Body> {
    let body = match service {
        // Lambda's REST-JSON errors carry the code in the header and a `Type`.
        "lambda" => serde_json::json!({"Type": "User", "message": message}),
        _ => serde_json::json!({"__type": code, "message": message}),
    };
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("x-amzn-errortype", code)
        .body(Body::from(body.to_string()))
        .expect("response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambda_paths_name_their_function() {
        let arn =
            "/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Aapi-fn/configuration";
        assert_eq!(function_path(arn), Some(("api-fn".into(), true)));
        assert_eq!(function_path("/2015-03-31/functions/web"), Some(("web".into(), false)));
        assert_eq!(function_path("/2015-03-31/functions/"), None);
        assert_eq!(function_path("/2015-03-31/functions/web/aliases"), None);
    }

    #[test]
    fn a_seventeenth_subnet_is_refused_anywhere_in_the_request() {
        let subnets: Vec<String> = (0..17).map(|i| format!("subnet-{i}")).collect();
        let ecs = serde_json::json!({"networkConfiguration": {"awsvpcConfiguration": {"subnets": subnets}}});
        assert!(too_many_subnets("ecs", &ecs.to_string()).is_some());
        let sixteen = serde_json::json!({"VpcConfig": {"SubnetIds": &subnets[..16]}});
        assert!(too_many_subnets("lambda", &sixteen.to_string()).is_none());
        assert!(too_many_subnets("autoscaling", &ecs.to_string()).is_none());
    }

    #[test]
    fn an_update_in_progress_shows_for_its_reads_and_refuses_another() {
        let mut strict = Strict::default();
        let update = r#"{"computeEnvironment":"arn:aws:batch:us-east-1:123456789012:compute-environment/ce1"}"#;
        let uri = "/v1/updatecomputeenvironment";
        assert!(matches!(
            strict.before("batch", "POST", uri, uri, update),
            Before::Freeze(_)
        ));
        assert_eq!(strict.after("batch", ("POST", uri, uri, update), 200, "{}"), None);
        assert!(matches!(
            strict.before("batch", "POST", uri, uri, update),
            Before::Answer(_)
        ));
        let described = r#"{"computeEnvironments":[{"computeEnvironmentName":"ce1","status":"VALID"}]}"#;
        let read = "/v1/describecomputeenvironments";
        // The refusal was one look at it; the reads make the others.
        for _ in 1..UPDATE_READS {
            let shown = strict
                .after("batch", ("POST", read, read, "{}"), 200, described)
                .expect("rewritten");
            assert!(shown.contains("UPDATING"), "{shown}");
        }
        assert_eq!(strict.after("batch", ("POST", read, read, "{}"), 200, described), None);
        assert!(matches!(
            strict.before("batch", "POST", uri, uri, update),
            Before::Freeze(_)
        ));

        let modify = "Action=ModifyVpcEndpoint&VpcEndpointId=vpce-2&AddSubnetId.1=subnet-1";
        strict.after("ec2", ("POST", "/", "ModifyVpcEndpoint", modify), 200, "<ok/>");
        assert!(matches!(
            strict.before("ec2", "POST", "/", "ModifyVpcEndpoint", modify),
            Before::Answer(_)
        ));
        let xml = "<vpcEndpointSet><item><vpcEndpointId>vpce-1</vpcEndpointId><state>available</state></item>\
                   <item><vpcEndpointId>vpce-2</vpcEndpointId><subnetIdSet><item>subnet-1</item></subnetIdSet>\
                   <state>available</state></item></vpcEndpointSet>";
        let shown = strict
            .after("ec2", ("POST", "/", "DescribeVpcEndpoints", ""), 200, xml)
            .expect("rewritten");
        assert_eq!(shown.matches("<state>pending</state>").count(), 1, "{shown}");
        assert!(shown.contains("vpce-1</vpcEndpointId><state>available"), "{shown}");
        assert!(matches!(
            strict.before("ec2", "POST", "/", "ModifyVpcEndpoint", modify),
            Before::Freeze(_)
        ));
        // An update outlasts the reads' lag: time passing ends the one, not the other.
        strict.after("ec2", ("POST", "/", "ModifyVpcEndpoint", modify), 200, "<ok/>");
        strict.time_passes();
        assert!(matches!(
            strict.before("ec2", "POST", "/", "ModifyVpcEndpoint", modify),
            Before::Answer(_)
        ));
    }

    #[test]
    fn reads_and_writes_are_told_apart() {
        assert!(is_read("POST", "DescribeAutoScalingGroups"));
        assert!(is_read("POST", "/v1/describecomputeenvironments"));
        assert!(is_read("GET", "/schedules/s1"));
        assert!(!is_read("POST", "UpdateAutoScalingGroup"));
        assert!(!is_read("PUT", "/schedules/s1"));
        assert!(!is_read("POST", "/v1/updatecomputeenvironment"));
    }
}
