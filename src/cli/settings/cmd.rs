//! The commands that read settings, and which keys each reads: the one table of who reads what.

use super::Key;

/// A command that reads settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::cli) enum Cmd {
    Check,
    Diff,
    Explain,
    Verify,
    VerifyAttestation,
    Lint,
    Gates,
    BaselineApprove,
    BaselinePending,
    BaselineReview,
    BaselineAccept,
    BaselineReject,
    TrialsPlan,
    TrialsNext,
    /// `config`, which shows what `check` runs with.
    Config,
    /// A command that reads no setting.
    None,
}

impl Cmd {
    /// Every command that reads a setting, in the table's order.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(in crate::cli) const ALL: &'static [Cmd] = &[
        Cmd::Check,
        Cmd::Diff,
        Cmd::Explain,
        Cmd::Verify,
        Cmd::VerifyAttestation,
        Cmd::Lint,
        Cmd::Gates,
        Cmd::BaselineApprove,
        Cmd::BaselinePending,
        Cmd::BaselineReview,
        Cmd::BaselineAccept,
        Cmd::BaselineReject,
        Cmd::TrialsPlan,
        Cmd::TrialsNext,
    ];

    /// How a user types it.
    pub(in crate::cli) fn name(self) -> &'static str {
        match self {
            Cmd::Check => "check",
            Cmd::Diff => "diff",
            Cmd::Explain => "explain",
            Cmd::Verify => "verify",
            Cmd::VerifyAttestation => "verify-attestation",
            Cmd::Lint => "lint",
            Cmd::Gates => "gates",
            Cmd::BaselineApprove => "baseline approve",
            Cmd::BaselinePending => "baseline pending",
            Cmd::BaselineReview => "baseline review",
            Cmd::BaselineAccept => "baseline accept",
            Cmd::BaselineReject => "baseline reject",
            Cmd::TrialsPlan => "trials plan",
            Cmd::TrialsNext => "trials next",
            Cmd::Config => "config",
            Cmd::None => "",
        }
    }

    /// The keys it reads: the one table of who reads what.
    pub(in crate::cli) fn reads(self) -> &'static [Key] {
        use Key::*;
        match self {
            Cmd::Check | Cmd::Config => &[
                Paths,
                Baselines,
                Scenarios,
                CacheDir,
                TrustedKeys,
                Prices,
                BudgetTokens,
                BudgetCost,
                FailOn,
                Drift,
                UsageTolerance,
                Alpha,
                RequireSealed,
                RequireSigned,
                RunId,
            ],
            Cmd::Diff => &[
                Paths,
                Baselines,
                Scenarios,
                Prices,
                Drift,
                UsageTolerance,
                Alpha,
                RequireSealed,
            ],
            // One trace at a time: no trial sets, so no `alpha`.
            Cmd::Explain => &[
                Paths,
                Baselines,
                Scenarios,
                Prices,
                Drift,
                UsageTolerance,
                RequireSealed,
            ],
            Cmd::Verify => &[Paths, TrustedKeys],
            Cmd::VerifyAttestation => &[TrustedKeys],
            Cmd::Lint => &[Paths, Scenarios, Prices],
            Cmd::Gates => &[Paths, Scenarios, Prices, Alpha],
            // It records what the traces show: `usage-tolerance`, `alpha` and `drift` decide
            // what counts as drift, which it does not judge.
            Cmd::BaselineApprove => &[Paths, Baselines, Scenarios, Prices, RequireSealed],
            Cmd::BaselinePending
            | Cmd::BaselineReview
            | Cmd::BaselineAccept
            | Cmd::BaselineReject => &[Baselines],
            // It judges the cases as `check` does and reads their approved sets, comparing
            // nothing.
            Cmd::TrialsPlan => &[Paths, Baselines, Scenarios, Prices, Alpha, RequireSealed],
            // It judges the case's trials, as `check` would, and under a `trials.drift` design
            // their regression test against the approved set (never the usage tests).
            Cmd::TrialsNext => &[
                Paths,
                Baselines,
                Scenarios,
                Prices,
                Drift,
                Alpha,
                RequireSealed,
            ],
            Cmd::None => &[],
        }
    }
}
