//! The OpenTelemetry attribute dialects ingest reads, one table each: how a span says what it
//! is, and where each dialect keeps the agent's name, an inference's messages, model, usage and
//! finish reason, and a tool execution's name, call id, arguments and result.
//!
//! A new dialect is one more [`Dialect`] in [`DIALECTS`] (and, if its messages have a shape
//! none of [`Messages`] reads, that shape). Where a span carries keys of several dialects, the
//! first dialect in [`DIALECTS`] that has a key wins.

use super::map::Role;

/// Where a dialect records messages.
#[derive(Debug, Clone, Copy)]
pub(super) enum Messages {
    /// One attribute holding a JSON list of `{role, parts}` or `{role, content, tool_calls}`
    /// messages (JSON text, or JSON text of JSON text).
    Json(&'static str),
    /// Attributes flattened as `prefix.N.…` (OpenInference's `llm.*_messages.N.message.*`,
    /// OpenLLMetry's `gen_ai.prompt.N.*`).
    Flattened(&'static str),
    /// The Vercel AI SDK's response: `ai.response.text` and `ai.response.toolCalls`.
    VercelResponse,
    /// any-agent's `gen_ai.output`: text, or a list of `{tool.name, tool.args}` calls, typed by
    /// `gen_ai.output.type`.
    AnyAgentOutput,
}

/// What a dialect's kind value means: a role, or `None` when it is none of the dialect's.
pub(super) type Classify = fn(&str) -> Option<Role>;

/// One attribute dialect.
#[derive(Debug)]
pub(super) struct Dialect {
    /// The attribute whose value says what a span is, and what each value means (`None`: not
    /// this dialect's, look further).
    pub(super) kind: Option<(&'static str, Classify)>,
    /// The agent's name (else the span name).
    pub(super) agent_name: &'static [&'static str],
    /// An inference's input messages.
    pub(super) input: &'static [Messages],
    /// An inference's input as plain text, when no messages are recorded.
    pub(super) input_text: &'static [&'static str],
    /// An inference's output.
    pub(super) output: &'static [Messages],
    /// The model.
    pub(super) model: &'static [&'static str],
    /// The provider's response id.
    pub(super) response_id: &'static [&'static str],
    /// The finish reason (a string, or a list whose first item is taken).
    pub(super) finish: &'static [&'static str],
    /// Input tokens, output tokens, cache reads, reasoning tokens, cost in US dollars.
    pub(super) usage: Usage,
    /// A tool execution's tool name, call id, arguments and result.
    pub(super) tool: Tool,
}

/// Where a dialect records token usage.
#[derive(Debug)]
pub(super) struct Usage {
    pub(super) input: &'static [&'static str],
    pub(super) output: &'static [&'static str],
    pub(super) cache_read: &'static [&'static str],
    /// Input tokens written to the prompt cache (both names the conventions have used).
    pub(super) cache_write: &'static [&'static str],
    pub(super) reasoning: &'static [&'static str],
    pub(super) cost: &'static [&'static str],
}

impl Usage {
    /// A dialect that records no usage.
    const NONE: Usage = Usage {
        input: &[],
        output: &[],
        cache_read: &[],
        cache_write: &[],
        reasoning: &[],
        cost: &[],
    };
}

/// Where a dialect records a tool execution.
#[derive(Debug)]
pub(super) struct Tool {
    pub(super) name: &'static [&'static str],
    pub(super) call_id: &'static [&'static str],
    pub(super) args: &'static [&'static str],
    pub(super) result: &'static [&'static str],
}

/// The OpenTelemetry GenAI semantic conventions.
const GENAI: Dialect = Dialect {
    kind: Some(("gen_ai.operation.name", |op| {
        match op.to_ascii_lowercase().as_str() {
            "chat" | "text_completion" | "generate_content" | "call_llm" => Some(Role::Inference),
            "execute_tool" => Some(Role::Tool),
            "invoke_agent" | "create_agent" => Some(Role::Agent),
            // Another operation: another dialect may still say what the span is.
            _ => None,
        }
    })),
    agent_name: &["gen_ai.agent.name"],
    input: &[Messages::Json("gen_ai.input.messages")],
    input_text: &[],
    output: &[Messages::Json("gen_ai.output.messages")],
    model: &["gen_ai.response.model", "gen_ai.request.model"],
    response_id: &["gen_ai.response.id"],
    finish: &["gen_ai.response.finish_reasons"],
    usage: Usage {
        input: &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"],
        output: &[
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
        ],
        cache_read: &["gen_ai.usage.cache_read.input_tokens"],
        cache_write: &[
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.usage.cache_write.input_tokens",
        ],
        reasoning: &["gen_ai.usage.reasoning_tokens"],
        // Langfuse's name for the request's cost.
        cost: &["gen_ai.usage.cost"],
    },
    tool: Tool {
        name: &["gen_ai.tool.name"],
        call_id: &["gen_ai.tool.call.id"],
        args: &["gen_ai.tool.call.arguments", "gen_ai.tool.args"],
        result: &["gen_ai.tool.call.result"],
    },
};

/// OpenInference (Arize Phoenix).
const OPENINFERENCE: Dialect = Dialect {
    kind: Some(("openinference.span.kind", |k| {
        Some(match k.to_ascii_uppercase().as_str() {
            "LLM" => Role::Inference,
            "TOOL" => Role::Tool,
            "AGENT" => Role::Agent,
            other => Role::Other(format!("OpenInference {other} spans")),
        })
    })),
    agent_name: &[],
    input: &[Messages::Flattened("llm.input_messages")],
    input_text: &["input.value"],
    output: &[Messages::Flattened("llm.output_messages")],
    model: &["llm.model_name"],
    response_id: &[],
    finish: &["llm.finish_reason"],
    usage: Usage {
        input: &["llm.token_count.prompt"],
        output: &["llm.token_count.completion"],
        cache_read: &["llm.token_count.prompt_details.cache_read"],
        cache_write: &["llm.token_count.prompt_details.cache_write"],
        reasoning: &["llm.token_count.completion_details.reasoning"],
        cost: &["llm.cost.total"],
    },
    tool: Tool {
        name: &["tool.name"],
        call_id: &["tool_call.id"],
        args: &["input.value"],
        result: &["output.value"],
    },
};

/// The Vercel AI SDK's telemetry.
const VERCEL: Dialect = Dialect {
    kind: Some(("ai.operationId", |op| {
        Some(match op {
            "ai.toolCall" => Role::Tool,
            _ if op.ends_with(".doGenerate") || op.ends_with(".doStream") => Role::Inference,
            "ai.generateText" | "ai.streamText" | "ai.generateObject" | "ai.streamObject" => {
                Role::Agent
            }
            other => Role::Other(format!("Vercel AI SDK `{other}` spans")),
        })
    })),
    agent_name: &["ai.telemetry.functionId"],
    input: &[Messages::Json("ai.prompt.messages")],
    input_text: &[],
    output: &[Messages::VercelResponse],
    model: &["ai.response.model", "ai.model.id"],
    response_id: &["ai.response.id"],
    finish: &["ai.response.finishReason"],
    usage: Usage {
        input: &["ai.usage.inputTokens", "ai.usage.promptTokens"],
        output: &["ai.usage.outputTokens", "ai.usage.completionTokens"],
        cache_read: &[],
        cache_write: &[],
        reasoning: &[],
        cost: &[],
    },
    tool: Tool {
        name: &["ai.toolCall.name"],
        call_id: &["ai.toolCall.id"],
        args: &["ai.toolCall.args"],
        result: &["ai.toolCall.result"],
    },
};

/// Traceloop's OpenLLMetry.
const TRACELOOP: Dialect = Dialect {
    kind: Some(("traceloop.span.kind", |k| {
        Some(match k {
            "workflow" | "agent" => Role::Agent,
            "tool" => Role::Tool,
            other => Role::Other(format!("Traceloop `{other}` spans")),
        })
    })),
    agent_name: &["traceloop.entity.name", "traceloop.workflow.name"],
    input: &[Messages::Flattened("gen_ai.prompt")],
    input_text: &[],
    output: &[Messages::Flattened("gen_ai.completion")],
    model: &[],
    response_id: &[],
    finish: &[],
    usage: Usage::NONE,
    tool: Tool {
        name: &["traceloop.entity.name"],
        call_id: &[],
        args: &["traceloop.entity.input"],
        result: &["traceloop.entity.output"],
    },
};

/// any-agent (Mozilla.ai): the GenAI operation names with its own `gen_ai.output` and
/// `gen_ai.tool.args`; read after every other dialect.
const ANY_AGENT: Dialect = Dialect {
    kind: None,
    agent_name: &[],
    input: &[],
    input_text: &[],
    output: &[Messages::AnyAgentOutput],
    model: &[],
    response_id: &[],
    finish: &[],
    usage: Usage::NONE,
    tool: Tool {
        name: &[],
        call_id: &[],
        args: &[],
        result: &["gen_ai.output"],
    },
};

/// Every dialect, in the order their keys are read.
pub(super) static DIALECTS: [Dialect; 5] = [GENAI, OPENINFERENCE, VERCEL, TRACELOOP, ANY_AGENT];

/// Every dialect's keys for one field, in dialect order: the lists the readers look up,
/// flattened once rather than per span.
#[derive(Debug)]
pub(super) struct Keys {
    pub(super) agent_name: Vec<&'static str>,
    pub(super) input: Vec<Messages>,
    pub(super) input_text: Vec<&'static str>,
    pub(super) output: Vec<Messages>,
    pub(super) model: Vec<&'static str>,
    pub(super) response_id: Vec<&'static str>,
    pub(super) finish: Vec<&'static str>,
    pub(super) usage_input: Vec<&'static str>,
    pub(super) usage_output: Vec<&'static str>,
    pub(super) cache_read: Vec<&'static str>,
    pub(super) cache_write: Vec<&'static str>,
    pub(super) reasoning: Vec<&'static str>,
    pub(super) cost: Vec<&'static str>,
    pub(super) tool_name: Vec<&'static str>,
    pub(super) tool_call_id: Vec<&'static str>,
    pub(super) tool_args: Vec<&'static str>,
    pub(super) tool_result: Vec<&'static str>,
}

/// [`DIALECTS`] flattened into [`Keys`] (a constant, computed on first use).
pub(super) static KEYS: std::sync::LazyLock<Keys> = std::sync::LazyLock::new(|| {
    fn all<T: Copy + 'static>(pick: impl Fn(&'static Dialect) -> &'static [T]) -> Vec<T> {
        DIALECTS.iter().flat_map(pick).copied().collect()
    }
    Keys {
        agent_name: all(|d| d.agent_name),
        input: all(|d| d.input),
        input_text: all(|d| d.input_text),
        output: all(|d| d.output),
        model: all(|d| d.model),
        response_id: all(|d| d.response_id),
        finish: all(|d| d.finish),
        usage_input: all(|d| d.usage.input),
        usage_output: all(|d| d.usage.output),
        cache_read: all(|d| d.usage.cache_read),
        cache_write: all(|d| d.usage.cache_write),
        reasoning: all(|d| d.usage.reasoning),
        cost: all(|d| d.usage.cost),
        tool_name: all(|d| d.tool.name),
        tool_call_id: all(|d| d.tool.call_id),
        tool_args: all(|d| d.tool.args),
        tool_result: all(|d| d.tool.result),
    }
});

/// What the span is, by the first dialect whose kind attribute it has and knows.
pub(super) fn role_of(s: &super::Span) -> Option<Role> {
    DIALECTS.iter().find_map(|d| {
        let (key, classify) = d.kind?;
        classify(s.str_attr(&[key])?)
    })
}
