//! `report` flags: reports made from JSON reports of earlier runs.

use camino::Utf8PathBuf;
use clap::Args;

/// `report` flags.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Compare two runs from their JSON reports (`check --json FILE`): each case's verdict,
    /// pass count and drift in both, and what changed (broke, fixed, changed, added, removed).
    /// Scenario ids and cases match without regard to letter case. Exits 1 when a case that
    /// passed in OLD does not pass in NEW, when a case only NEW has does not pass, when a case
    /// of OLD is missing from NEW (unless `--allow-removed`), when NEW has no result rows at
    /// all, and when NEW repeats a result row (no single run wrote it).
    #[arg(long, num_args = 2, value_names = ["OLD.json", "NEW.json"], required = true)]
    pub compare: Vec<Utf8PathBuf>,
    /// Also write the comparison as one self-contained HTML page: a matrix of cases × the two
    /// runs, filterable to what changed.
    #[arg(long, value_name = "FILE")]
    pub html: Option<Utf8PathBuf>,
    /// Also write the comparison as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<Utf8PathBuf>,
    /// Cases of OLD missing from NEW were removed on purpose: they do not fail the comparison.
    #[arg(long)]
    pub allow_removed: bool,
}
