//! The context builder and redaction: what a successor reads, within a token budget, with
//! secrets redacted and a manifest of what was included, truncated, dropped and redacted.

use handoff_core::Limits;
use handoff_core::context as core;
use handoff_core::ops;
use handoff_core::redact as core_redact;
use napi::bindgen_prelude::{Function, FunctionCallContext, JsObjectValue};
use napi::{Env, JsValue, Property, PropertyAttributes, Unknown, ValueType};
use napi_derive::napi;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::convert;
use crate::errors::{Failure, Naming, Outcome, invalid};
use crate::ops::{Given, JsArguments};
use crate::record;
use crate::task::{Mirror, Settle, ToJs, guarded, json_to_js, sync};

/// `new ContextBuilder(options)`.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)] // The TypeScript shape only: the core reads the values (`ops::ContextArgs`).
pub struct ContextOptions {
    /// The budget in tokens (default 2000), counted with a fast estimate (~4 characters a token).
    pub budget_tokens: Option<u32>,
    /// Replace secrets with `[REDACTED:<rule>]` (default true).
    pub redact: Option<bool>,
    /// Rules to redact with besides the built-in ones.
    pub rules: Option<Vec<RedactionRule>>,
}

/// A redaction rule of your own: `pattern`'s first capture group (or whole match) is the
/// secret; the rule runs only on text containing one of `keywords` (case-insensitive), or on
/// every text when there are none.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedactionRule {
    /// Its name in `[REDACTED:<id>]`: 1 or more of `a-z 0-9 -`.
    pub id: String,
    /// A regular expression (Rust `regex` syntax).
    pub pattern: String,
    /// Words that must occur for the rule to run.
    pub keywords: Option<Vec<String>>,
}

/// `redact(text, options)`.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedactOptions {
    /// Rules to redact with besides the built-in ones.
    pub rules: Option<Vec<RedactionRule>>,
}

/// The built-in rules plus `rules`; a bad rule is VALIDATION naming `rules[i].<field>`.
fn redactor(rules: Vec<RedactionRule>) -> Outcome<core_redact::Redactor> {
    let mut redactor = core_redact::Redactor::default();
    for (i, spec) in rules.into_iter().enumerate() {
        let keywords: Vec<&str> = spec.keywords.iter().flatten().map(String::as_str).collect();
        let rule = core_redact::Rule::new(&spec.id, &spec.pattern, &keywords)
            .and_then(|rule| redactor.with_rule(rule));
        redactor = rule.map_err(|e| match e {
            handoff_core::Error::Validation { mut problems } => {
                for p in &mut problems {
                    p.field = format!("rules[{i}].{}", p.field.trim_start_matches("rule."));
                }
                Failure::Core(handoff_core::Error::Validation { problems })
            }
            other => Failure::Core(other),
        })?;
    }
    Ok(redactor)
}

/// A chat message offered to the builder, in its simplest shape. `addMessages` also takes the
/// providers' own shapes, read by the core: OpenAI Chat Completions messages, Responses API and
/// `@openai/agents` items, Anthropic messages (text, `tool_use`, `tool_result` blocks) and
/// LangChain message dicts.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)] // The TypeScript shape only: the core reads the values.
pub struct ContextMessage {
    /// `user`, `assistant`, `tool`, `system` (or `developer`).
    pub role: String,
    /// The text, or a list of content parts (`{ type: 'text', text }`, ...).
    #[napi(ts_type = "string | JsonValue[] | null")]
    pub content: Option<Value>,
    /// Tool calls the message made: `{ id, name, arguments }` or as the provider sent them.
    #[napi(ts_type = "JsonValue[]")]
    pub tool_calls: Option<Vec<Value>>,
    /// For a `tool` message, the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// When it was said (ISO 8601 or a `Date`).
    #[napi(ts_type = "string | Date")]
    pub at: Option<String>,
    /// A stable id for the manifest; `message-<n>` when absent.
    pub id: Option<String>,
    /// Higher is kept first; messages default to 50.
    pub priority: Option<i32>,
}

/// `addItem` options.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)] // The TypeScript shape only: the core reads the values (`ops::ContextItemArgs`).
pub struct ItemOptions {
    /// Higher is kept first (default 50).
    pub priority: Option<i32>,
    /// When it happened (ISO 8601 or a `Date`); newer is kept first among equals.
    #[napi(ts_type = "string | Date")]
    pub at: Option<String>,
}

/// Names problems inside a list argument after it: `[2].content` → `messages[2].content`.
fn under<T>(list: &str, outcome: Outcome<T>) -> Outcome<T> {
    outcome.map_err(|failure| match failure {
        Failure::Core(handoff_core::Error::Validation { mut problems }) => {
            for p in &mut problems {
                if p.field.starts_with('[') {
                    p.field = format!("{list}{}", p.field);
                }
            }
            Failure::Core(handoff_core::Error::Validation { problems })
        }
        other => other,
    })
}

/// Builds a successor's context packet under a token budget.
#[napi]
pub struct ContextBuilder {
    inner: core::ContextBuilder,
}

#[napi]
impl ContextBuilder {
    /// A builder with `budgetTokens` (default 2000) that redacts secrets unless `redact: false`.
    #[napi(constructor, catch_unwind, ts_args_type = "options?: ContextOptions")]
    pub fn new(env: Env, options: Unknown<'_>) -> napi::Result<Self> {
        guarded(&env, Naming::AsIs, || {
            let given = Given {
                positional: &[],
                options: Some(("options", Some(&options))),
            };
            let mut args = JsArguments::read(&given, &[], &[], false)?;
            // `rules` is this face's own option: the core's builder takes a `Redactor`.
            let rules = match args.take("rules") {
                Value::Null => Ok(None),
                json => under(
                    "rules",
                    convert::from_json::<Vec<RedactionRule>>(json, "rules"),
                )
                .map(Some),
            };
            let read = args.then(&Limits::default(), |a: ops::ContextArgs| Ok(a));
            let (args, rules) = match (read, rules) {
                (Ok(args), Ok(rules)) => (args, rules),
                (Err(handoff_core::Error::Validation { mut problems }), Err(failure)) => {
                    if let Failure::Core(err) = &failure {
                        problems.extend(err.problems().iter().cloned());
                    }
                    return Err(Failure::Core(handoff_core::Error::Validation { problems }));
                }
                (Err(err), _) => return Err(err.into()),
                (_, Err(failure)) => return Err(failure),
            };
            let mut inner = args.builder();
            match (rules, args.redact) {
                (Some(_), Some(false)) => {
                    return Err(invalid("rules", "cannot be given with redact: false"));
                }
                (Some(rules), _) => inner = inner.redactor(redactor(rules)?),
                (None, _) => {}
            }
            Ok(ContextBuilder { inner })
        })
    }

    /// Adds a handoff record's sections (goal, pending steps, instructions and blockers are
    /// mandatory).
    #[napi(catch_unwind, ts_args_type = "handoff: Handoff")]
    pub fn add_handoff(&mut self, env: Env, handoff: Unknown<'_>) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            let h = record::handoff(&handoff, "handoff")?;
            self.inner.add_handoff(&h);
            Ok(())
        })
    }

    /// Adds conversation messages as each provider writes them: OpenAI Chat Completions messages,
    /// Responses API and `@openai/agents` items, Anthropic messages and LangChain message
    /// dicts. A shape the core cannot read is a VALIDATION error naming `messages[i]`; then
    /// nothing is added.
    #[napi(
        catch_unwind,
        ts_args_type = "messages: Array<ContextMessage | object>"
    )]
    pub fn add_messages(&mut self, env: Env, messages: Unknown<'_>) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            let Value::Array(values) = convert::json(&messages, "messages")? else {
                return Err(invalid("messages", "must be an array of messages"));
            };
            self.inner.add_message_values(&values)?;
            Ok(())
        })
    }

    /// Adds facts the successor should know.
    #[napi(catch_unwind, ts_args_type = "facts: string[]")]
    pub fn add_facts(&mut self, env: Env, facts: Unknown<'_>) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            let facts: Vec<String> = match convert::json(&facts, "facts")? {
                json @ Value::Array(_) => under("facts", convert::from_json(json, "facts"))?,
                _ => return Err(invalid("facts", "must be an array of strings")),
            };
            self.inner.add_facts(facts);
            Ok(())
        })
    }

    /// Adds a free item with a priority (default 50) and an optional time.
    #[napi(catch_unwind, ts_args_type = "text: string, options?: ItemOptions")]
    pub fn add_item(
        &mut self,
        env: Env,
        text: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<()> {
        guarded(&env, Naming::AsIs, || {
            let given = Given {
                positional: &[("text", &text)],
                options: Some(("options", Some(&options))),
            };
            let mut args = JsArguments::read(&given, &[], &[], false)?;
            args.default("priority", Value::from(50));
            let item = args.then(&Limits::default(), |a: ops::ContextItemArgs| Ok(a))?;
            self.inner.add_item(item.text, item.priority, item.at);
            Ok(())
        })
    }

    /// Builds the packet. The same input always gives the same packet.
    #[napi(catch_unwind, ts_return_type = "Packet")]
    pub fn build(&self, env: Env) -> napi::Result<Unknown<'static>> {
        let packet = guarded(&env, Naming::Js, || Ok(self.inner.build()))?;
        packet_to_js(&env, packet)
    }
}

/// A packet as JavaScript gets it, from the builder or from the store (`contextFor`): its
/// plain data, with `toMessages` as a method of the object that is not enumerable, so that the
/// packet still compares, spreads and serialises as data.
fn packet_to_js(env: &Env, packet: core::Packet) -> napi::Result<Unknown<'static>> {
    let value = json_to_js(env, PacketData(packet.clone()))?;
    let to_messages: Function<'_, Unknown<'_>, Unknown<'_>> =
        env.create_function_from_closure("toMessages", move |ctx: FunctionCallContext<'_>| {
            let provider: Option<Unknown<'_>> = if ctx.length() > 0 {
                Some(ctx.get(0)?)
            } else {
                None
            };
            sync(ctx.env, Naming::Js, || {
                let provider = match provider {
                    Some(p) if !matches!(p.get_type()?, ValueType::Undefined | ValueType::Null) => {
                        convert::string(&p, "provider")?.parse()?
                    }
                    _ => handoff_core::Provider::OpenAiChat,
                };
                Ok(ChatInput(packet.to_messages_for(provider)?))
            })
        })?;
    let mut object = value.coerce_to_object()?;
    object.define_properties(&[Property::new()
        .with_utf8_name("toMessages")?
        .with_value(&to_messages)
        .with_property_attributes(
            PropertyAttributes::Writable | PropertyAttributes::Configurable,
        )])?;
    Ok(value)
}

impl ToJs for core::Packet {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        packet_to_js(env, self)
    }
}

impl Settle for core::Packet {
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>> {
        packet_to_js(&env, self)
    }
}

/// One section of a packet.
#[napi(
    object,
    js_name = "PacketSection",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsSection {
    /// The item's id (`goal`, `message-3`, `fact-0`, ...).
    pub id: String,
    /// `task`, `history`, `output`, `handoff`, `fact`, `message` or `note`.
    #[napi(ts_type = "SectionKind")]
    pub kind: String,
    /// Its heading.
    pub title: String,
    /// Its text, redacted and perhaps truncated.
    pub text: String,
    /// A message's role.
    pub role: Option<String>,
    /// What it costs, in the packet's `unit`.
    pub tokens: f64,
    /// The heading it is listed under with others (a bullet of `Verified Facts`, a message of
    /// `Conversation: …`); `null` for a section under its own title.
    pub group: Option<String>,
}

/// A section cut (or summarised) to fit the budget; its costs are in the packet's `unit`.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The item.
    pub id: String,
    /// What it cost whole.
    pub original_tokens: f64,
    /// What was kept.
    pub kept_tokens: f64,
}

/// An item left out.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dropped {
    /// The item.
    pub id: String,
    /// What it would have cost, in the packet's `unit`.
    pub tokens: f64,
    /// Why (`budget`).
    pub reason: String,
}

/// Secrets replaced in one item.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedactedItem {
    /// The item.
    pub id: String,
    /// The rule that found them.
    pub rule: String,
    /// How many.
    pub count: f64,
}

/// What a packet included, truncated, summarised, dropped and redacted. Nothing is cut or
/// dropped silently.
#[napi(
    object,
    js_name = "PacketManifest",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsManifest {
    /// Ids of the items included.
    pub included: Vec<String>,
    /// Items cut to fit (marked `…`).
    pub truncated: Vec<Truncation>,
    /// Items compressed by the `summarize` function instead of cut.
    pub summarized: Vec<Truncation>,
    /// Items left out.
    pub dropped: Vec<Dropped>,
    /// Secrets replaced.
    pub redacted: Vec<RedactedItem>,
}

/// A packet's conversation as one provider's input: `packet.toMessages(provider)`.
struct ChatInput(Vec<Value>);

impl Mirror for ChatInput {
    type Out = Vec<Value>;
    fn mirror(self) -> Vec<Value> {
        self.0
    }
}

/// A successor's context packet.
#[napi(
    object,
    js_name = "Packet",
    object_from_js = false,
    object_to_js = false
)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsPacket {
    /// The packet as Markdown.
    pub markdown: String,
    /// The packet as OpenAI Chat Completions messages: `toMessages('openai_chat')`.
    #[napi(ts_type = "JsonValue[]")]
    pub messages: Vec<Value>,
    /// The packet as input for `provider` (default `openai_chat`), valid whatever the builder
    /// kept: tool calls go out as calls only with their results right after them (otherwise
    /// both as text), roles alternate where the provider needs it, no message is empty. A
    /// method (not enumerable): packets still compare and serialise as data.
    #[napi(
        ts_type = "(provider?: 'openai_chat' | 'openai_responses' | 'anthropic') => JsonValue[]"
    )]
    #[serde(skip)]
    pub to_messages: (),
    /// The packet's canonical JSON (snake_case), as the core and the Python binding write it.
    pub json: String,
    /// What it uses, in `unit`: tokens, or characters of its Markdown.
    pub tokens: f64,
    /// The budget it was built for, in `unit`.
    pub budget: f64,
    /// What `tokens` and `budget` count: `tokens` (the default) or `chars`.
    #[napi(ts_type = "BudgetUnit")]
    pub unit: String,
    /// Mandatory sections first, then the rest by kind, messages in chronological order.
    pub sections: Vec<JsSection>,
    /// What was included, truncated, summarised, dropped and redacted.
    pub manifest: JsManifest,
}

fn kind_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A section's kind, as `SectionKind` in dts-header.d.ts spells it: matched in full, so that a
/// kind the core adds does not compile here until that type names it too.
fn section_kind(kind: core::ItemKind) -> String {
    use core::ItemKind as K;
    match kind {
        K::Task | K::History | K::Output | K::Handoff | K::Fact | K::Message | K::Note => {
            kind_name(&kind)
        }
    }
}

/// A budget's unit, as `BudgetUnit` in dts-header.d.ts spells it (matched in full, likewise).
fn unit_word(unit: core::BudgetUnit) -> String {
    match unit {
        core::BudgetUnit::Tokens | core::BudgetUnit::Chars => kind_name(&unit),
    }
}

/// A packet's data, without its method (see [`packet_to_js`]).
struct PacketData(core::Packet);

impl Mirror for PacketData {
    type Out = JsPacket;
    fn mirror(self) -> JsPacket {
        let packet = self.0;
        let markdown = packet.to_markdown();
        let messages = packet.to_messages();
        let json = packet.to_json();
        let core::Packet {
            sections,
            tokens,
            budget,
            unit,
            manifest,
        } = packet;
        let core::Manifest {
            included,
            truncated,
            summarized,
            dropped,
            redacted,
        } = manifest;
        let cuts = |list: Vec<core::Truncation>| -> Vec<Truncation> {
            list.into_iter()
                .map(|t| Truncation {
                    id: t.id,
                    original_tokens: t.original_tokens as f64,
                    kept_tokens: t.kept_tokens as f64,
                })
                .collect()
        };
        JsPacket {
            markdown,
            messages,
            to_messages: (),
            json,
            tokens: tokens as f64,
            budget: budget as f64,
            unit: unit_word(unit),
            sections: sections
                .into_iter()
                .map(|s| JsSection {
                    kind: section_kind(s.kind),
                    id: s.id,
                    title: s.title,
                    text: s.text,
                    role: s.role,
                    tokens: s.tokens as f64,
                    group: s.group,
                })
                .collect(),
            manifest: JsManifest {
                included,
                truncated: cuts(truncated),
                summarized: cuts(summarized),
                dropped: dropped
                    .into_iter()
                    .map(|d| Dropped {
                        reason: kind_name(&d.reason),
                        id: d.id,
                        tokens: d.tokens as f64,
                    })
                    .collect(),
                redacted: redacted
                    .into_iter()
                    .map(|r| RedactedItem {
                        id: r.id,
                        rule: r.rule,
                        count: r.count as f64,
                    })
                    .collect(),
            },
        }
    }
}

/// One secret found and replaced. `start` and `end` index the input string as JavaScript does
/// (UTF-16 code units), so `text.slice(start, end)` is the secret.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
pub struct Redaction {
    /// The rule that found it (`openai-api-key`, ...).
    pub rule: String,
    /// Where the secret starts.
    pub start: f64,
    /// Just past the secret.
    pub end: f64,
}

/// `redact`'s result.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
pub struct Redacted {
    /// The text with each secret replaced by `[REDACTED:<rule>]`.
    pub text: String,
    /// What was replaced, in order.
    pub redactions: Vec<Redaction>,
}

struct RedactOutput(Redacted);

impl Mirror for RedactOutput {
    type Out = Redacted;
    fn mirror(self) -> Redacted {
        self.0
    }
}

/// Replaces secrets (API keys of the major providers, cloud keys, tokens, JWTs, PEM private
/// keys, `password=`-style pairs) with `[REDACTED:<rule>]`.
#[napi(
    catch_unwind,
    ts_args_type = "text: string, options?: RedactOptions",
    ts_return_type = "Redacted"
)]
pub fn redact(env: Env, text: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
    sync(&env, Naming::Js, || {
        let text = convert::string(&text, "text")?;
        let o: RedactOptions = convert::options(&options, "options")?;
        let (clean, found) = match o.rules {
            Some(rules) => redactor(rules)?.redact(&text),
            None => core_redact::redact(&text),
        };
        // Byte offsets to UTF-16 offsets, counted once along the text.
        let utf16 = |byte: usize| text.get(..byte).map_or(0, |s| s.encode_utf16().count()) as f64;
        let redactions = found
            .into_iter()
            .map(|r| Redaction {
                rule: r.rule,
                start: utf16(r.start),
                end: utf16(r.end),
            })
            .collect();
        Ok(RedactOutput(Redacted {
            text: clean,
            redactions,
        }))
    })
}
