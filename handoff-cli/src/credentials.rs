//! Who an agent is, for `handoff serve` and `handoff mcp` (issue 45): agent-scoped credentials.
//!
//! Without them an agent is whoever a call says it is: anyone who names the addressee can
//! reject its handoff, claim as it, cancel as its creator. With `--credentials FILE` each
//! caller holds a token, the file says which agents each token may act as, and every argument
//! that names the agent acting is checked against them ([`check`]) before anything runs.
//!
//! The file is JSON and holds each token's SHA-256, never the token:
//!
//! ```json
//! {"tokens": [
//!   {"name": "gemini on the build box", "sha256": "<64 hex digits>", "agents": ["gemini"]},
//!   {"sha256": "<64 hex digits>", "agents": ["*"]}
//! ]}
//! ```
//!
//! `"*"` (alone) may act as any agent: an operator's token. A token is looked up by its digest,
//! compared with every entry in time that does not depend on where they differ. A file other
//! users may change is refused (they could give themselves any agent); one they may read is
//! not (it holds digests of tokens, which should be long and random), though `0600` is best.
//!
//! What is checked is who an agent is, not what a token may do: any valid token reads
//! everything and runs every operation that names no acting agent. Operations that settle a
//! claim need the claim's secret, which only its claimer was given.

use std::path::Path;
use std::sync::OnceLock;

use handoff_core::bundle::{same_token, token_digest};
use handoff_core::validate::is_agent_name;
use handoff_core::{Error, Problem};
use serde_json::{Map, Value};

use crate::error::{CliError, CliResult};
use crate::operations::{self, Op};
use crate::output::clip;

/// The environment variable `handoff mcp` reads its caller's token from, once, at start: the
/// MCP client starts the server, so the token is the session's.
pub(crate) const AGENT_TOKEN_ENV: &str = "HANDOFF_AGENT_TOKEN";

/// The agents a caller may act as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Agents {
    /// Any agent: no credentials are in force, or the caller's token is the operator's
    /// (`"*"`, or `handoff serve --token`).
    Any,
    /// These agents only.
    Only(Vec<String>),
}

impl Agents {
    fn allows(&self, agent: &str) -> bool {
        match self {
            Agents::Any => true,
            Agents::Only(agents) => agents.iter().any(|a| a == agent),
        }
    }
}

/// The tokens a server knows, each by its SHA-256, with the agents it may act as.
#[derive(Debug)]
pub(crate) struct Credentials {
    entries: Vec<(String, Agents)>,
}

impl Credentials {
    /// Reads and checks the credentials file at `path` (every problem at once, named by where
    /// in the file it is), before the store is opened.
    pub(crate) fn load(path: &Path) -> CliResult<Credentials> {
        let shown = path.display();
        refuse_if_others_may_write(path)?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::input("credentials", format!("cannot read {shown}"), e))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| Error::invalid("credentials", format!("{shown} is not JSON: {e}")))?;
        Credentials::from_json(&value)
    }

    /// The credentials a file's JSON gives.
    fn from_json(value: &Value) -> CliResult<Credentials> {
        let mut problems = Vec::new();
        let mut entries: Vec<(String, Agents)> = Vec::new();
        let top = value.as_object();
        if let Some(top) = top {
            for key in top.keys().filter(|k| *k != "tokens") {
                problems.push(Problem::new(
                    format!("credentials.{key}"),
                    "is not a known key (the file holds \"tokens\" only)",
                ));
            }
        }
        let tokens = top.and_then(|t| t.get("tokens")).and_then(Value::as_array);
        match tokens {
            None => problems.push(Problem::new(
                "credentials",
                "must be a JSON object {\"tokens\": [{\"sha256\": ..., \"agents\": [...]}, ...]}",
            )),
            Some(list) if list.is_empty() => problems.push(Problem::new(
                "credentials.tokens",
                "must list at least one token: with none, nobody could use the server",
            )),
            Some(list) => {
                for (i, entry) in list.iter().enumerate() {
                    let at = format!("credentials.tokens[{i}]");
                    if let Some(entry) = read_entry(&at, entry, &mut problems) {
                        if entries.iter().any(|(digest, _)| *digest == entry.0) {
                            problems.push(Problem::new(
                                format!("{at}.sha256"),
                                "is listed twice: a token has one list of agents",
                            ));
                        } else {
                            entries.push(entry);
                        }
                    }
                }
            }
        }
        if problems.is_empty() {
            Ok(Credentials { entries })
        } else {
            Err(Error::Validation { problems }.into())
        }
    }

    /// The agents `token` may act as, if it is one of these; every entry is compared, each in
    /// time that depends only on the digests' length.
    pub(crate) fn agents_of(&self, token: &str) -> Option<&Agents> {
        let digest = token_digest(token);
        let mut found = None;
        for (known, agents) in &self.entries {
            if same_token(&digest, known) && found.is_none() {
                found = Some(agents);
            }
        }
        found
    }

    /// The agents of the token `handoff mcp` was started with ([`AGENT_TOKEN_ENV`]): without
    /// one these credentials know, the server does not start.
    pub(crate) fn of_the_environment(&self) -> CliResult<Agents> {
        let token = std::env::var(AGENT_TOKEN_ENV).unwrap_or_default();
        let token = token.trim();
        let rule = if token.is_empty() {
            format!(
                "is not set: with --credentials, `handoff mcp` acts for the agents of the token \
                 in {AGENT_TOKEN_ENV}, set where the MCP client starts the server"
            )
        } else if let Some(agents) = self.agents_of(token) {
            return Ok(agents.clone());
        } else {
            "is not a token the --credentials file lists".to_owned()
        };
        Err(CliError::Unauthorized {
            field: AGENT_TOKEN_ENV.to_owned(),
            rule,
        })
    }
}

/// One entry of the file: its digest (lower case) and agents; `None` (and its problems added)
/// when it is not one.
fn read_entry(at: &str, entry: &Value, problems: &mut Vec<Problem>) -> Option<(String, Agents)> {
    let Some(entry) = entry.as_object() else {
        problems.push(Problem::new(
            at,
            "must be an object {\"sha256\": ..., \"agents\": [...]}",
        ));
        return None;
    };
    let before = problems.len();
    for key in entry.keys() {
        match key.as_str() {
            "sha256" | "agents" | "name" => {}
            "token" => problems.push(Problem::new(
                format!("{at}.token"),
                "the file holds a token's SHA-256 (`printf %s \"$TOKEN\" | sha256sum`), never \
                 the token itself",
            )),
            other => problems.push(Problem::new(
                format!("{at}.{other}"),
                "is not a known key (an entry has sha256, agents and an optional name)",
            )),
        }
    }
    if entry.get("name").is_some_and(|n| !n.is_string()) {
        problems.push(Problem::new(format!("{at}.name"), "must be text"));
    }
    let digest = match entry.get("sha256").and_then(Value::as_str) {
        Some(d) if d.eq_ignore_ascii_case(&token_digest("")) => {
            problems.push(Problem::new(
                format!("{at}.sha256"),
                "is the SHA-256 of an empty token, which any request without one would match",
            ));
            None
        }
        Some(d) if d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(d.to_ascii_lowercase())
        }
        _ => {
            problems.push(Problem::new(
                format!("{at}.sha256"),
                "must be a token's SHA-256: 64 hex digits",
            ));
            None
        }
    };
    let agents = match entry.get("agents").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => {
            let names: Vec<Option<&str>> = list.iter().map(Value::as_str).collect();
            for (j, name) in names.iter().enumerate() {
                let bad = match name {
                    Some("*") => list.len() > 1,
                    Some(name) => !is_agent_name(name),
                    None => true,
                };
                if bad {
                    problems.push(Problem::new(
                        format!("{at}.agents[{j}]"),
                        format!(
                            "must be an agent name ({}), or \"*\" alone for any agent",
                            handoff_core::validate::AGENT_RULE
                        ),
                    ));
                }
            }
            if names.contains(&Some("*")) {
                Some(Agents::Any)
            } else {
                Some(Agents::Only(
                    names.into_iter().flatten().map(str::to_owned).collect(),
                ))
            }
        }
        _ => {
            problems.push(Problem::new(
                format!("{at}.agents"),
                "must list the agents this token may act as (at least one; \"*\" for any)",
            ));
            None
        }
    };
    match (digest, agents) {
        (Some(digest), Some(agents)) if problems.len() == before => Some((digest, agents)),
        _ => None,
    }
}

/// Refuses a credentials file that users other than its owner may change: they could list a
/// token of their own for any agent.
#[cfg(unix)]
fn refuse_if_others_may_write(path: &Path) -> CliResult<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| {
        CliError::input("credentials", format!("cannot read {}", path.display()), e)
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(Error::invalid(
            "credentials",
            format!(
                "{} may be changed by other users (mode {mode:04o}), who could give themselves \
                 any agent: make it the owner's alone (chmod 600)",
                path.display()
            ),
        )
        .into());
    }
    Ok(())
}

#[cfg(not(unix))]
fn refuse_if_others_may_write(_path: &Path) -> CliResult<()> {
    Ok(())
}

/// The names an argument takes when it says which agent is acting: who claims (`agent` of
/// `claim`, `claim_next`), refuses (`reject`'s `agent`), withdraws (`cancel`'s `by`), saves
/// progress (`checkpoint`'s `agent`), hands over (`create`'s `from_agent`), drives a task
/// (`create_task`'s `orchestrator`) or a manager/worker run (`initialize`'s `manager`), had a
/// conversation (`add_conversation`'s `agent`). The other agent-naming arguments say whom
/// something is for — an addressee (`to_agent`, `worker`, `escalate_to`, a step's `agent`) or
/// a filter (`list`'s `to_agent`) — and anyone may name those.
const ACTING: &[&str] = &["agent", "from_agent", "by", "manager", "orchestrator"];

/// Where, in one operation's arguments, an acting agent is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The argument of that name.
    Argument(&'static str),
    /// That name in each item of a list argument whose items are another operation's
    /// arguments (`create_many`'s items are `create`'s).
    InEachItem(&'static str, &'static str),
}

/// The rule, read from the catalog's argument schemas: in an operation that changes the store,
/// an argument named in [`ACTING`] names the agent acting, and so does one inside each item of
/// a list of another operation's arguments. Reads name nobody acting.
fn places_in(op: &'static Op) -> Vec<Place> {
    if op.reads_only() {
        return Vec::new();
    }
    let schema = &op.info.arguments;
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let acting = |name: &str| ACTING.iter().copied().find(|a| *a == name);
    // An acting argument's other names (`agent_id`, `from_agent_id`: its `x-aliases`, which
    // the core reads as the argument itself) name the agent acting just as well.
    let aliases = |property: &'static Value| {
        property
            .get("x-aliases")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    };
    let mut places = Vec::new();
    for (name, property) in properties {
        if let Some(acting) = acting(name) {
            places.push(Place::Argument(acting));
            places.extend(aliases(property).map(Place::Argument));
            continue;
        }
        // A list whose items are `$defs/<T>`, where T is an operation's argument type.
        let Some(item) = property
            .get("items")
            .and_then(|i| i.get("$ref"))
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
        else {
            continue;
        };
        let of_an_operation = operations::all()
            .iter()
            .any(|other| other.info.arguments.get("title").and_then(Value::as_str) == Some(item));
        let item_properties = schema
            .get("$defs")
            .and_then(|d| d.get(item))
            .and_then(|d| d.get("properties"))
            .and_then(Value::as_object);
        if let (true, Some(item_properties)) = (of_an_operation, item_properties) {
            for (key, inner) in item_properties {
                if let Some(acting) = acting(key) {
                    places.push(Place::InEachItem(name.as_str(), acting));
                    places.extend(aliases(inner).map(|a| Place::InEachItem(name.as_str(), a)));
                }
            }
        }
    }
    places
}

/// [`places_in`] of the operation named `name`, worked out once.
fn places(op: &'static Op) -> &'static [Place] {
    static PLACES: OnceLock<Vec<(&'static str, Vec<Place>)>> = OnceLock::new();
    PLACES
        .get_or_init(|| {
            operations::all()
                .iter()
                .map(|o| (o.name(), places_in(o)))
                .collect()
        })
        .iter()
        .find(|(name, _)| *name == op.name())
        .map_or(&[], |(_, places)| places.as_slice())
}

/// Refuses a call whose arguments name an acting agent the caller may not act as
/// (`FORBIDDEN`, naming the argument and the rule), before anything runs. A name that is not
/// text, or is absent, is left to the operation.
pub(crate) fn check(op: &'static Op, args: &Map<String, Value>, caller: &Agents) -> CliResult<()> {
    let Agents::Only(agents) = caller else {
        return Ok(());
    };
    let refuse = |field: String, named: &str| CliError::Forbidden {
        field,
        rule: format!(
            "names the agent acting, and must be one the caller's token may act as ({}), not \
             {:?}",
            agents.join(", "),
            clip(named, 130)
        ),
    };
    for place in places(op) {
        match *place {
            Place::Argument(name) => {
                if let Some(named) = args.get(name).and_then(Value::as_str)
                    && !caller.allows(named)
                {
                    return Err(refuse(name.to_owned(), named));
                }
            }
            Place::InEachItem(list, name) => {
                let items = args.get(list).and_then(Value::as_array);
                for (i, item) in items.into_iter().flatten().enumerate() {
                    if let Some(named) = item.get(name).and_then(Value::as_str)
                        && !caller.allows(named)
                    {
                        return Err(refuse(format!("{list}[{i}].{name}"), named));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The arguments that name an agent but not the one acting: addressees and filters.
    const NOT_ACTING: &[&str] = &["to_agent", "worker", "escalate_to"];

    fn digest(token: &str) -> String {
        token_digest(token)
    }

    fn credentials() -> Credentials {
        Credentials::from_json(&json!({"tokens": [
            {"name": "gemini's", "sha256": digest("gemini-token-0123456789"), "agents": ["gemini"]},
            {"sha256": digest("two-agents-token-0123456789").to_uppercase(), "agents": ["a", "b"]},
            {"sha256": digest("operator-token-0123456789"), "agents": ["*"]},
        ]}))
        .expect("credentials")
    }

    #[test]
    fn a_token_is_found_by_its_digest() {
        let c = credentials();
        assert_eq!(
            c.agents_of("gemini-token-0123456789"),
            Some(&Agents::Only(vec!["gemini".into()]))
        );
        assert_eq!(
            c.agents_of("two-agents-token-0123456789"),
            Some(&Agents::Only(vec!["a".into(), "b".into()]))
        );
        assert_eq!(c.agents_of("operator-token-0123456789"), Some(&Agents::Any));
        assert_eq!(c.agents_of("gemini-token-012345678"), None);
        assert_eq!(c.agents_of(""), None);
        assert_eq!(c.agents_of(&digest("gemini-token-0123456789")), None);
    }

    #[test]
    fn a_bad_file_is_refused_with_every_problem_named() {
        let fields = |value: Value| -> Vec<String> {
            match Credentials::from_json(&value) {
                Err(CliError::Core(Error::Validation { problems })) => {
                    problems.into_iter().map(|p| p.field).collect()
                }
                other => panic!("{value}: {other:?}"),
            }
        };
        assert_eq!(fields(json!([])), ["credentials"]);
        assert_eq!(fields(json!({"tokens": []})), ["credentials.tokens"]);
        assert_eq!(
            fields(json!({"tokens": [], "extra": 1})),
            ["credentials.extra", "credentials.tokens"]
        );
        let d = digest("x");
        assert_eq!(
            fields(json!({"tokens": [
                {"token": "raw", "agents": ["a"]},
                {"sha256": "abc", "agents": []},
                {"sha256": d, "agents": ["*", "a"], "role": 1},
                {"sha256": d, "agents": ["gem\u{202e}ini", 3]},
                {"sha256": d, "agents": ["a"]},
                {"sha256": d.to_uppercase(), "agents": ["b"]},
                "x",
                {"sha256": digest(""), "agents": ["c"]},
            ]})),
            [
                "credentials.tokens[0].token",
                "credentials.tokens[0].sha256",
                "credentials.tokens[1].sha256",
                "credentials.tokens[1].agents",
                "credentials.tokens[2].role",
                "credentials.tokens[2].agents[0]",
                "credentials.tokens[3].agents[0]",
                "credentials.tokens[3].agents[1]",
                "credentials.tokens[5].sha256",
                "credentials.tokens[6]",
                "credentials.tokens[7].sha256",
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_change_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("credentials.json");
        let file = json!({"tokens": [{"sha256": digest("t"), "agents": ["a"]}]});
        std::fs::write(&path, file.to_string()).expect("write");
        for (mode, ok) in [(0o600, true), (0o644, true), (0o620, false), (0o602, false)] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let loaded = Credentials::load(&path);
            assert_eq!(loaded.is_ok(), ok, "{mode:o}: {loaded:?}");
        }
    }

    /// Every argument in the catalog whose name says it names an agent: `op.argument` (or
    /// `op.list[].argument` inside a list's items).
    fn agent_naming_arguments() -> Vec<String> {
        let names_an_agent = |name: &str| {
            name.contains("agent")
                || ACTING.contains(&name)
                || NOT_ACTING.contains(&name)
                || ["holder", "actor", "owner", "claimed_by", "author"].contains(&name)
        };
        let mut found = Vec::new();
        for op in operations::all() {
            let schema = &op.info.arguments;
            for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                if names_an_agent(name) {
                    found.push(format!("{}.{name}", op.name()));
                }
                let item = property["items"]["$ref"].as_str().unwrap_or_default();
                let item = item.strip_prefix("#/$defs/").unwrap_or_default();
                let inner = schema["$defs"][item]["properties"].as_object();
                for inner in inner.into_iter().flatten().map(|(k, _)| k) {
                    if names_an_agent(inner) {
                        found.push(format!("{}.{name}[].{inner}", op.name()));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn the_rule_finds_the_acting_agent_of_every_operation() {
        let found: Vec<String> = operations::all()
            .iter()
            .flat_map(|op| {
                places(op).iter().map(|place| match place {
                    Place::Argument(name) => format!("{}.{name}", op.name()),
                    Place::InEachItem(list, name) => format!("{}.{list}[].{name}", op.name()),
                })
            })
            .collect();
        assert_eq!(
            found,
            [
                "create.from_agent",
                "create.from_agent_id",
                "create_many.items[].from_agent",
                "create_many.items[].from_agent_id",
                "claim.agent",
                "claim.agent_id",
                "claim.agent_name",
                "claim_next.agent",
                "claim_next.agent_id",
                "claim_next.agent_name",
                "reject.agent",
                "cancel.by",
                "retry.by",
                "revoke_claim.by",
                "set_priority.by",
                "checkpoint.agent",
                "checkpoint.agent_id",
                "create_task.orchestrator",
                "join_task.agent",
                "join_task.agent_id",
                "initialize.manager",
                "add_conversation.agent",
            ]
        );
        // Every other argument that names an agent is an addressee, a filter or a step's
        // agent: an operation that adds one that is neither must say which it is, here.
        let others: Vec<String> = agent_naming_arguments()
            .into_iter()
            .filter(|a| !found.contains(a))
            .collect();
        assert_eq!(
            others,
            [
                "create.to_agent",
                "create_many.items[].to_agent",
                "list.to_agent",
                "create_task.steps[].agent",
                "create_task.escalate_to",
                "update_task.add_steps[].agent",
                "escalate_step.to_agent",
                "rerun_task.agents",
                "initialize.worker",
                "initialize.escalate_to",
            ]
        );
    }

    #[test]
    fn an_acting_agent_is_checked_against_the_callers() {
        let op = |name| operations::find(name).expect("op");
        let args = |v: Value| v.as_object().cloned().expect("object");
        let gemini = Agents::Only(vec!["gemini".into()]);
        let refused = |op, a, caller: &Agents| match check(op, &args(a), caller) {
            Err(CliError::Forbidden { field, rule }) => {
                assert!(rule.contains("(gemini)"), "{rule}");
                field
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(
            refused(
                op("reject"),
                json!({"id": "h", "agent": "claude", "reason": "no"}),
                &gemini
            ),
            "agent"
        );
        assert_eq!(
            refused(op("cancel"), json!({"id": "h", "by": "claude"}), &gemini),
            "by"
        );
        assert_eq!(
            refused(
                op("create_many"),
                json!({"items": [{"from_agent": "gemini"}, {"from_agent": "claude"}]}),
                &gemini
            ),
            "items[1].from_agent"
        );
        for fine in [
            json!({"agent": "gemini"}),
            json!({"task_id": "t", "goal": "g", "to_agent": "claude"}),
            json!({"agent": null}),
            json!({"agent": 7}),
            json!({}),
        ] {
            assert!(
                check(op("claim_next"), &args(fine.clone()), &gemini).is_ok(),
                "{fine}"
            );
            assert!(
                check(op("create"), &args(fine.clone()), &gemini).is_ok(),
                "{fine}"
            );
        }
        // Any agent: nothing is checked. A read names nobody acting.
        let claude = json!({"agent": "claude"});
        assert!(check(op("claim_next"), &args(claude.clone()), &Agents::Any).is_ok());
        assert!(check(op("list"), &args(json!({"to_agent": "claude"})), &gemini).is_ok());
    }

    #[test]
    fn an_acting_agent_given_by_a_seeds_name_is_checked_too() {
        let op = |name| operations::find(name).expect("op");
        let args = |v: Value| v.as_object().cloned().expect("object");
        let gemini = Agents::Only(vec!["gemini".into()]);
        let field = |op, a| match check(op, &args(a), &gemini) {
            Err(CliError::Forbidden { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(op("claim"), json!({"id": "h", "agent_id": "claude"})),
            "agent_id"
        );
        assert_eq!(
            field(op("claim"), json!({"id": "h", "agent_name": "claude"})),
            "agent_name"
        );
        assert_eq!(
            field(
                op("create"),
                json!({"task_id": "t", "from_agent_id": "claude"})
            ),
            "from_agent_id"
        );
        assert!(
            check(
                op("claim"),
                &args(json!({"id": "h", "agent_id": "gemini"})),
                &gemini
            )
            .is_ok()
        );
    }
}
