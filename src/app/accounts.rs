//! Runs across accounts. An AZ ID is one physical zone in every account, so one command can
//! evacuate it everywhere: this module says which accounts `--accounts` names (a list, or the
//! organization's active accounts, optionally under some OUs) and builds, per account, the SDK
//! configuration of the azevac role assumed there. The journal stays in the caller's account; only
//! the resources' calls use the assumed roles.

use aws_config::SdkConfig;
use aws_credential_types::provider::future;
use aws_sdk_sts::config::{Credentials, ProvideCredentials, SharedCredentialsProvider};

use crate::model::Fleet;
use crate::{Error, Result};

/// `--accounts org`: every ACTIVE account of the caller's organization.
pub const ORG: &str = "org";

/// The call that reaches an account (made by the SDK's assume-role provider, named here for errors
/// and for the IAM policy's drift test).
const ASSUME_ROLE: &str = "sts:AssumeRole";

/// The role assumed in each account unless `--role-name` or `--role-arn-template` says otherwise.
pub const DEFAULT_ROLE_NAME: &str = "azevac";

/// One `--accounts` value: a comma-separated list of twelve-digit account IDs, or `org`.
pub fn parse_accounts(value: &str) -> Result<Vec<String>, String> {
    if value.trim() == ORG {
        return Ok(vec![ORG.to_owned()]);
    }
    let accounts: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(parse_account_id)
        .collect::<Result<_, _>>()?;
    if accounts.is_empty() {
        return Err(format!(
            "no account in {value:?}: give twelve-digit account IDs separated by commas, or `{ORG}`"
        ));
    }
    Ok(accounts)
}

/// One twelve-digit AWS account ID.
pub fn parse_account_id(value: &str) -> Result<String, String> {
    let value = value.trim();
    if crate::model::is_account_id(value) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{:?} is not an AWS account ID: give the twelve digits (e.g. 111111111111)",
            crate::model::text::clean(value)
        ))
    }
}

/// One `--ou` value: an organizational unit ID (`ou-` + root part + `-` + unit part) or a root ID.
pub fn parse_ou(value: &str) -> Result<String, String> {
    let value = value.trim();
    let alnum = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let ok = match value.split('-').collect::<Vec<_>>().as_slice() {
        ["ou", root, unit] => {
            (4..=32).contains(&root.len()) && alnum(root) && (8..=32).contains(&unit.len()) && alnum(unit)
        }
        ["r", root] => (4..=32).contains(&root.len()) && alnum(root),
        _ => false,
    };
    if ok {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{:?} is not an organizational unit or root ID: give one like ou-ab12-cdef3456 or r-ab12 \
             (aws organizations list-organizational-units-for-parent)",
            crate::model::text::clean(value)
        ))
    }
}

/// Refuse a fan-out that cannot work, before any call (a saved plan is checked again here).
pub fn validate(fleet: &Fleet, types: &[String]) -> Result<()> {
    // Whether or not accounts are named: a recover reaches the accounts its records name with them.
    validate_role(fleet)?;
    if fleet.is_empty() {
        if !fleet.ous.is_empty() {
            return Err(Error::BadInput("--ou needs --accounts org".into()));
        }
        return Ok(());
    }
    let org = fleet.accounts.iter().any(|a| a == ORG);
    if org && fleet.accounts.len() > 1 {
        return Err(Error::BadInput(format!(
            "--accounts is either `{ORG}` or a list of account IDs, not both"
        )));
    }
    if !org && !fleet.ous.is_empty() {
        return Err(Error::BadInput(format!("--ou needs --accounts {ORG}")));
    }
    for account in fleet.accounts.iter().filter(|a| *a != ORG).chain(&fleet.exclude) {
        parse_account_id(account).map_err(Error::BadInput)?;
    }
    let kubernetes = crate::plugins::kubernetes_types();
    if let Some(named) = types.iter().find(|t| kubernetes.contains(&t.as_str())) {
        return Err(Error::BadInput(format!(
            "--type {named} acts through kube contexts, not AWS accounts: run it without --accounts \
             (a run across accounts covers {})",
            crate::plugins::types()
                .into_iter()
                .filter(|t| !kubernetes.contains(t))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// Refuse a role name, role ARN template or external ID that cannot name one IAM role in each
/// account, before it drives any AssumeRole: a saved plan's come from a file anyone may edit.
pub fn validate_role(fleet: &Fleet) -> Result<()> {
    if let Some(name) = fleet.role_name.as_deref().filter(|n| !is_role_path(n)) {
        return Err(Error::BadInput(format!(
            "--role-name {:?} is not an IAM role name (1 to 64 letters, digits and +=,.@_-, after a \
             path such as ops/ if the role has one), e.g. azevac or ops/azevac",
            crate::model::text::clean(name)
        )));
    }
    if let Some(template) = fleet.role_arn_template.as_deref().filter(|t| !is_role_template(t)) {
        return Err(Error::BadInput(format!(
            "--role-arn-template {:?} must be an IAM role ARN with {{account}} as its account, e.g. \
             arn:aws:iam::{{account}}:role/ops/azevac (or arn:{{partition}}:iam::{{account}}:role/NAME)",
            crate::model::text::clean(template)
        )));
    }
    if let Some(id) = fleet.external_id.as_deref().filter(|id| !is_external_id(id)) {
        return Err(Error::BadInput(format!(
            "--external-id {:?} is not one AWS accepts (2 to 1224 letters, digits and +=,.@:/_-)",
            crate::model::text::clean(id)
        )));
    }
    Ok(())
}

/// The characters of an IAM name (roles, paths): letters, digits and `+=,.@_-`.
fn is_iam_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "+=,.@_-".contains(c)
}

/// An IAM role name: 1 to 64 of its characters.
fn is_role_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(is_iam_name_char)
}

/// `arn:PARTITION:iam::{account}:role/[PATH/]NAME`, where PARTITION is a partition or
/// `{partition}`: one role in each account, never another kind of resource or a fixed account.
fn is_role_template(template: &str) -> bool {
    let parts: Vec<&str> = template.splitn(6, ':').collect();
    let ["arn", partition, "iam", "", "{account}", resource] = parts.as_slice() else {
        return false;
    };
    let partition_ok = *partition == "{partition}"
        || (partition.starts_with("aws")
            && partition.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            && !partition.ends_with('-'));
    partition_ok && resource.strip_prefix("role/").is_some_and(is_role_path)
}

/// `[PATH/]NAME` of an IAM role: a name after path segments of IAM characters, 512 at most in all
/// (`--role-name ops/azevac` names the role `azevac` under the path `/ops/`, as it always did).
fn is_role_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    path.len() <= 512
        && is_role_name(name)
        && path
            .split('/')
            .all(|part| !part.is_empty() && part.chars().all(is_iam_name_char))
}

/// An external ID as STS takes it: 2 to 1224 of `[\w+=,.@:/-]`.
fn is_external_id(id: &str) -> bool {
    (2..=1224).contains(&id.len()) && id.chars().all(|c| is_iam_name_char(c) || c == ':' || c == '/')
}

/// The role `fleet` assumes in each account as a template (`{account}` left in), for showing and
/// comparing: a role name and the template it stands for are the same role.
pub fn role_template(fleet: &Fleet, region: &str) -> String {
    role_arn(fleet, "{account}", region)
}

/// How the role and external ID a saved plan assumes differ from those the command line gives
/// (its flags, or their defaults), in words; `None` when they are the same.
pub fn role_difference(saved: &Fleet, given: &Fleet, region: &str) -> Option<String> {
    let (plan_role, our_role) = (role_template(saved, region), role_template(given, region));
    let external = |id: &Option<String>| match id {
        Some(id) => format!("external ID {:?}", crate::model::text::clean(id)),
        None => "no external ID".to_owned(),
    };
    let mut differences = Vec::new();
    if plan_role != our_role {
        differences.push(format!(
            "assumes {} in each account, not {} (the command line's)",
            crate::model::text::clean(&plan_role),
            crate::model::text::clean(&our_role)
        ));
    }
    if saved.external_id != given.external_id {
        differences.push(format!(
            "passes {}, not {} (the command line's)",
            external(&saved.external_id),
            external(&given.external_id)
        ));
    }
    (!differences.is_empty()).then(|| format!("the plan {}", differences.join(" and ")))
}

/// The flags that give the role and external ID of `fleet` (empty: the defaults).
pub fn role_flags(fleet: &Fleet) -> String {
    let mut flags = Vec::new();
    if let Some(template) = &fleet.role_arn_template {
        flags.push(format!("--role-arn-template '{}'", crate::model::text::clean(template)));
    } else if let Some(name) = &fleet.role_name {
        flags.push(format!("--role-name {}", crate::model::text::clean(name)));
    }
    if let Some(id) = &fleet.external_id {
        flags.push(format!("--external-id '{}'", crate::model::text::clean(id)));
    }
    flags.join(" ")
}

/// The role azevac assumes in `account`.
pub fn role_arn(fleet: &Fleet, account: &str, region: &str) -> String {
    let partition = crate::model::arn::partition(region);
    match &fleet.role_arn_template {
        Some(template) => template.replace("{account}", account).replace("{partition}", partition),
        None => format!(
            "arn:{partition}:iam::{account}:role/{}",
            fleet.role_name.as_deref().unwrap_or(DEFAULT_ROLE_NAME)
        ),
    }
}

/// The accounts `fleet` names, in order, each once, without the excluded ones: the list as given,
/// or the organization's ACTIVE accounts (under `--ou`, at any depth).
pub async fn resolve(sdk: &SdkConfig, fleet: &Fleet) -> Result<Vec<String>> {
    let named = if fleet.accounts.iter().any(|a| a == ORG) {
        organization(sdk, &fleet.ous).await?
    } else {
        fleet.accounts.clone()
    };
    let mut accounts = Vec::new();
    for account in named {
        if !fleet.exclude.contains(&account) && !accounts.contains(&account) {
            accounts.push(account);
        }
    }
    if accounts.is_empty() {
        return Err(Error::BadInput(
            "--accounts names no account once --exclude-account is applied: nothing to do".into(),
        ));
    }
    Ok(accounts)
}

/// The organization's ACTIVE accounts: all of them, or those under the OUs (and their child OUs).
async fn organization(sdk: &SdkConfig, ous: &[String]) -> Result<Vec<String>> {
    let client = crate::client!(aws_sdk_organizations, sdk);
    let mut accounts: Vec<aws_sdk_organizations::types::Account> = Vec::new();
    if ous.is_empty() {
        let pages: Vec<_> = client
            .list_accounts()
            .into_paginator()
            .send()
            .try_collect()
            .await
            .map_err(|e| organizations_error("organizations:ListAccounts", &e))?;
        accounts = pages.into_iter().flat_map(|p| p.accounts.unwrap_or_default()).collect();
    } else {
        let mut parents: Vec<String> = ous.to_vec();
        while let Some(parent) = parents.pop() {
            let children: Vec<_> = client
                .list_organizational_units_for_parent()
                .parent_id(&parent)
                .into_paginator()
                .send()
                .try_collect()
                .await
                .map_err(|e| organizations_error("organizations:ListOrganizationalUnitsForParent", &e))?;
            parents.extend(
                children
                    .iter()
                    .flat_map(|p| p.organizational_units())
                    .filter_map(|ou| ou.id().map(str::to_owned)),
            );
            let direct: Vec<_> = client
                .list_accounts_for_parent()
                .parent_id(&parent)
                .into_paginator()
                .send()
                .try_collect()
                .await
                .map_err(|e| organizations_error("organizations:ListAccountsForParent", &e))?;
            accounts.extend(direct.into_iter().flat_map(|p| p.accounts.unwrap_or_default()));
        }
    }
    let mut ids: Vec<String> = accounts
        .iter()
        .filter(|a| a.state() == Some(&aws_sdk_organizations::types::AccountState::Active))
        .filter_map(|a| a.id().map(str::to_owned))
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

fn organizations_error<E>(
    action: &str,
    e: &aws_sdk_organizations::error::SdkError<E, aws_smithy_runtime_api::http::Response>,
) -> Error
where
    E: std::error::Error + aws_sdk_organizations::error::ProvideErrorMetadata + Send + Sync + 'static,
{
    let code = aws_sdk_organizations::error::ProvideErrorMetadata::code(e).unwrap_or_default();
    let detail = crate::error::sdk::detail(e);
    match code {
        "AccessDeniedException" | "AWSOrganizationsNotInUseException" => Error::BadInput(format!(
            "{action} failed ({code}): `--accounts {ORG}` needs the organization's management account \
             or a delegated administrator with {action}; or list the account IDs instead"
        )),
        "ParentNotFoundException" => Error::BadInput(format!(
            "{action}: an --ou is not in this organization ({code}); list them with \
             aws organizations list-organizational-units-for-parent"
        )),
        _ => Error::BadInput(format!("{action} failed: {}", crate::model::text::clean(&detail))),
    }
}

/// The SDK configuration of `role_arn` assumed from the caller's credentials (session name: the run
/// ID, so CloudTrail in the member account names the run). The credentials are fetched once here,
/// so that an account whose role cannot be assumed is one clear line before anything is planned;
/// the SDK refreshes them for longer runs. `http` replaces the HTTP client: each account's control
/// plane has its own quotas, so each gets its own pacing.
pub async fn assume(
    sdk: &SdkConfig,
    role_arn: &str,
    session: &str,
    external_id: Option<&str>,
    http: Option<aws_smithy_runtime_api::client::http::SharedHttpClient>,
) -> Result<SdkConfig> {
    let mut builder = aws_config::sts::AssumeRoleProvider::builder(role_arn).session_name(session);
    if let Some(id) = external_id {
        builder = builder.external_id(id);
    }
    let role = builder.configure(sdk).build().await;
    let first = match role.provide_credentials().await {
        Ok(credentials) => credentials,
        Err(e) => {
            // The provider's error holds STS's answer: said as one line (`sts:AssumeRole: HTTP 403:
            // AccessDenied: ...`), never the SDK's debug structures.
            let detail = crate::error::describe(&e);
            return Err(Error::BadInput(format!(
                "cannot assume {role_arn} ({ASSUME_ROLE}): {}; check that the role exists in that account and trusts \
                 the caller (fixtures/member-role.cfn.yaml), and the --external-id",
                crate::model::text::clean(&detail)
            )));
        }
    };
    let primed = Primed {
        first: std::sync::Mutex::new(Some(first)),
        role,
    };
    let mut config = sdk
        .to_builder()
        .credentials_provider(SharedCredentialsProvider::new(primed));
    if let Some(http) = http {
        config = config.http_client(http);
    }
    Ok(config.build())
}

/// An assumed role's credentials, starting with those fetched to check that the role can be
/// assumed: the first client to ask gets them (the identity cache keeps them until they near
/// expiry), later asks assume the role again. Without it the check and the account's first call
/// each assumed the role, one more round trip before anything in that account could start.
#[derive(Debug)]
struct Primed {
    first: std::sync::Mutex<Option<Credentials>>,
    role: aws_config::sts::AssumeRoleProvider,
}

impl ProvideCredentials for Primed {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        // Only while they have long to live: an account planned long after its role was assumed
        // (a large organization) gets fresh ones.
        let fresh = |c: &Credentials| {
            c.expiry()
                .is_none_or(|at| at > std::time::SystemTime::now() + std::time::Duration::from_secs(300))
        };
        match self.first.lock().ok().and_then(|mut first| first.take()).filter(fresh) {
            Some(credentials) => future::ProvideCredentials::ready(Ok(credentials)),
            None => self.role.provide_credentials(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_lists_parse() {
        assert_eq!(
            parse_accounts("111111111111, 222222222222").expect("list"),
            vec!["111111111111", "222222222222"]
        );
        assert_eq!(parse_accounts("org").expect("org"), vec!["org"]);
        assert!(parse_accounts("11111111111").is_err());
        assert!(parse_accounts(",").is_err());
        assert!(parse_accounts("1111111111a1").is_err());
    }

    #[test]
    fn ou_ids_parse() {
        assert!(parse_ou("ou-ab12-cdef3456").is_ok());
        assert!(parse_ou("r-ab12").is_ok());
        assert!(parse_ou("ou-AB12-cdef3456").is_err());
        assert!(parse_ou("ou-ab12").is_err());
    }

    #[test]
    fn role_arns_follow_the_partition_and_the_template() {
        let fleet = Fleet::default();
        assert_eq!(
            role_arn(&fleet, "111111111111", "us-east-1"),
            "arn:aws:iam::111111111111:role/azevac"
        );
        assert_eq!(
            role_arn(&fleet, "111111111111", "cn-north-1"),
            "arn:aws-cn:iam::111111111111:role/azevac"
        );
        let shaped = Fleet {
            role_arn_template: Some("arn:{partition}:iam::{account}:role/ops/evac".into()),
            ..Fleet::default()
        };
        assert_eq!(
            role_arn(&shaped, "222222222222", "us-gov-west-1"),
            "arn:aws-us-gov:iam::222222222222:role/ops/evac"
        );
    }

    /// Issue 36: a role name, template or external ID (from the flags, or a plan file anyone may
    /// edit) names one IAM role in each account, or is refused in one line.
    #[test]
    fn issue_36_role_settings_name_one_role_in_each_account() {
        let role = |name: Option<&str>, template: Option<&str>, id: Option<&str>| Fleet {
            role_name: name.map(str::to_owned),
            role_arn_template: template.map(str::to_owned),
            external_id: id.map(str::to_owned),
            ..Fleet::default()
        };
        for good in [
            role(None, None, None),
            role(Some("azevac"), None, Some("ext-123:a/b")),
            role(Some("Ops+evac=1,x.y@z_w-v"), None, None),
            role(Some("ops/azevac"), None, None),
            role(None, Some("arn:aws:iam::{account}:role/ops/azevac"), None),
            role(None, Some("arn:{partition}:iam::{account}:role/azevac"), None),
            role(None, Some("arn:aws-us-gov:iam::{account}:role/a/b/c"), None),
        ] {
            assert!(validate_role(&good).is_ok(), "{good:?}");
        }
        for bad in [
            role(Some(""), None, None),
            role(Some("ops//azevac"), None, None),
            role(Some("/azevac"), None, None),
            role(Some(&"x".repeat(65)), None, None),
            role(Some("a:b"), None, None),
            role(None, Some("arn:aws:iam::123456789012:role/x"), None),
            role(None, Some("arn:aws:iam::{account}:user/x"), None),
            role(None, Some("arn:aws:s3:::{account}"), None),
            role(None, Some("arn:aws:iam:us-east-1:{account}:role/x"), None),
            role(None, Some("arn:aws:iam::{account}:role/"), None),
            role(None, Some("arn:aws:iam::{account}:role/ops//x"), None),
            role(None, Some("arn:aws:iam::{account}:role/x:y"), None),
            role(None, Some("arn:aws:iam::{account}:role/{account}"), None),
            role(None, Some("arn:evil:iam::{account}:role/x"), None),
            role(None, None, Some("x")),
            role(None, None, Some("a b")),
        ] {
            let e = validate_role(&bad).expect_err("refused").to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        // Checked whether or not accounts are named: a recover reaches its records' accounts.
        assert!(validate(&role(None, Some("arn:aws:iam::1:role/x"), None), &[]).is_err());
    }

    #[test]
    fn issue_36_a_role_and_its_template_are_one_role() {
        let named = |name: &str| Fleet {
            role_name: Some(name.into()),
            ..Fleet::default()
        };
        let template = |t: &str| Fleet {
            role_arn_template: Some(t.into()),
            ..Fleet::default()
        };
        let default = Fleet::default();
        assert_eq!(role_difference(&named("azevac"), &default, "us-east-1"), None);
        assert_eq!(
            role_difference(
                &template("arn:{partition}:iam::{account}:role/azevac"),
                &default,
                "us-east-1"
            ),
            None
        );
        let wider = template("arn:aws:iam::{account}:role/OrganizationAccountAccessRole");
        let says = role_difference(&wider, &default, "us-east-1").expect("differs");
        assert_eq!(
            says,
            "the plan assumes arn:aws:iam::{account}:role/OrganizationAccountAccessRole in each account, \
             not arn:aws:iam::{account}:role/azevac (the command line's)"
        );
        assert_eq!(role_difference(&wider, &wider, "us-east-1"), None);
        let with_id = Fleet {
            external_id: Some("ext-1".into()),
            ..Fleet::default()
        };
        let says = role_difference(&with_id, &default, "us-east-1").expect("differs");
        assert!(
            says.contains(r#"passes external ID "ext-1", not no external ID"#),
            "{says}"
        );
        assert_eq!(
            role_flags(&wider),
            "--role-arn-template 'arn:aws:iam::{account}:role/OrganizationAccountAccessRole'"
        );
        assert_eq!(
            role_flags(&Fleet {
                role_name: Some("ops".into()),
                ..with_id
            }),
            "--role-name ops --external-id 'ext-1'"
        );
        assert_eq!(role_flags(&default), "");
    }

    #[test]
    fn fan_outs_that_cannot_work_are_refused() {
        let fleet = |accounts: &[&str]| Fleet {
            accounts: accounts.iter().map(|a| a.to_string()).collect(),
            ..Fleet::default()
        };
        assert!(validate(&fleet(&["111111111111"]), &[]).is_ok());
        assert!(validate(&fleet(&["org", "111111111111"]), &[]).is_err());
        assert!(validate(&fleet(&["111111111111"]), &["eks".into()]).is_err());
        let ou_without_org = Fleet {
            ous: vec!["ou-ab12-cdef3456".into()],
            ..fleet(&["111111111111"])
        };
        assert!(validate(&ou_without_org, &[]).is_err());
        let bad_template = Fleet {
            role_arn_template: Some("arn:aws:iam::123456789012:role/x".into()),
            ..fleet(&["111111111111"])
        };
        assert!(validate(&bad_template, &[]).is_err());
    }
}
