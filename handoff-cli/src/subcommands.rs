//! The subcommands of the store operations, derived from the core's catalog (docs/design.md §15).
//!
//! Every argument is a `--kebab-case` flag, and those the operation takes by position may be
//! given by position instead; a list is a repeated flag, a boolean a switch, an object JSON
//! text, and a claim is spread into the flags `claim` told its holder to use (the handoff id by
//! position, `--token`, `--secret` or `HANDOFF_CLAIM_SECRET`, `--lease-seconds`). The values
//! become the JSON object of named arguments the core reads, so that the problems the CLI
//! reports are the core's, the same as every other face's.

use std::path::Path;

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use handoff_core::ops::{Access, argument_name};
use handoff_core::{Claim, Error, Limits, Store};
use serde_json::{Map, Value, json};

use crate::args::SuccessorOpts;
use crate::commands::{Ctx, Done, read_new_handoff, read_text};
use crate::error::{CliResult, code};
use crate::judge::{self, JudgeOpts};
use crate::operations::{self, DEFAULTS, Op, PAGE, name_flat_claim};
use crate::output::{Reply, Sink, Table};
use crate::results::Shown;
use crate::spawn::{self, SpawnConfig};

/// Subcommands' names from before they were derived, kept as aliases: (operation, name).
const OLD_NAMES: &[(&str, &str)] = &[("get", "show"), ("get_task", "show")];

/// Flags from before the subcommands were derived, kept as aliases: (argument, flag).
const OLD_FLAGS: &[(&str, &str)] = &[
    ("decisions", "decision"),
    ("assumptions", "assumption"),
    ("warnings", "warning"),
    ("errors", "error"),
    ("files", "file"),
    ("blockers", "blocker"),
    ("locked_files", "locked-file"),
    ("priority_items", "priority-item"),
    ("success_criteria", "success-criterion"),
];

/// Values a flag may take from the environment instead: (argument, variable, why).
const ENV: &[(&str, &str, &str)] = &[(
    "claim.secret",
    "HANDOFF_CLAIM_SECRET",
    "A `--spawn` successor finds it in HANDOFF_CLAIM_SECRET; prefer the variable: a command \
     line is visible to other users.",
)];

/// The groups of operations on something other than handoffs, and what each is about:
/// `handoff task create`, `handoff memory get`.
const GROUPS: &[(&str, &str)] = &[
    (
        "task",
        "Tasks: a goal and a plan whose steps run as handoffs",
    ),
    ("step", "A task's steps, as the workers holding them report"),
    (
        "memory",
        "Memory: versioned JSON documents by scope, with compare-and-swap",
    ),
    (
        "session",
        "Sessions: who owns a conversation now, and its hops",
    ),
    (
        "protocol",
        "The manager/worker protocol: initialize, report, decide, recover, escalate, resolve",
    ),
    (
        "conversation",
        "Conversations on branches of curated memory (main, task/<task>, task/<task>/<agent>)",
    ),
    (
        "facts",
        "Facts on branches of curated memory, and their status",
    ),
    (
        "bundle",
        "Knowledge bundles: a task's verified knowledge, shared by token and imported elsewhere",
    ),
];

/// Grouped subcommands also reachable from the top, as (name, group, verb): `handoff replay
/// TASK` is `handoff task replay TASK`.
const TOP_ALIASES: &[(&str, &str, &str)] = &[("replay", "task", "replay")];

/// Whether an operation's subcommand stands at the top: a handoff operation's (`handoff
/// claim`), or one whose verb has no group (`handoff cherry-pick`).
fn at_the_top(op: &Op) -> bool {
    matches!(op.info.command, None | Some(("", _)))
}

/// The global command line with a subcommand for every operation: a handoff operation's and a
/// verb's without a group at the top, the others' under their group.
pub(crate) fn augment(cli: Command) -> Command {
    let handoffs = operations::all().iter().filter(|op| at_the_top(op));
    let groups = GROUPS.iter().map(|(group, about)| {
        let verbs = operations::all()
            .iter()
            .filter(|op| op.info.command.is_some_and(|(g, _)| g == *group));
        Command::new(*group)
            .about(*about)
            .subcommands(verbs.map(subcommand))
            .subcommand_required(true)
            .arg_required_else_help(true)
    });
    let aliases = TOP_ALIASES.iter().filter_map(|(name, group, verb)| {
        let op = grouped(group, verb)?;
        let about = format!("The same as `handoff {group} {verb}`");
        Some(subcommand(op).name(*name).about(about))
    });
    cli.subcommands(handoffs.map(subcommand))
        .subcommands(groups)
        .subcommands(aliases)
        .subcommand_required(true)
        .arg_required_else_help(true)
}

/// The operation of `handoff <group> <verb>`.
fn grouped(group: &str, verb: &str) -> Option<&'static Op> {
    operations::all().iter().find(|op| {
        op.info
            .command
            .is_some_and(|(g, v)| g == group && kebab(v) == verb)
    })
}

fn kebab(name: &str) -> String {
    name.replace('_', "-")
}

/// One value the command line takes: an argument, or a field of an object argument that is
/// spread into flags (the claim's `token`).
struct Param {
    /// Where the value goes: `["goal"]`, `["claim", "token"]`.
    path: Vec<String>,
    shape: Shape,
    required: bool,
    help: String,
    /// Its place among the values taken by position.
    position: Option<usize>,
}

/// What a value is on the command line.
#[derive(Clone, Debug)]
enum Shape {
    Text,
    Number,
    Switch,
    /// JSON text: an object, or a value of any type.
    Json,
    /// A repeated flag.
    List(Box<Shape>),
}

impl Param {
    /// The flag's clap id: the argument path, `claim.token`.
    fn id(&self) -> String {
        self.path.join(".")
    }

    /// The clap id of the same value given by position.
    fn positional_id(&self) -> String {
        format!("{}@position", self.id())
    }

    fn name(&self) -> &str {
        self.path.last().map_or("", String::as_str)
    }
}

/// The values `op`'s subcommand takes, in the order of its arguments.
fn params(op: &Op) -> Vec<Param> {
    let root = &op.info.arguments;
    let mut params = Vec::new();
    let Some(properties) = root.get("properties").and_then(Value::as_object) else {
        return params;
    };
    for (name, node) in properties {
        let position = op.info.positional.iter().position(|p| p == name);
        let required = is_required(root, name);
        let target = resolve(root, node);
        match target.get("properties").and_then(Value::as_object) {
            // An object with known fields: a flag each; given by position, its first field.
            Some(fields) => {
                for (i, (field, field_node)) in fields.iter().enumerate() {
                    params.push(Param {
                        path: vec![name.clone(), field.clone()],
                        shape: shape(root, field_node),
                        required: required && is_required(&target, field),
                        help: help(root, field_node),
                        position: position.filter(|_| i == 0),
                    });
                }
            }
            None => params.push(Param {
                path: vec![name.clone()],
                shape: shape(root, node),
                required,
                help: help(root, node),
                position,
            }),
        }
    }
    params
}

fn is_required(object: &Value, name: &str) -> bool {
    object
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|required| required.iter().any(|r| r == name))
}

/// Follows a `$ref` and unwraps `T | null` to `T`.
fn resolve(root: &Value, node: &Value) -> Value {
    let mut node = node.clone();
    // References nest a few levels at most; the bound keeps a cyclic schema from looping.
    for _ in 0..8 {
        if let Some(target) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| root.get("$defs")?.get(name))
        {
            node = target.clone();
            continue;
        }
        let not_null: Vec<&Value> = node
            .get("anyOf")
            .and_then(Value::as_array)
            .map(|alternatives| {
                alternatives
                    .iter()
                    .filter(|a| a["type"] != "null")
                    .collect()
            })
            .unwrap_or_default();
        match not_null.as_slice() {
            [only] => node = (*only).clone(),
            _ => break,
        }
    }
    node
}

/// The JSON type of a schema node (`string` for `["string", "null"]`).
fn type_of(node: &Value) -> Option<&str> {
    match node.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    }
}

/// The values an enumeration allows.
fn choices(node: &Value) -> Vec<&str> {
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        return values.iter().filter_map(Value::as_str).collect();
    }
    node.get("oneOf")
        .and_then(Value::as_array)
        .map(|alternatives| {
            alternatives
                .iter()
                .filter_map(|a| a.get("const").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

fn shape(root: &Value, node: &Value) -> Shape {
    let node = resolve(root, node);
    match type_of(&node) {
        Some("array") => Shape::List(Box::new(
            node.get("items")
                .map_or(Shape::Json, |items| shape(root, items)),
        )),
        Some("boolean") => Shape::Switch,
        Some("integer" | "number") => Shape::Number,
        Some("string") => Shape::Text,
        None if !choices(&node).is_empty() => Shape::Text,
        _ => Shape::Json,
    }
}

/// The argument's doc on one line, with the values it may take.
fn help(root: &Value, node: &Value) -> String {
    let target = resolve(root, node);
    let doc = node
        .get("description")
        .or_else(|| target.get("description"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut help = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let values = choices(&target);
    if !values.is_empty() {
        help.push_str(&format!(" One of: {}.", values.join(", ")));
    }
    help
}

/// The operation's doc: its first paragraph, and the whole.
fn about(op: &Op) -> (String, String) {
    let paragraphs: Vec<String> = op
        .info
        .description()
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let first = paragraphs.first().map_or("", |p| p.trim_end_matches('.'));
    (first.to_owned(), paragraphs.join("\n\n"))
}

/// The name of an operation's subcommand: its verb, or a handoff operation's name.
fn subcommand_name(op: &Op) -> &'static str {
    op.info.command.map_or(op.name(), |(_, verb)| verb)
}

fn subcommand(op: &Op) -> Command {
    let mut cmd = Command::new(kebab(subcommand_name(op)));
    for param in cli_params(op) {
        cmd = cmd.args(clap_args(op, &param));
    }
    if op.returns_claim() {
        cmd = SuccessorOpts::augment_args(cmd);
    }
    if judge::JUDGED.contains(&op.name()) {
        cmd = JudgeOpts::augment_args(cmd);
    }
    for (_, old) in OLD_NAMES.iter().filter(|(name, _)| *name == op.name()) {
        cmd = cmd.visible_alias(*old);
    }
    // After the successor's options, whose derive brings an about of its own.
    let (about, long_about) = about(op);
    legacy(op, cmd.about(about).long_about(long_about))
}

/// The flag of `param`, and its positional form when it has one.
fn clap_args(op: &Op, param: &Param) -> Vec<Arg> {
    let id = param.id();
    let value_name = param.name().to_uppercase();
    let mut help = param.help.clone();
    let mut flag = Arg::new(id.clone())
        .long(kebab(param.name()))
        .value_name(value_name.clone());
    flag = match param.shape {
        Shape::Switch => flag.action(ArgAction::SetTrue),
        Shape::List(_) => {
            help.push_str(" Repeat for more.");
            flag.action(ArgAction::Append)
                .value_parser(parser(&param.shape))
        }
        _ => flag
            .action(ArgAction::Set)
            .value_parser(parser(&param.shape)),
    };
    for (_, old) in OLD_FLAGS.iter().filter(|(argument, _)| *argument == id) {
        flag = flag.visible_alias(*old);
    }
    for (_, variable, why) in ENV.iter().filter(|(argument, ..)| *argument == id) {
        flag = flag.env(*variable).hide_env_values(true);
        help.push(' ');
        help.push_str(why);
    }
    let default = DEFAULTS
        .iter()
        .find(|(name, argument, _)| *name == op.name() && *argument == id);
    match (default, param.position) {
        (Some((.., value)), _) => flag = flag.default_value(*value),
        (None, Some(_)) if param.required => {
            flag = flag.required_unless_present(param.positional_id());
        }
        (None, None) if param.required => flag = flag.required(true),
        _ => {}
    }
    let mut args = vec![flag.help(help.clone())];
    if let Some(index) = param.position {
        let mut positional = Arg::new(param.positional_id())
            .index(index + 1)
            .value_name(value_name)
            .value_parser(parser(&param.shape))
            .help(format!("{help} (Or --{}.)", kebab(param.name())))
            .conflicts_with(id);
        if let Shape::List(_) = param.shape {
            positional = positional.action(ArgAction::Append).num_args(1..);
        }
        args.push(positional);
    }
    args
}

/// The values `op`'s subcommand takes: its arguments', and for `cancel` also the holder's
/// claim (`cancel ID --token N --secret S` withdrew a claimed handoff before `cancel-claim`
/// existed, and still does).
fn cli_params(op: &Op) -> Vec<Param> {
    let mut params = params(op);
    if op.name() == "cancel"
        && let Some(cancel_claim) = operations::find("cancel_claim")
    {
        params.extend(
            self::params(cancel_claim)
                .into_iter()
                .filter(|p| matches!(p.id().as_str(), "claim.token" | "claim.secret")),
        );
    }
    params
}

/// What the subcommands took before they were derived (issue #13), kept.
fn legacy(op: &Op, cmd: Command) -> Command {
    match op.name() {
        // `create --json-input FILE`: a NewHandoff JSON object, with the record's own field
        // names, instead of the flags.
        "create" => {
            let mut cmd = cmd;
            let all: Vec<String> = cmd
                .get_arguments()
                .map(|a| a.get_id().to_string())
                .collect();
            for param in params(op).iter().filter(|p| p.required) {
                cmd = cmd.mut_arg(param.id(), |a| a.required_unless_present("json-input"));
            }
            cmd.arg(
                Arg::new("json-input")
                    .long("json-input")
                    .value_name("FILE")
                    .help(
                        "Read a NewHandoff JSON object (the record's field names: \
                         pending_steps, key_decisions, ...) from FILE, or `-` for stdin, \
                         instead of the flags.",
                    )
                    .conflicts_with_all(all),
            )
        }
        // By its creator (--by) or by its holder (--token and --secret, never from the
        // environment: a successor's HANDOFF_CLAIM_SECRET must not turn `--by` into a
        // conflict).
        "cancel" => cmd
            .mut_arg("by", |a| a.required_unless_present("claim.secret"))
            .mut_arg("claim.token", |a| {
                a.required(false).requires("claim.secret")
            })
            .mut_arg("claim.secret", |a| {
                a.required(false)
                    .env(None)
                    .requires("claim.token")
                    .conflicts_with_all(["by", "by@position"])
                    .help("The holder's claim secret (with --token), instead of --by.")
            })
            .mut_arg("claim.token", |a| {
                a.help("The holder's fencing token (with --secret).")
            }),
        _ => cmd,
    }
}

/// Text that cannot be a number is a usage error, like an unknown flag (and clap quotes it,
/// redacted); every other problem of a value is the core's to report, by the argument's name.
fn parser(shape: &Shape) -> clap::builder::ValueParser {
    match shape {
        Shape::Number => clap::builder::ValueParser::new(|text: &str| {
            text.parse::<serde_json::Number>()
                .map(|_| text.to_owned())
                .map_err(|_| "not a number")
        }),
        Shape::List(item) => parser(item),
        Shape::Text | Shape::Switch | Shape::Json => clap::builder::ValueParser::string(),
    }
}

/// The JSON value a command-line text stands for; a text of the wrong type is passed on as
/// text, for the core to report by the argument's name.
fn value(shape: &Shape, text: &str) -> Value {
    match shape {
        Shape::Text => json!(text),
        Shape::Number => text
            .parse::<serde_json::Number>()
            .map_or_else(|_| json!(text), Value::Number),
        Shape::Switch | Shape::Json | Shape::List(_) => {
            serde_json::from_str(text).unwrap_or_else(|_| json!(text))
        }
    }
}

/// The values given for `param`: by position, else the flag (or its default).
fn given<'m>(matches: &'m ArgMatches, param: &Param) -> Option<Vec<&'m String>> {
    let of = |id: &str| {
        matches
            .try_get_many::<String>(id)
            .ok()
            .flatten()
            .map(Iterator::collect::<Vec<_>>)
    };
    if param.position.is_some()
        && let Some(values) = of(&param.positional_id())
    {
        return Some(values);
    }
    of(&param.id())
}

/// The named arguments the matches give.
fn named_arguments(op: &Op, matches: &ArgMatches) -> Map<String, Value> {
    let mut args = Map::new();
    for param in cli_params(op) {
        let value = match &param.shape {
            Shape::Switch => {
                // A switch that may come by position too: the text given there (`true`), else
                // the flag, which holds a bool, not a text.
                let at = param.position.and_then(|_| {
                    matches
                        .try_get_one::<String>(&param.positional_id())
                        .ok()
                        .flatten()
                });
                match at {
                    Some(text) => value(&Shape::Switch, text),
                    None if matches.get_flag(&param.id()) => Value::Bool(true),
                    None => continue,
                }
            }
            Shape::List(item) => match given(matches, &param) {
                Some(texts) => Value::Array(texts.iter().map(|t| value(item, t)).collect()),
                None => continue,
            },
            shape => match given(matches, &param).and_then(|texts| texts.first().copied()) {
                Some(text) => value(shape, text),
                None => continue,
            },
        };
        insert(&mut args, &param.path, value);
    }
    args
}

/// Puts `value` at `path` (`claim.token` inside a `claim` object).
fn insert(args: &mut Map<String, Value>, path: &[String], value: Value) {
    match path {
        [] => {}
        [name] => {
            args.insert(name.clone(), value);
        }
        [parent, rest @ ..] => {
            if let Value::Object(inner) = args
                .entry(parent.clone())
                .or_insert_with(|| Value::Object(Map::new()))
            {
                insert(inner, rest, value);
            }
        }
    }
}

/// The operation to run and its arguments, with the legacy forms turned into the core's.
fn arguments(op: &'static Op, matches: &ArgMatches) -> CliResult<(&'static Op, Value)> {
    if op.name() == "create"
        && let Some(source) = matches.get_one::<String>("json-input")
    {
        // The record's field names, renamed to the arguments that fill them.
        let new = serde_json::to_value(read_new_handoff(source)?).unwrap_or_default();
        let args: Map<String, Value> = match new {
            Value::Object(fields) => fields
                .into_iter()
                .map(|(field, value)| (argument_name(&field), value))
                .collect(),
            _ => Map::new(),
        };
        return Ok((op, Value::Object(args)));
    }
    let mut args = named_arguments(op, matches);
    // A bundle to import is a file (or `-`, standard input) unless given as JSON itself.
    if op.name() == "import_bundle"
        && let Some(Value::String(source)) = args.get("bundle")
    {
        let path = (source != "-").then(|| Path::new(source.as_str()));
        let text = read_text("bundle", path, handoff_core::bundle::MAX_BUNDLE_BYTES)?;
        args.insert("bundle".to_owned(), Value::String(text));
    }
    // A secret key is read from the file `handoff keygen` wrote, so that it stays off the
    // command line (the key itself is taken too).
    if op.name() == "sign_bundle"
        && let Some(Value::String(source)) = args.get("secret_key")
        && !source.starts_with(handoff_core::bundle::SECRET_KEY_PREFIX)
    {
        let text = read_text("secret_key", Some(Path::new(source.as_str())), 4096)?;
        args.insert(
            "secret_key".to_owned(),
            Value::String(text.trim().to_owned()),
        );
    }
    if op.name() == "cancel"
        && let Some(Value::Object(mut claim)) = args.remove("claim")
        && let Some(cancel_claim) = operations::find("cancel_claim")
    {
        if let Some(id) = args.remove("id") {
            claim.insert("handoff_id".to_owned(), id);
        }
        args.insert("claim".to_owned(), Value::Object(claim));
        return Ok((cancel_claim, Value::Object(args)));
    }
    Ok((op, Value::Object(args)))
}

/// The operation of the subcommand `name` (or of the group `name`'s subcommand), and its
/// matches.
fn operation<'m>(name: &str, matches: &'m ArgMatches) -> Option<(&'static Op, &'m ArgMatches)> {
    let all = operations::all();
    if GROUPS.iter().any(|(group, _)| *group == name) {
        let (verb, matches) = matches.subcommand()?;
        return Some((grouped(name, verb)?, matches));
    }
    if let Some((_, group, verb)) = TOP_ALIASES.iter().find(|(alias, _, _)| *alias == name) {
        return Some((grouped(group, verb)?, matches));
    }
    let op = all
        .iter()
        .find(|op| at_the_top(op) && kebab(subcommand_name(op)) == name)?;
    Some((op, matches))
}

/// Runs the subcommand `name` of a store operation.
pub(crate) fn run(ctx: &Ctx, name: &str, matches: &ArgMatches, as_json: bool) -> CliResult<Done> {
    let Some((op, matches)) = operation(name, matches) else {
        return Err(Error::invalid("command", format!("no command is named {name:?}")).into());
    };
    let (op, args) = arguments(op, matches)?;
    // The CLI always spreads a claim into flags: its problems are named by them.
    let named = |err: Error| {
        if op.argument("claim").is_some() {
            name_flat_claim(err)
        } else {
            err
        }
    };
    if !ctx.db.exists() {
        // Bad input is reported before a missing store, and a refused `create` leaves no
        // file behind: the arguments are read under the limits a new store has.
        op.check(&args, &Limits::default()).map_err(named)?;
        // What only a store can say (a handoff without a goal takes its task's) is asked of an
        // empty one, as the new store would answer, before a file is made.
        if op.may_create()
            && let Err(err) = op.call(&Store::memory(), args.clone())
            && err.kind() == handoff_core::ErrorKind::Validation
        {
            return Err(named(err).into());
        }
    }
    let store = match op.info.access {
        Access::Reads => ctx.open_read()?,
        Access::Writes => ctx.open_existing()?,
        Access::Creates => ctx.open()?,
    };
    if op.is_paged() {
        op.check(&args, store.limits()).map_err(named)?;
        return paged(ctx, op, &store, args, as_json);
    }
    let judge = if judge::JUDGED.contains(&op.name()) {
        JudgeOpts::from_arg_matches(matches)
            .map_err(|e| Error::invalid("judge_cmd", e.to_string()))?
            .judge(ctx.out.redacts())
    } else {
        None
    };
    let result = match &judge {
        Some(judge) => judge::run_with_command(&store, op.name(), args, judge),
        None => op.call(&store, args),
    }
    .map_err(named)?;
    if judge.is_none() && op.name() == "verify" {
        // Not silently: a gate without a judge verifies nothing.
        eprintln!("note: {}", judge::NEUTRAL_NOTE);
    }
    if let Some(claim) = result.claim() {
        let successor = SuccessorOpts::from_arg_matches(matches)
            .map_err(|e| Error::invalid("spawn", e.to_string()))?;
        if let Some(config) = SpawnConfig::from_opts(&successor.spawn) {
            let more = successor.additional_instructions.as_deref();
            return Ok(start_successor(ctx, &store, claim, &config, more));
        }
    }
    let shown = Shown {
        op,
        outcome: &result,
        out: &ctx.out,
    };
    Ok(Done {
        reply: Some(Reply::new(shown.text(), shown.json())),
        exit: result.exit(),
    })
}

/// Prints a list read a page at a time, so that memory stays flat however long it is:
/// `limit` (when given) bounds the whole, `after` moves through it.
fn paged(ctx: &Ctx, op: &Op, store: &Store, args: Value, as_json: bool) -> CliResult<Done> {
    let out = &ctx.out;
    let Value::Object(mut args) = args else {
        return Err(Error::invalid("arguments", "must be named").into());
    };
    let mut left = args
        .get("limit")
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut sink = Sink::stdout();
    let mut table: Option<Table> = None;
    let mut none = String::new();
    let mut any = false;
    if as_json {
        sink.write("[")?;
    }
    loop {
        let page = left.map_or(PAGE, |n| n.min(PAGE));
        if page == 0 || sink.closed() {
            break;
        }
        args.insert("limit".to_owned(), json!(page));
        let result = op.call(store, Value::Object(args.clone()))?;
        let Some((count, last)) = result.extent() else {
            break;
        };
        let shown = Shown {
            op,
            outcome: &result,
            out,
        };
        if as_json {
            if let Value::Array(items) = shown.json() {
                for item in items {
                    sink.write(if any { "," } else { "" })?;
                    sink.write(&item.to_string())?;
                    any = true;
                }
            }
        } else {
            let (header, rows, empty) = shown.rows();
            none = empty;
            if !rows.is_empty() {
                let table = table.get_or_insert_with(|| Table::new(header));
                sink.write(&table.rows(&rows))?;
                any = true;
            }
        }
        left = left.map(|n| n.saturating_sub(count));
        match last {
            Some(cursor) if count == page => {
                args.insert("after".to_owned(), cursor);
            }
            _ => break,
        }
    }
    if as_json {
        sink.write("]\n")?;
    } else if !any {
        sink.write(&none)?;
    }
    sink.finish()?;
    Ok(Done::printed())
}

/// Runs the successor on a fresh claim and reports how it went.
fn start_successor(
    ctx: &Ctx,
    store: &Store,
    claim: &Claim,
    config: &SpawnConfig,
    additional_instructions: Option<&str>,
) -> Done {
    let out = &ctx.out;
    let prompt = out.prompt(store, &claim.handoff, additional_instructions);
    let report = spawn::run(store, &ctx.db, claim, config, prompt);
    let exit = if report.succeeded() {
        code::OK
    } else if let Some(e) = report.lease_lost.as_ref().or(report.settle_error.as_ref()) {
        e.exit_code()
    } else {
        code::SPAWN_FAILED
    };
    Done {
        reply: Some(report.reply(out)),
        exit,
    }
}
