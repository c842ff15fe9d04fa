//! Typed oracles: what each entry of a scenario's `oracles[]` becomes when the scenario loads —
//! its parameters resolved (with the harness's fallbacks), parsed and validated once — and the
//! one exhaustive dispatch from an oracle to its check. A misconfigured oracle is known at load
//! time, so `gates` reports it without judging anything, and judging never reads a parameter.

use crate::oracle::ConfigError;
use std::sync::LazyLock;

use super::compose::{self, Inner};
use super::counts::Range;
use super::facts::Facts;
use super::jsoneq::ArgsMatch;
use super::result::OracleResult;
use super::sequence::{Of, SeqConfig};
use super::spec::{Expected, OracleSpec};
use super::{artifacts, behaviour, calls, contract, cost, counts, harness, replies, sequence};
use crate::trace::Phase;

/// What a scenario lends its oracles: the `expected` values the harness falls back on, its
/// `unsafeTools` metadata and its Harness Contract.
#[derive(Debug, Clone, Copy)]
pub struct Fallbacks<'s> {
    /// `expected`.
    pub expected: &'s Expected,
    /// `metadata.unsafeTools` (comma-separated).
    pub unsafe_tools: Option<&'s str>,
    /// The contract as it loaded, when the scenario names one.
    pub contract: Option<&'s Result<super::harness_contract::Contract, String>>,
}

impl Fallbacks<'_> {
    /// No fallbacks: an oracle configured on its own.
    pub fn none() -> Fallbacks<'static> {
        static EXPECTED: LazyLock<Expected> = LazyLock::new(Expected::default);
        Fallbacks {
            expected: &EXPECTED,
            unsafe_tools: None,
            contract: None,
        }
    }
}

/// How an oracle type turns its written parameters into an [`Oracle`], or says why it cannot.
pub(crate) type Configure = fn(&OracleSpec, &Fallbacks<'_>) -> Result<Oracle, ConfigError>;

/// A compiled `final-answer-matches` pattern (compared by its text).
#[derive(Debug, Clone)]
pub struct Pattern(pub regex::Regex);

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

/// Which token counts `max-tokens` sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Input tokens.
    Input,
    /// Output tokens.
    Output,
    /// Both.
    Total,
}

impl TokenKind {
    /// The parameter's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Input => "input",
            TokenKind::Output => "output",
            TokenKind::Total => "total",
        }
    }
}

/// An oracle, configured: one variant per type, holding exactly what its check needs.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // each variant is its oracle type; the fields are its parameters
pub enum Oracle {
    ToolCalled {
        tools: Vec<String>,
    },
    ToolNotCalled {
        tools: Vec<String>,
    },
    MaxToolCalls {
        limit: u64,
    },
    FinalAnswerContains {
        texts: Vec<String>,
    },
    FinalAnswerNotContains {
        texts: Vec<String>,
    },
    ApprovalRequired {
        tool: Option<String>,
    },
    ApprovalNotRequired,
    NoUnsafeTool {
        unsafe_tools: Vec<String>,
    },
    StatusIs {
        status: String,
    },
    ToolSequence(Box<SeqConfig>),
    ToolArgs {
        tool: String,
        args: serde_json::Value,
        mode: ArgsMatch,
        of: Of,
    },
    ToolSucceeded {
        tool: Option<String>,
    },
    ToolResultContains {
        tool: String,
        value: String,
    },
    CallResultLinked,
    RequestCount {
        range: Range,
    },
    StepCount {
        kind: String,
        known: &'static str,
        range: Range,
    },
    MessageCount {
        phase: Phase,
        value: Option<String>,
        range: Range,
    },
    NoPreviewLeft {
        require: bool,
    },
    FinalAfterTool {
        tool: String,
        phase: Option<Phase>,
        value: Option<String>,
    },
    ArtifactContains {
        path: String,
        values: Vec<String>,
    },
    ArtifactBeforeReply {
        path: String,
    },
    FinalAnswerMatches {
        pattern: Pattern,
    },
    Pattern(Box<super::patterns::PatternCheck>),
    Hosts(Box<super::patterns::HostsCheck>),
    MaxTokens {
        limit: u64,
        kind: TokenKind,
    },
    MaxCost {
        limit_nanos: u64,
    },
    ToolsOffered {
        tools: Vec<String>,
        subset: bool,
    },
    NoRepeatedCall {
        max: u64,
        consecutive: bool,
        tools: Vec<String>,
    },
    NoRetrySpiral {
        max: u64,
        tools: Vec<String>,
    },
    ToolErrorsHandled {
        success: Vec<String>,
        tools: Vec<String>,
    },
    StepStatus {
        tools: Vec<String>,
        max_errors: u64,
    },
    ContractConformant(Box<super::harness_contract::Contract>),
    ToolCallCount {
        tool: String,
        range: Range,
        of: Of,
    },
    ResponseSimilarity(Box<super::similarity::Similarity>),
    Expr(Box<super::expr::Program>),
    /// `not`.
    Not(Box<Inner>),
    /// `all-of`.
    AllOf(Vec<Inner>),
    /// `any-of`.
    AnyOf(Vec<Inner>),
    /// Any oracle with a `threshold` below 1.
    Threshold {
        inner: Box<Oracle>,
        threshold: f64,
    },
    /// Any oracle with a `turn`.
    Turn {
        inner: Box<Oracle>,
        turn: i64,
    },
}

impl Oracle {
    /// Judges the oracle on a trace's facts.
    pub fn judge(&self, facts: &Facts<'_, '_>) -> OracleResult {
        match self {
            Oracle::ToolCalled { tools } => harness::tool_called(tools, facts),
            Oracle::ToolNotCalled { tools } => harness::tool_not_called(tools, facts),
            Oracle::MaxToolCalls { limit } => harness::max_tool_calls(*limit, facts),
            Oracle::FinalAnswerContains { texts } => harness::final_answer_contains(texts, facts),
            Oracle::FinalAnswerNotContains { texts } => {
                harness::final_answer_not_contains(texts, facts)
            }
            Oracle::ApprovalRequired { tool } => harness::approval_required(tool.as_deref(), facts),
            Oracle::ApprovalNotRequired => harness::approval_not_required(facts),
            Oracle::NoUnsafeTool { unsafe_tools } => harness::no_unsafe_tool(unsafe_tools, facts),
            Oracle::StatusIs { status } => harness::status_is(status, facts),
            Oracle::ToolSequence(cfg) => sequence::tool_sequence(cfg, facts),
            Oracle::ToolArgs {
                tool,
                args,
                mode,
                of,
            } => calls::tool_args(tool, args, mode, *of, facts),
            Oracle::ToolSucceeded { tool } => calls::tool_succeeded(tool.as_deref(), facts),
            Oracle::ToolResultContains { tool, value } => {
                calls::tool_result_contains(tool, value, facts)
            }
            Oracle::CallResultLinked => calls::call_result_linked(facts),
            Oracle::RequestCount { range } => counts::request_count(*range, facts),
            Oracle::StepCount { kind, known, range } => {
                counts::step_count(kind, known, *range, facts)
            }
            Oracle::MessageCount {
                phase,
                value,
                range,
            } => counts::message_count(*phase, value.as_deref(), *range, facts),
            Oracle::NoPreviewLeft { require } => replies::no_preview_left(*require, facts),
            Oracle::FinalAfterTool { tool, phase, value } => {
                replies::final_after_tool(tool, *phase, value.as_deref(), facts)
            }
            Oracle::ArtifactContains { path, values } => {
                artifacts::artifact_contains(path, values, facts)
            }
            Oracle::ArtifactBeforeReply { path } => artifacts::artifact_before_reply(path, facts),
            Oracle::FinalAnswerMatches { pattern } => {
                replies::final_answer_matches(&pattern.0, facts)
            }
            Oracle::Pattern(check) => super::patterns::pattern(check, facts),
            Oracle::Hosts(check) => super::patterns::hosts(check, facts),
            Oracle::MaxTokens { limit, kind } => counts::max_tokens(*limit, *kind, facts),
            Oracle::MaxCost { limit_nanos } => cost::max_cost(*limit_nanos, facts),
            Oracle::ToolsOffered { tools, subset } => counts::tools_offered(tools, *subset, facts),
            Oracle::NoRepeatedCall {
                max,
                consecutive,
                tools,
            } => behaviour::no_repeated_call(*max, *consecutive, tools, facts),
            Oracle::NoRetrySpiral { max, tools } => behaviour::no_retry_spiral(*max, tools, facts),
            Oracle::ToolErrorsHandled { success, tools } => {
                behaviour::tool_errors_handled(success, tools, facts)
            }
            Oracle::StepStatus { tools, max_errors } => {
                behaviour::step_status(tools, *max_errors, facts)
            }
            Oracle::ContractConformant(c) => contract::contract_conformant(c, facts),
            Oracle::ToolCallCount { tool, range, of } => {
                counts::tool_call_count(tool, *range, *of, facts)
            }
            Oracle::ResponseSimilarity(s) => s.judge(facts),
            Oracle::Expr(p) => p.judge(facts),
            Oracle::Not(inner) => compose::check_not(inner, facts),
            Oracle::AllOf(inners) => compose::check_group(inners, true, facts),
            Oracle::AnyOf(inners) => compose::check_group(inners, false, facts),
            Oracle::Threshold { inner, threshold } => {
                compose::apply_threshold(inner.judge(facts), *threshold)
            }
            Oracle::Turn { inner, turn } => compose::check_turn(inner, *turn, facts),
        }
    }
}
