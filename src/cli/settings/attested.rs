//! The settings as the signed record of a run names them (`check --attest`): each setting
//! that changes judging, with its value.

use super::{Key, Settings, table};

impl Key {
    /// Whether the setting changes how traces are judged or what fails the run: what the signed
    /// record of a run (`check --attest`) names. Every key says which, so a new one must.
    pub(super) fn judges(self) -> bool {
        match self {
            Key::Baselines
            | Key::Scenarios
            | Key::TrustedKeys
            | Key::Prices
            | Key::BudgetTokens
            | Key::BudgetCost
            | Key::FailOn
            | Key::Drift
            | Key::UsageTolerance
            | Key::Alpha
            | Key::RequireSealed
            | Key::RequireSigned
            | Key::RunId => true,
            Key::Paths | Key::CacheDir => false,
        }
    }
}

impl Settings {
    /// The settings this command reads that change judging ([`Key::judges`]), each as
    /// `name = value` with the value it has in this run, its default included; the price table
    /// with the BLAKE3 hash of its contents too, so two runs judged under different prices (or
    /// budgets, or `alpha`) never read alike.
    pub(in crate::cli) fn judging_settings(&self) -> Vec<String> {
        let keys = (Key::ALL.iter()).filter(|k| k.judges() && self.cmd.reads().contains(k));
        keys.map(|&key| {
            let value = (self.read(key).shown(key))
                .unwrap_or_else(|| table::shown_default(key.default_text()));
            let value = tracereplay::report::escape_controls(&value);
            // The hash of the bytes judging read (the table was read before anything was
            // judged; a table that could not be read judged nothing).
            match (key, self.prices_read()) {
                (Key::Prices, Ok(Some((_, hash)))) => format!("{} = {value} ({hash})", key.name()),
                (Key::Prices, Err(e)) => format!("{} = {value} (unreadable: {e})", key.name()),
                _ => format!("{} = {value}", key.name()),
            }
        })
        .collect()
    }
}
