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
use crate::output::{self, Json};
use crate::record;
use crate::run::{Settle, ToJs, guarded, sync};

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

/// A packet's data as JavaScript gets it: the core's, with its Markdown, its chat messages
/// and its canonical JSON.
fn packet_json(packet: &core::Packet) -> handoff_core::Result<Json> {
    let mut value = output::value_of(packet)?;
    if let Value::Object(map) = &mut value {
        map.insert("markdown".to_owned(), packet.to_markdown().into());
        map.insert("messages".to_owned(), packet.to_messages().into());
        map.insert("json".to_owned(), packet.to_json().into());
    }
    Json::plain(&value)
}

/// A packet, the store's (`contextFor`) as JavaScript gets it.
pub(crate) struct PacketResult(pub(crate) core::Packet);

impl ToJs for PacketResult {
    fn to_js<'env>(self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        packet_to_js(env, self.0)
    }
}

impl Settle for PacketResult {
    fn settle(self, env: Env) -> napi::Result<Unknown<'static>> {
        packet_to_js(&env, self.0)
    }
}

/// A packet as JavaScript gets it, from the builder or from the store (`contextFor`): its
/// plain data, with `toMessages` as a method of the object that is not enumerable, so that the
/// packet still compares, spreads and serialises as data.
fn packet_to_js(env: &Env, packet: core::Packet) -> napi::Result<Unknown<'static>> {
    let value = packet_json(&packet)
        .map_err(|err| napi::Error::from_reason(err.to_string()))?
        .parse(env)?;
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
                Ok(packet.to_messages_for(provider)?)
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

/// Replaces secrets (API keys of the major providers, cloud keys, tokens, JWTs, PEM private
/// keys, `password=`-style pairs) with `[REDACTED:<rule>]`.
#[napi(
    catch_unwind,
    ts_args_type = "text: string, options?: RedactOptions",
    ts_return_type = "Redacted"
)]
pub fn redact(env: Env, text: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
    let redacted = guarded(&env, Naming::Js, || {
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
        Ok(Json::plain(&Redacted {
            text: clean,
            redactions,
        })?)
    })?;
    redacted.parse(&env)
}
