//! Chat messages in and out of the context builder, in the providers' own shapes.
//!
//! In: [`normalize`] reads every message shape a user is likely to hold — OpenAI Chat
//! Completions messages, Responses API / Agents SDK input items, Anthropic `MessageParam`s and
//! LangChain message dicts (plain or in their `lc` dump form) — into the builder's
//! [`Message`]: a role (`user`, `assistant`, `system`, `tool`), the text, structured
//! [`ToolCall`]s and, for a tool result, the id of the call it answers. A shape it cannot read is
//! a validation error naming the message and the rule; nothing is dropped silently (reasoning
//! items and provider-side tool items, which are not conversation, are skipped by design).
//!
//! Out: [`Packet::to_messages_for`](crate::context::Packet::to_messages_for) renders a packet
//! as input that the provider's API accepts whatever the builder kept: a tool call goes out
//! as a call only when its result comes right after it (otherwise both become text), ids and
//! names are made valid for the provider, roles alternate where the provider needs it, and no
//! message is empty.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value, json};

use crate::context::{Message, Section};
use crate::error::{Error, Problem, Result};
use crate::tools::Provider;

/// A tool call an assistant made, in one shape for every provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct ToolCall {
    /// The provider's id for the call (`call_…`, `toolu_…`); empty when it gave none, and then
    /// no result can be paired with it.
    #[serde(default)]
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object, or the model's raw text when it was not one.
    #[serde(default)]
    pub arguments: Value,
}

impl ToolCall {
    /// The call as one line of text: `[tool call <id>] <name> <arguments>`.
    pub fn to_text(&self) -> String {
        let arguments = match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        if self.id.is_empty() {
            format!("[tool call] {} {arguments}", self.name)
        } else {
            format!("[tool call {}] {} {arguments}", self.id, self.name)
        }
    }
}

/// Reads messages in any supported shape (see the [module docs](self)) into [`Message`]s.
///
/// One value may give several messages: an Anthropic user message whose blocks are tool
/// results gives one `tool` message per result, then a `user` message with its text. Problems
/// name the value as `messages[<index>]…`; every problem found is reported, and on any
/// problem nothing is returned.
///
/// ```
/// use handoff_core::messages::normalize;
/// use serde_json::json;
///
/// let messages = normalize(&[
///     json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
///            "function": {"name": "grep", "arguments": "{\"q\": \"x\"}"}}]}),
///     json!({"type": "function_call_output", "call_id": "call_1", "output": "3 hits"}),
/// ]).unwrap();
/// assert_eq!(messages[0].tool_calls[0].arguments, json!({"q": "x"}));
/// assert_eq!(messages[1].role, "tool");
/// assert_eq!(messages[1].tool_call_id.as_deref(), Some("call_1"));
/// ```
pub fn normalize(values: &[Value]) -> Result<Vec<Message>> {
    let mut reader = Reader::default();
    let mut out = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        reader.message(&format!("messages[{i}]"), value, &mut out);
    }
    if reader.problems.is_empty() {
        Ok(out)
    } else {
        Err(Error::Validation {
            problems: reader.problems,
        })
    }
}

/// Reads `tool_calls` in any supported call shape; serde's reader for [`Message::tool_calls`].
pub(super) fn lenient_tool_calls<'de, D>(
    deserializer: D,
) -> std::result::Result<Vec<ToolCall>, D::Error>
where
    D: Deserializer<'de>,
{
    let values = Option::<Vec<Value>>::deserialize(deserializer)?.unwrap_or_default();
    let mut reader = Reader::default();
    let calls: Vec<ToolCall> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| reader.tool_call(&format!("tool_calls[{i}]"), v))
        .collect();
    match reader.problems.first() {
        None => Ok(calls),
        Some(p) => Err(serde::de::Error::custom(format!("{}: {}", p.field, p.rule))),
    }
}

/// One message's text, calls and results, as read from its content.
#[derive(Default)]
struct Parts {
    texts: Vec<String>,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
}

struct ToolResult {
    id: String,
    text: String,
    is_error: bool,
}

/// The fields every message shape may carry for the builder.
#[derive(Default)]
struct Extra {
    at: Option<DateTime<Utc>>,
    id: Option<String>,
    priority: Option<i32>,
}

#[derive(Default)]
struct Reader {
    problems: Vec<Problem>,
}

/// Roles as the builder names them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
    System,
    Tool,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }
}

const ROLE_RULE: &str = "must be one of user, assistant, system, developer, tool";

/// Responses API items that are not conversation (reasoning, built-in tools the provider ran
/// itself, references): skipped.
fn skipped_item(kind: &str) -> bool {
    matches!(
        kind,
        "reasoning" | "item_reference" | "compaction" | "remove" | "unknown"
    ) || kind.ends_with("_call")
        || kind.ends_with("_call_output")
        || kind.ends_with("_call_result")
        || kind.starts_with("mcp_")
}

/// The camelCase keys of JavaScript shapes (`@openai/agents` items, this crate's Node
/// binding) and the snake_case keys the reader knows them by.
const CAMEL_KEYS: [(&str, &str); 4] = [
    ("toolCalls", "tool_calls"),
    ("toolCallId", "tool_call_id"),
    ("callId", "call_id"),
    ("invalidToolCalls", "invalid_tool_calls"),
];

impl Reader {
    fn problem(&mut self, field: impl Into<String>, rule: impl Into<String>) {
        self.problems.push(Problem::new(field, rule));
    }

    fn string(&mut self, field: &str, value: Option<&Value>) -> Option<String> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.problem(field, "must be a string");
                None
            }
        }
    }

    fn extra(&mut self, field: &str, obj: &Map<String, Value>) -> Extra {
        let at = match obj.get("at") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => match DateTime::parse_from_rfc3339(s) {
                Ok(at) => Some(at.with_timezone(&Utc)),
                Err(_) => {
                    self.problem(
                        format!("{field}.at"),
                        "must be an ISO 8601 time with an offset, like 2026-01-01T00:00:00Z",
                    );
                    None
                }
            },
            Some(_) => {
                self.problem(format!("{field}.at"), "must be an ISO 8601 time string");
                None
            }
        };
        let priority = match obj.get("priority") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_i64().and_then(|n| i32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    self.problem(format!("{field}.priority"), "must be a 32-bit integer");
                    None
                }
            },
        };
        let id = match obj.get("id") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            None | Some(Value::Null | Value::String(_)) => None,
            Some(_) => {
                self.problem(format!("{field}.id"), "must be a string");
                None
            }
        };
        Extra { at, id, priority }
    }

    /// Reads one message value into `out`.
    fn message(&mut self, field: &str, value: &Value, out: &mut Vec<Message>) {
        let Value::Object(obj) = value else {
            self.problem(
                field,
                "must be a message object (a dict with role, or type)",
            );
            return;
        };
        let snake;
        let (obj, value) = if CAMEL_KEYS.iter().any(|(camel, _)| obj.contains_key(*camel)) {
            let mut copy = obj.clone();
            for (camel, snake_key) in CAMEL_KEYS {
                if let Some(v) = copy.remove(camel) {
                    copy.entry(snake_key).or_insert(v);
                }
            }
            snake = Value::Object(copy);
            match &snake {
                Value::Object(copy) => (copy, &snake),
                _ => (obj, value),
            }
        } else {
            (obj, value)
        };
        // LangChain's `dumpd` form: {"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}.
        if obj.get("lc").is_some() && obj.get("type").and_then(Value::as_str) == Some("constructor")
        {
            let class = obj
                .get("id")
                .and_then(Value::as_array)
                .and_then(|path| path.last())
                .and_then(Value::as_str)
                .unwrap_or_default();
            let Some(kwargs) = obj.get("kwargs").and_then(Value::as_object) else {
                self.problem(format!("{field}.kwargs"), "must be an object");
                return;
            };
            let kind = match class.trim_end_matches("Chunk") {
                "HumanMessage" => "human",
                "AIMessage" => "ai",
                "SystemMessage" => "system",
                "ToolMessage" => "tool",
                "FunctionMessage" => "function",
                "ChatMessage" => "chat",
                "RemoveMessage" => return,
                _ => {
                    self.problem(
                        format!("{field}.id"),
                        "must name a LangChain message class (HumanMessage, AIMessage, SystemMessage, ToolMessage, ChatMessage)",
                    );
                    return;
                }
            };
            let field = format!("{field}.kwargs");
            self.langchain(&field, kind, kwargs, out);
            return;
        }
        match obj.get("type") {
            None | Some(Value::Null) => self.by_role(field, obj, None, out),
            Some(Value::String(kind)) => match kind.as_str() {
                // Responses / Agents SDK message items, and Anthropic's response `Message`.
                "message" => self.by_role(field, obj, None, out),
                "function_call" => {
                    let extra = self.extra(field, obj);
                    if let Some(call) = self.tool_call(field, value) {
                        push(out, extra, Role::Assistant, Parts {
                            calls: vec![call],
                            ..Parts::default()
                        });
                    }
                }
                // `function_call_result` is `@openai/agents`' name, with an output part
                // (`{type: "text", text}`) that may stand alone.
                "function_call_output" | "function_call_result" => {
                    let extra = self.extra(field, obj);
                    let id = self
                        .string(&format!("{field}.call_id"), obj.get("call_id"))
                        .unwrap_or_default();
                    if id.is_empty() {
                        self.problem(format!("{field}.call_id"), "is required");
                    }
                    let output = match obj.get("output") {
                        Some(part @ Value::Object(_)) => Some(Value::Array(vec![part.clone()])),
                        other => other.cloned(),
                    };
                    let parts = self.parts(&format!("{field}.output"), output.as_ref(), false);
                    push(out, extra, Role::Tool, Parts {
                        results: vec![ToolResult {
                            id,
                            text: parts.texts.join("\n"),
                            is_error: false,
                        }],
                        ..Parts::default()
                    });
                }
                "human" | "ai" | "system" | "tool" | "function" | "chat" | "developer"
                | "HumanMessageChunk" | "AIMessageChunk" | "SystemMessageChunk"
                | "ToolMessageChunk" | "FunctionMessageChunk" | "ChatMessageChunk" => {
                    let kind = match kind.as_str() {
                        "HumanMessageChunk" => "human",
                        "AIMessageChunk" => "ai",
                        "SystemMessageChunk" => "system",
                        "ToolMessageChunk" => "tool",
                        "FunctionMessageChunk" => "function",
                        "ChatMessageChunk" => "chat",
                        other => other,
                    };
                    self.langchain(field, kind, obj, out);
                }
                other if skipped_item(other) => {}
                other => self.problem(
                    format!("{field}.type"),
                    format!(
                        "is {other:?}, not a message shape this reads (a Responses item message, function_call or \
                         function_call_output, or a LangChain type human, ai, system or tool)"
                    ),
                ),
            },
            Some(_) => self.problem(format!("{field}.type"), "must be a string"),
        }
    }

    /// A LangChain message dict of type `kind` (`human`, `ai`, `system`, `tool`, `function`,
    /// `chat`).
    fn langchain(
        &mut self,
        field: &str,
        kind: &str,
        obj: &Map<String, Value>,
        out: &mut Vec<Message>,
    ) {
        let role = match kind {
            "human" => Some(Role::User),
            "ai" => Some(Role::Assistant),
            "system" | "developer" => Some(Role::System),
            "tool" | "function" => Some(Role::Tool),
            // ChatMessage carries its own role.
            _ => None,
        };
        // `messages_to_dict` (chat histories) nests the message: {"type": "ai", "data": {...}}.
        if let Some(Value::Object(data)) = obj.get("data")
            && !obj.contains_key("content")
        {
            self.by_role(&format!("{field}.data"), data, role, out);
            return;
        }
        self.by_role(field, obj, role, out);
    }

    /// A message with a role and content: Chat Completions, Responses easy input and message
    /// items, Anthropic `MessageParam`, and LangChain dicts (given their `role`).
    fn by_role(
        &mut self,
        field: &str,
        obj: &Map<String, Value>,
        role: Option<Role>,
        out: &mut Vec<Message>,
    ) {
        let extra = self.extra(field, obj);
        let role = match role {
            Some(role) => role,
            None => match obj.get("role") {
                None | Some(Value::Null) => {
                    self.problem(format!("{field}.role"), "is required");
                    return;
                }
                Some(Value::String(role)) => match role.as_str() {
                    "user" | "human" => Role::User,
                    "assistant" | "ai" => Role::Assistant,
                    "system" | "developer" => Role::System,
                    "tool" | "function" => Role::Tool,
                    _ => {
                        self.problem(format!("{field}.role"), ROLE_RULE);
                        return;
                    }
                },
                Some(_) => {
                    self.problem(format!("{field}.role"), "must be a string");
                    return;
                }
            },
        };
        let content_field = format!("{field}.content");
        let mut parts = self.parts(&content_field, obj.get("content"), role != Role::Tool);
        // Chat Completions puts a refusal beside a null content.
        if let Some(refusal) = self.string(&format!("{field}.refusal"), obj.get("refusal")) {
            parts.texts.push(refusal);
        }

        // Calls given beside the content: Chat Completions and LangChain `tool_calls`, LangChain
        // `invalid_tool_calls` (arguments kept as the raw text), the legacy `function_call`.
        for key in ["tool_calls", "invalid_tool_calls"] {
            match obj.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Array(calls)) => {
                    for (j, call) in calls.iter().enumerate() {
                        if let Some(call) = self.tool_call(&format!("{field}.{key}[{j}]"), call) {
                            // LangChain AI messages from Anthropic carry each call twice: as a
                            // tool_use block and in tool_calls.
                            if call.id.is_empty() || !parts.calls.iter().any(|c| c.id == call.id) {
                                parts.calls.push(call);
                            }
                        }
                    }
                }
                Some(_) => self.problem(format!("{field}.{key}"), "must be a list"),
            }
        }
        if let Some(call) = obj.get("function_call").filter(|v| !v.is_null())
            && let Some(call) = self.tool_call(&format!("{field}.function_call"), call)
        {
            parts.calls.push(call);
        }

        // A message that says nothing at all is most likely a mistake (`text:` for `content:`).
        if obj.get("content").is_none_or(Value::is_null)
            && parts.texts.is_empty()
            && parts.calls.is_empty()
        {
            self.problem(
                content_field,
                "is required (a string or a list of content parts) unless the message makes tool calls",
            );
            return;
        }
        match role {
            Role::Tool => {
                let id = match obj.get("tool_call_id").or_else(|| obj.get("tool_use_id")) {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => {
                        self.problem(format!("{field}.tool_call_id"), "must be a string");
                        String::new()
                    }
                };
                let is_error = obj.get("status").and_then(Value::as_str) == Some("error")
                    || obj.get("is_error").and_then(Value::as_bool) == Some(true);
                let text = std::mem::take(&mut parts.texts).join("\n");
                parts.results.push(ToolResult { id, text, is_error });
            }
            Role::User => {}
            Role::Assistant | Role::System => {
                if !parts.results.is_empty() {
                    self.problem(
                        content_field,
                        "tool results belong in a user or tool message",
                    );
                    return;
                }
                if role == Role::System && !parts.calls.is_empty() {
                    self.problem(
                        format!("{field}.tool_calls"),
                        "a system message makes no tool calls",
                    );
                    return;
                }
            }
        }
        if role == Role::User && !parts.calls.is_empty() {
            self.problem(
                format!("{field}.tool_calls"),
                "only an assistant message makes tool calls",
            );
            return;
        }
        push(out, extra, role, parts);
    }

    /// Reads `content`: a string, null, or a list of parts (strings, or objects with a `type`).
    /// `tools` allows tool calls and results among the parts.
    fn parts(&mut self, field: &str, content: Option<&Value>, tools: bool) -> Parts {
        let mut parts = Parts::default();
        match content {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => parts.texts.push(text.clone()),
            Some(Value::Array(items)) => {
                for (j, item) in items.iter().enumerate() {
                    self.part(&format!("{field}[{j}]"), item, tools, &mut parts);
                }
            }
            Some(_) => self.problem(field, "must be a string or a list of content parts"),
        }
        parts
    }

    fn part(&mut self, field: &str, item: &Value, tools: bool, parts: &mut Parts) {
        let obj = match item {
            Value::String(text) => {
                parts.texts.push(text.clone());
                return;
            }
            Value::Object(obj) => obj,
            _ => {
                self.problem(field, "must be a string or a content part object");
                return;
            }
        };
        let kind = match obj.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            None if obj.contains_key("text") => "text",
            _ => {
                self.problem(format!("{field}.type"), "is required (a string)");
                return;
            }
        };
        match kind {
            "text" | "input_text" | "output_text" => {
                if let Some(text) = self.required_string(field, obj, "text") {
                    parts.texts.push(text);
                }
            }
            "refusal" => {
                if let Some(text) = self.required_string(field, obj, "refusal") {
                    parts.texts.push(text);
                }
            }
            // Media cannot travel as text: a visible placeholder stands in for it.
            "image" | "image_url" | "input_image" => parts.texts.push("[image]".into()),
            "input_audio" | "audio" => parts.texts.push("[audio]".into()),
            "file" | "input_file" | "document" | "container_upload" | "search_result" => {
                parts.texts.push(format!("[{kind}]"));
            }
            // The model's private reasoning is not part of the conversation.
            "thinking" | "redacted_thinking" | "reasoning" | "summary_text" => {}
            // Tools the provider ran itself travel with their own result blocks; not conversation.
            "server_tool_use" | "mcp_tool_use" => {}
            k if k.ends_with("_tool_result") => {}
            "tool_use" | "tool_call" | "function_call" if tools => {
                if let Some(call) = self.tool_call(field, item) {
                    parts.calls.push(call);
                }
            }
            "tool_result" if tools => {
                let id = self
                    .string(&format!("{field}.tool_use_id"), obj.get("tool_use_id"))
                    .unwrap_or_default();
                if id.is_empty() {
                    self.problem(format!("{field}.tool_use_id"), "is required");
                }
                let inner = self.parts(&format!("{field}.content"), obj.get("content"), false);
                parts.results.push(ToolResult {
                    id,
                    text: inner.texts.join("\n"),
                    is_error: obj.get("is_error").and_then(Value::as_bool) == Some(true),
                });
            }
            "tool_use" | "tool_call" | "function_call" | "tool_result" => {
                self.problem(format!("{field}.type"), format!("{kind} cannot appear here"));
            }
            other => self.problem(
                format!("{field}.type"),
                format!("is {other:?}, not a content part this reads (text, input_text, output_text, refusal, \
                         image, tool_use, tool_result, ...)"),
            ),
        }
    }

    fn required_string(
        &mut self,
        field: &str,
        obj: &Map<String, Value>,
        key: &str,
    ) -> Option<String> {
        let field = format!("{field}.{key}");
        match obj.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            None | Some(Value::Null) => {
                self.problem(field, "is required");
                None
            }
            Some(_) => {
                self.problem(field, "must be a string");
                None
            }
        }
    }

    /// One tool call in any supported shape: Chat Completions (`{id, type: function, function:
    /// {name, arguments}}`, arguments a JSON string), Responses `function_call` (`call_id`),
    /// Anthropic `tool_use` (`input`), LangChain (`{name, args, id}`), or this crate's own
    /// `{id, name, arguments}`.
    fn tool_call(&mut self, field: &str, value: &Value) -> Option<ToolCall> {
        let Value::Object(obj) = value else {
            self.problem(field, "must be a tool call object");
            return None;
        };
        let id_key = if obj.get("type").and_then(Value::as_str) == Some("function_call") {
            "call_id"
        } else {
            "id"
        };
        let (holder, holder_field) = match obj.get("function").or_else(|| obj.get("custom")) {
            Some(Value::Object(function)) => (
                function,
                format!(
                    "{field}.{}",
                    if obj.contains_key("function") {
                        "function"
                    } else {
                        "custom"
                    }
                ),
            ),
            Some(_) => {
                self.problem(format!("{field}.function"), "must be an object");
                return None;
            }
            None => (obj, field.to_owned()),
        };
        let name = match holder.get("name") {
            Some(Value::String(name)) => name.clone(),
            None | Some(Value::Null) => {
                self.problem(format!("{holder_field}.name"), "is required");
                return None;
            }
            Some(_) => {
                self.problem(format!("{holder_field}.name"), "must be a string");
                return None;
            }
        };
        let id = match obj.get(id_key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(id)) => id.clone(),
            Some(_) => {
                self.problem(format!("{field}.{id_key}"), "must be a string");
                return None;
            }
        };
        let raw = ["arguments", "args", "input"]
            .into_iter()
            .find_map(|key| holder.get(key));
        let arguments = match raw {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
            // OpenAI sends the arguments as JSON text, which a model may have got wrong: kept as
            // the raw text (and rendered as text) rather than refused.
            Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
                Ok(parsed @ Value::Object(_)) => parsed,
                _ => Value::String(text.clone()),
            },
            Some(other) => other.clone(),
        };
        Some(ToolCall {
            id,
            name,
            arguments,
        })
    }
}

/// Appends the messages one value gave: tool results first (each a `tool` message), then the
/// text and calls. When there are several, the value's id is suffixed `#1`, `#2`, ...
fn push(out: &mut Vec<Message>, extra: Extra, role: Role, parts: Parts) {
    let mut made = Vec::new();
    for result in parts.results {
        made.push(Message {
            role: "tool".into(),
            content: result.text,
            tool_call_id: (!result.id.is_empty()).then_some(result.id),
            is_error: result.is_error,
            ..Message::default()
        });
    }
    let text = parts.texts.join("\n");
    if role != Role::Tool && (made.is_empty() || !text.trim().is_empty() || !parts.calls.is_empty())
    {
        made.push(Message {
            role: role.name().into(),
            content: text,
            tool_calls: parts.calls,
            ..Message::default()
        });
    }
    let several = made.len() > 1;
    for (k, mut m) in made.into_iter().enumerate() {
        m.at = extra.at;
        m.priority = extra.priority;
        m.id = match &extra.id {
            Some(id) if several => Some(format!("{id}#{k}")),
            other => other.clone(),
        };
        out.push(m);
    }
}

// ---------------------------------------------------------------------------------------------
// Out: a packet's conversation as provider input.

/// What a provider's ids and tool names must look like.
struct Rules {
    /// Longest id the provider accepts.
    id_len: usize,
    /// Prefix of ids this module makes for ids the provider would refuse.
    id_prefix: &'static str,
}

fn rules(provider: Provider) -> Rules {
    match provider {
        // OpenAI refuses tool call ids longer than 40 characters.
        Provider::OpenAiChat | Provider::OpenAiResponses | Provider::Mcp => Rules {
            id_len: 40,
            id_prefix: "call_",
        },
        Provider::Anthropic => Rules {
            id_len: 64,
            id_prefix: "toolu_",
        },
    }
}

fn plain_word(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The id as the provider accepts it: unchanged when it already is, else a stable rewrite.
fn provider_id(id: &str, rules: &Rules) -> String {
    if plain_word(id, rules.id_len) {
        return id.to_owned();
    }
    // FNV-1a: stable across runs and platforms, unlike the standard library's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}{hash:016x}", rules.id_prefix)
}

/// A call sent as a call, with the result sent right after it.
struct Paired<'a> {
    id: String,
    call: &'a ToolCall,
    result: &'a str,
    is_error: bool,
}

/// The conversation, with calls paired and everything else as text, before it takes a
/// provider's shape.
enum Turn<'a> {
    System(String),
    User(String),
    Assistant {
        text: String,
        calls: Vec<Paired<'a>>,
    },
}

fn role_of(section: &Section) -> &str {
    section.role.as_deref().unwrap_or("user")
}

fn result_text(section: &Section) -> String {
    let tag = if section.is_error {
        "tool error"
    } else {
        "tool result"
    };
    match &section.tool_call_id {
        Some(id) => format!("[{tag} {id}] {}", section.text),
        None => format!("[{tag}] {}", section.text),
    }
}

fn join(a: &mut String, b: &str) {
    if b.trim().is_empty() {
        return;
    }
    if !a.trim().is_empty() {
        a.push('\n');
    } else {
        a.clear();
    }
    a.push_str(b);
}

/// Pairs calls with results: an assistant's calls (with any assistant messages that follow
/// before the results) are answered by the run of tool messages right after them.
fn turns<'a>(sections: &[&'a Section], provider: Provider) -> Vec<Turn<'a>> {
    let rules = rules(provider);
    let mut used: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i < sections.len() {
        let section = sections[i];
        match role_of(section) {
            "assistant" => {
                let mut text = String::new();
                let mut calls: Vec<&'a ToolCall> = Vec::new();
                let mut j = i;
                // Merge the assistant messages that come before the results of the calls.
                while j < sections.len()
                    && role_of(sections[j]) == "assistant"
                    && (j == i || !calls.is_empty())
                {
                    join(&mut text, &sections[j].text);
                    calls.extend(&sections[j].tool_calls);
                    j += 1;
                }
                let mut k = j;
                while k < sections.len() && role_of(sections[k]) == "tool" {
                    k += 1;
                }
                let results = &sections[j..k];
                let mut taken = vec![false; results.len()];
                let mut paired = Vec::new();
                let mut unpaired = String::new();
                for call in calls {
                    let id = provider_id(&call.id, &rules);
                    let answer = (!call.id.is_empty()
                        && plain_word(&call.name, 64)
                        && call.arguments.is_object()
                        && !used.contains(&id))
                    .then(|| {
                        results.iter().enumerate().position(|(r, s)| {
                            !taken[r] && s.tool_call_id.as_deref() == Some(call.id.as_str())
                        })
                    })
                    .flatten();
                    match answer {
                        Some(r) => {
                            taken[r] = true;
                            used.insert(id.clone());
                            paired.push(Paired {
                                id,
                                call,
                                result: &results[r].text,
                                is_error: results[r].is_error,
                            });
                        }
                        None => join(&mut unpaired, &call.to_text()),
                    }
                }
                join(&mut text, &unpaired);
                out.push(Turn::Assistant {
                    text,
                    calls: paired,
                });
                for (r, result) in results.iter().enumerate() {
                    if !taken[r] {
                        out.push(Turn::User(result_text(result)));
                    }
                }
                i = k;
            }
            "tool" => {
                out.push(Turn::User(result_text(section)));
                i += 1;
            }
            "system" => {
                out.push(Turn::System(section.text.clone()));
                i += 1;
            }
            "user" => {
                out.push(Turn::User(section.text.clone()));
                i += 1;
            }
            other => {
                out.push(Turn::User(format!("[{other}] {}", section.text)));
                i += 1;
            }
        }
    }
    out
}

fn arguments_text(call: &ToolCall) -> String {
    call.arguments.to_string()
}

fn blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// The text a model is given when a packet has no briefing and its conversation starts with
/// the assistant: Anthropic needs a user message first.
const OPENING: &str = "(The conversation so far follows.)";

/// Renders a packet's briefing and conversation sections as `provider` input.
pub(super) fn render(
    briefing: &str,
    sections: &[&Section],
    provider: Provider,
) -> Result<Vec<Value>> {
    if provider == Provider::Mcp {
        return Err(Error::invalid(
            "provider",
            "must be openai_chat, openai_responses or anthropic: MCP has no chat message format",
        ));
    }
    let turns = turns(sections, provider);
    let mut out = Vec::new();
    match provider {
        Provider::OpenAiChat => {
            if !blank(briefing) {
                out.push(json!({"role": "system", "content": briefing}));
            }
            for turn in turns {
                match turn {
                    Turn::System(text) if !blank(&text) => {
                        out.push(json!({"role": "system", "content": text}));
                    }
                    Turn::User(text) if !blank(&text) => {
                        out.push(json!({"role": "user", "content": text}));
                    }
                    Turn::Assistant { text, calls } if calls.is_empty() && !blank(&text) => {
                        out.push(json!({"role": "assistant", "content": text}));
                    }
                    Turn::Assistant { calls, .. } if calls.is_empty() => {}
                    Turn::Assistant { text, calls } => {
                        let content = if blank(&text) {
                            Value::Null
                        } else {
                            Value::String(text)
                        };
                        let tool_calls: Vec<Value> = calls
                            .iter()
                            .map(|p| {
                                json!({"id": p.id, "type": "function",
                                       "function": {"name": p.call.name, "arguments": arguments_text(p.call)}})
                            })
                            .collect();
                        out.push(json!({"role": "assistant", "content": content, "tool_calls": tool_calls}));
                        for p in calls {
                            out.push(
                                json!({"role": "tool", "tool_call_id": p.id, "content": p.result}),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
        Provider::OpenAiResponses => {
            if !blank(briefing) {
                out.push(json!({"role": "system", "content": briefing}));
            }
            for turn in turns {
                match turn {
                    Turn::System(text) if !blank(&text) => {
                        out.push(json!({"role": "system", "content": text}));
                    }
                    Turn::User(text) if !blank(&text) => {
                        out.push(json!({"role": "user", "content": text}));
                    }
                    Turn::Assistant { text, calls } => {
                        if !blank(&text) {
                            out.push(json!({"role": "assistant", "content": text}));
                        }
                        for p in &calls {
                            out.push(json!({"type": "function_call", "call_id": p.id,
                                            "name": p.call.name, "arguments": arguments_text(p.call)}));
                        }
                        for p in calls {
                            out.push(json!({"type": "function_call_output", "call_id": p.id, "output": p.result}));
                        }
                    }
                    _ => {}
                }
            }
        }
        Provider::Anthropic | Provider::Mcp => {
            // (role is "user" or "assistant", blocks); merged so that roles alternate.
            let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
            let mut add = |role: &'static str, blocks: Vec<Value>| {
                if blocks.is_empty() {
                    return;
                }
                match messages.last_mut() {
                    Some((last, existing)) if *last == role => existing.extend(blocks),
                    _ => messages.push((role, blocks)),
                }
            };
            let text = |t: &str| json!({"type": "text", "text": t});
            if !blank(briefing) {
                add("user", vec![text(briefing)]);
            }
            for turn in turns {
                match turn {
                    Turn::System(t) if !blank(&t) => {
                        add("user", vec![text(&format!("[system] {t}"))])
                    }
                    Turn::User(t) if !blank(&t) => add("user", vec![text(&t)]),
                    Turn::Assistant { text: t, calls } => {
                        let mut blocks = Vec::new();
                        if !blank(&t) {
                            blocks.push(text(&t));
                        }
                        for p in &calls {
                            blocks
                                .push(json!({"type": "tool_use", "id": p.id, "name": p.call.name,
                                               "input": p.call.arguments}));
                        }
                        add("assistant", blocks);
                        let results: Vec<Value> = calls
                            .iter()
                            .map(|p| {
                                let mut block = json!({"type": "tool_result", "tool_use_id": p.id});
                                if !blank(p.result) {
                                    block["content"] = Value::String(p.result.to_owned());
                                }
                                if p.is_error {
                                    block["is_error"] = Value::Bool(true);
                                }
                                block
                            })
                            .collect();
                        add("user", results);
                    }
                    _ => {}
                }
            }
            if messages
                .first()
                .is_some_and(|(role, _)| *role == "assistant")
            {
                messages.insert(0, ("user", vec![text(OPENING)]));
            }
            // The API refuses a final assistant message (a prefill) that ends in whitespace.
            if let Some(("assistant", blocks)) = messages.last_mut().map(|(r, b)| (*r, b))
                && let Some(Value::String(t)) = blocks.last_mut().and_then(|b| b.get_mut("text"))
            {
                let trimmed = t.trim_end().len();
                t.truncate(trimmed);
            }
            out = messages
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect();
        }
    }
    Ok(out)
}
