//! The plan stage: which scenarios a run covers (filters, partition share), indexed for the
//! judging workers with the problems that keep a scenario from being judged; and the
//! fingerprints that tie cached rows and partition shares to what they were judged under.

use std::collections::{HashMap, HashSet};

use camino::{Utf8Path, Utf8PathBuf};

use super::trace_keys::key_path;
use super::{Baselines, CheckError, CheckOptions, Selection, cache};
use crate::baseline::StoredCase;
use crate::discover::Discovered;
use crate::paths::display_path;
use crate::scenario::{LoadedScenarios, Scenario};

/// Scenarios by lowercased id (looked up once or twice per trace: foldhash, not SipHash; never
/// iterated into output unsorted).
pub(crate) type Entries<'s> = foldhash::HashMap<String, Entry<'s>>;

/// A scenario ready to judge, or the reasons it cannot be.
pub(crate) struct Entry<'s> {
    pub(crate) scenario: &'s Scenario,
    pub(crate) problems: Vec<String>,
    pub(crate) in_scope: bool,
    /// The scenario's file holds a secret the scan found (its rows are masked).
    pub(crate) secrets: bool,
    /// Some trace row names this scenario (set after judging, from what the judge stage saw:
    /// workers never write the plan).
    pub(crate) seen: bool,
    /// Its place among the entries, by which the judge stage reports it seen.
    pub(crate) index: usize,
    /// Loaded from the suite's roots only to resolve traces ([`Discovered::lookup_files`]):
    /// part of the run only when a trace names it.
    pub(crate) lookup: bool,
}

impl Entry<'_> {
    /// Whether the scenario belongs to this run: in scope, and not a look-up scenario no trace
    /// named.
    pub(crate) fn in_run(&self) -> bool {
        self.in_scope && (!self.lookup || self.seen)
    }
}

/// The entry of scenario `id`, matched case-insensitively (no allocation for the usual
/// lowercase ASCII id).
pub(crate) fn entry_of<'e, 's>(entries: &'e Entries<'s>, id: &str) -> Option<&'e Entry<'s>> {
    if id.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        entries.get(id)
    } else {
        entries.get(&id.to_lowercase())
    }
}

/// Marks the entries the judge stage saw a trace row of (`seen`, by entry index).
pub(crate) fn note_seen(entries: &mut Entries<'_>, seen: &[bool]) {
    for e in entries.values_mut() {
        e.seen = seen.get(e.index).copied().unwrap_or(false);
    }
}

/// Indexes the loaded scenarios: scope by the selection, problems by the quality gates and
/// duplicate ids, secrets by `secret_files` (display paths of scenario files holding one).
pub(crate) fn index_scenarios<'s>(
    scenarios: impl IntoIterator<Item = &'s Scenario>,
    selection: &Selection,
    secret_files: &HashSet<&str>,
    lookup_files: &[Utf8PathBuf],
) -> Entries<'s> {
    let mut entries: Entries<'s> = Entries::default();
    let mut duplicates: HashMap<String, Vec<String>> = HashMap::new();
    let lookup: HashSet<&Utf8PathBuf> = lookup_files.iter().collect();
    // The run's own scenarios first, so that a look-up scenario never shadows one of them.
    let (own, looked_up): (Vec<&Scenario>, Vec<&Scenario>) =
        (scenarios.into_iter()).partition(|s| !lookup.contains(&s.file));
    for s in own.into_iter().chain(looked_up) {
        let key = s.id.to_lowercase();
        let is_lookup = lookup.contains(&s.file);
        if let Some(first) = entries.get(&key) {
            if is_lookup {
                continue;
            }
            duplicates
                .entry(key)
                .or_insert_with(|| vec![display_path(&first.scenario.file)])
                .push(display_path(&s.file));
            continue;
        }
        let in_scope = (selection.scenarios.is_empty()
            || (selection.scenarios.iter()).any(|f| f.trim().to_lowercase() == key))
            && (selection.tags.is_empty() || selection.tags.iter().any(|t| s.has_tag(t)))
            && selection.partition_holds(Some(&s.id));
        let index = entries.len();
        entries.insert(
            key,
            Entry {
                scenario: s,
                problems: crate::gates::scenario_problems(s)
                    .into_iter()
                    .map(|p| format!("scenario `{}`: {p}", s.id))
                    .collect(),
                in_scope,
                secrets: secret_files.contains(display_path(&s.file).as_str()),
                seen: false,
                index,
                lookup: is_lookup,
            },
        );
    }
    for (key, files) in duplicates {
        if let Some(e) = entries.get_mut(&key) {
            e.problems.push(format!(
                "scenario id `{}` is defined more than once (in {})",
                e.scenario.id,
                files.join(", ")
            ));
        }
    }
    entries
}

/// Loaded scenarios indexed by id as a run indexes them, with the problems (quality gates,
/// duplicate ids) that keep each from being judged: what `explain` and `diff` judge a trace
/// against, so that they say of it what `check` says.
pub struct ScenarioIndex<'s> {
    entries: Entries<'s>,
    /// Where the scenarios were looked for ([`looked_in`]), ending the message of an unknown
    /// one.
    looked_in: String,
}

impl<'s> ScenarioIndex<'s> {
    /// Indexes `scenarios`; two with one id are both a problem, as in `check`.
    pub fn new(scenarios: impl IntoIterator<Item = &'s Scenario>) -> Self {
        let entries = index_scenarios(scenarios, &Selection::default(), &HashSet::new(), &[]);
        Self {
            entries,
            looked_in: String::new(),
        }
    }

    /// Names `roots` as where the scenarios were looked for (as `check` names its suite's roots).
    pub fn looked_in(mut self, roots: &[Utf8PathBuf]) -> Self {
        self.looked_in = looked_in(roots);
        self
    }

    /// The scenario of id `id` (matched case-insensitively).
    pub fn get(&self, id: &str) -> Option<&'s Scenario> {
        entry_of(&self.entries, id).map(|e| e.scenario)
    }

    /// What judging a trace naming scenario `id` finds.
    pub fn lookup(&self, id: &str) -> super::pipeline::Lookup<'_> {
        match entry_of(&self.entries, id) {
            None => super::pipeline::Lookup::Unknown,
            Some(e) => super::pipeline::Lookup::Found {
                scenario: e.scenario,
                problems: &e.problems,
            },
        }
    }

    /// Why a trace shown as `shown` naming scenario `id` could not be judged: no loaded
    /// scenario has it (with the closest id, and where they were looked for).
    pub fn unknown_message(&self, shown: &str, id: &str) -> String {
        unknown_scenario_message(shown, id, &self.entries) + &self.looked_in
    }
}

/// Where a run looked for scenarios, as the message of an unknown one ends: ` (looked in
/// `traces/`, …)`, or nothing without roots.
pub(crate) fn looked_in(roots: &[Utf8PathBuf]) -> String {
    if roots.is_empty() {
        return String::new();
    }
    let roots: Vec<String> = roots.iter().map(|r| format!("`{r}`")).collect();
    format!(" (looked in {})", roots.join(", "))
}

/// The message of a trace whose scenario no loaded file defines, with the closest id.
pub(crate) fn unknown_scenario_message(shown: &str, id: &str, entries: &Entries<'_>) -> String {
    let mut known: Vec<&str> = entries.values().map(|e| e.scenario.id.as_str()).collect();
    known.sort_unstable();
    let hint = match crate::oracle::registry::closest(id, known) {
        Some(id) => format!("did you mean `{id}`? Or give"),
        None => "give".to_owned(),
    };
    format!(
        "`{shown}` names scenario `{id}`, which no loaded scenario file defines; {hint} the directory holding its scenario file with `--scenarios DIR`"
    )
}

/// One note for the look-up scenarios the traces named: how many were found in the suite's
/// roots rather than under the checked paths, and the first few with their files.
pub(crate) fn looked_up(entries: &Entries<'_>) -> Option<String> {
    const SHOWN: usize = 3;
    let found: Vec<String> = (entries.values())
        .filter(|e| e.lookup && e.in_run())
        .map(|e| format!("`{}` ({})", e.scenario.id, display_path(&e.scenario.file)))
        .collect();
    if found.is_empty() {
        return None;
    }
    let more = match found.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(format!(
        "{} scenario(s) defined under none of the checked paths, used from the suite's roots: {}{more}",
        found.len(),
        found[..found.len().min(SHOWN)].join(", ")
    ))
}

/// An explicit filter matching no scenario is a typo, not a green run (an empty partition
/// share is fine).
pub(crate) fn check_filters(
    selection: &Selection,
    entries: &Entries<'_>,
) -> Result<(), CheckError> {
    if !selection.filtered() || entries.values().any(|e| e.in_scope) {
        return Ok(());
    }
    let mut parts: Vec<String> = (selection.scenarios.iter())
        .map(|s| format!("--scenario `{s}`"))
        .collect();
    parts.extend(selection.tags.iter().map(|t| format!("--tag `{t}`")));
    Err(CheckError::NoMatch {
        filter: parts.join(" and "),
    })
}

/// Whether a trace naming `scenario`, whose entry is `entry` (`None`: no such scenario), is
/// outside this run's filters and partition share.
pub(crate) fn out_of_scope_of(
    scenario: &str,
    entry: Option<&Entry>,
    selection: &Selection,
) -> bool {
    match entry {
        Some(e) => !e.in_scope,
        None => {
            (selection.filtered()
                && !(selection.scenarios.iter()).any(|f| f.trim().eq_ignore_ascii_case(scenario)))
                || !selection.partition_holds(Some(scenario))
        }
    }
}

/// The options that change what a row says, in words (part of the cache's context and of a
/// partitioned run's suite fingerprint). `--fail-on` and the filters are not among them: they
/// decide which rows count and exist, and cached rows serve every choice of them.
fn judging_options(opts: &CheckOptions) -> String {
    let baselines = match &opts.baselines {
        Baselines::Compared {
            policy,
            write_pending,
        } => Some((
            &policy.store.dir,
            policy.mode,
            policy.tolerance,
            policy.refresh,
            *write_pending,
        )),
        Baselines::Absent | Baselines::Missing(_) | Baselines::Ignored => None,
    };
    let mut text = format!(
        "require_sealed={} raw_prompt_opt_in={} limits={:?} secrets={:?} scripted={} baselines={:?}",
        opts.judging.require_sealed,
        opts.judging.allow_raw_prompts,
        opts.judging.limits,
        opts.counting.secrets,
        opts.selection.scripted,
        baselines,
    );
    // `--alpha` changes which set drift is reported. Named only when it is not the default, so
    // the fingerprints of runs at the default are those of versions without it.
    if let Some(p) = opts.baselines.policy() {
        if p.alpha != super::pipeline::DEFAULT_ALPHA {
            text.push_str(&format!(" alpha={}", p.alpha));
        }
    }
    // The price table sets costs the rows' oracles and totals hold.
    if let Some(prices) = &opts.judging.prices {
        text.push_str(&format!(" prices={}", prices.fingerprint()));
    }
    text
}

/// The identity of the whole suite a partitioned run was cut from: the options that change
/// judging or which rows count, every scenario id (and scenario file that failed to load), and
/// every trace file by path and content hash (`-` where its seal does not hold), whichever share
/// judged it. Shares of another commit, another suite or other flags get another fingerprint.
pub(crate) fn suite_fingerprint(
    found: &Discovered,
    loaded: &LoadedScenarios,
    identities: &[std::sync::OnceLock<String>],
    opts: &CheckOptions,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(judging_options(opts).as_bytes());
    let s = &opts.selection;
    let selection = format!(
        "fail_on={:?} scenarios={:?} tags={:?} whole_suite={}",
        opts.counting.fail_on, s.scenarios, s.tags, s.whole_suite
    );
    h.update(selection.as_bytes());
    let mut ids: Vec<String> = (loaded.scenarios.iter())
        .map(|s| s.id.to_lowercase())
        .chain((loaded.errors.iter()).map(|e| format!("!{}", display_path(e.path()))))
        .collect();
    ids.sort();
    for id in ids {
        h.update(b"\nscenario ").update(id.as_bytes());
    }
    let mut traces: Vec<(String, &str)> = (found.trace_files.iter().zip(identities))
        .map(|(p, id)| (display_path(p), id.get().map_or("-", String::as_str)))
        .collect();
    traces.sort();
    for (path, id) in traces {
        h.update(b"\ntrace ").update(path.as_bytes());
        h.update(b" ").update(id.as_bytes());
    }
    format!("b3:{}", h.finalize().to_hex())
}

/// The fingerprint of what every cached row depends on besides its trace, its scenario and its
/// approved baseline (those are in each entry's key, [`cache::ResultCache::depends`]). Also the
/// approved baselines' keys by path as shown (`None` when baselines are not compared),
/// and their record for the next run (`None` when the file's record still holds).
pub(crate) fn cache_context(
    opts: &CheckOptions,
    known: &super::cache_baselines::Known<'_>,
    approved: Option<&[StoredCase]>,
) -> (
    String,
    Option<String>,
    Option<super::cache_baselines::ByPath>,
) {
    let mut parts: Vec<std::borrow::Cow<[u8]>> = vec![judging_options(opts).into_bytes().into()];
    // Rows show paths relative to the working directory.
    parts.push(
        format!("{:?}", std::env::current_dir().ok())
            .into_bytes()
            .into(),
    );
    let mut waived: Vec<&String> = opts.counting.waived.iter().collect();
    waived.sort();
    parts.push(format!("{waived:?}").into_bytes().into());
    // The scenarios are not part of it: each entry carries the key of its own
    // ([`ScenarioKeys`]), so that a run over part of the suite, or an edit of one scenario,
    // keeps the rows of the others.
    // Approved baselines by content, read only where their stat changed since the cache
    // recorded it (pending files do not count: writing them must not invalidate the cache).
    // Not part of the context either: each row's key names the one it was compared with.
    let mut record = Some(String::new());
    let mut baselines = None;
    if let Some(approved) = approved {
        let approved: Vec<&Utf8Path> = approved.iter().map(|stored| &*stored.path).collect();
        let found = super::cache_baselines::by_content(&approved, known);
        record = found.record;
        baselines = Some(found.by_path);
    }
    let refs: Vec<&[u8]> = parts.iter().map(|p| &**p).collect();
    (cache::context_fingerprint(&refs), record, baselines)
}

/// What a cached row depends on of the scenarios, one key per entry: a row is recalled only
/// when the scenario it names is the one it was judged under. A row names its scenario by id;
/// its entry's key covers the scenario's file (path and bytes: a file may hold several
/// scenarios), its Harness Contract as loaded (or why it did not load), the problems that keep
/// it from being judged (a duplicate id names the other files) and whether its file holds a
/// secret. (Not whether it was only looked up in the suite's roots, as a run over one
/// directory looks up the others: that decides whether the scenario counts in the run, never a
/// row.) A row that names no loaded scenario depends on all of them (one may come to define
/// it): its key covers every scenario file.
#[derive(Default)]
pub(crate) struct ScenarioKeys {
    by_entry: Vec<cache::RowKey>,
    unresolved: cache::RowKey,
}

impl ScenarioKeys {
    /// The keys of `entries`, loaded from `loaded`.
    pub(crate) fn new(entries: &Entries<'_>, loaded: &LoadedScenarios) -> ScenarioKeys {
        let mut sources: Vec<&(Utf8PathBuf, Vec<u8>)> = loaded.sources.iter().collect();
        sources.sort_by(|a, b| key_path(&a.0).cmp(key_path(&b.0)));
        let bytes_of: HashMap<&Utf8PathBuf, &[u8]> =
            (sources.iter()).map(|(p, b)| (p, b.as_slice())).collect();
        let contract = |s: &Scenario| format!("{:?}", s.contract_loaded);
        let mut all = PartsHasher::new(b"unresolved");
        for (path, bytes) in &sources {
            all.part(key_path(path).as_bytes()).part(bytes);
        }
        for s in loaded.scenarios.iter().filter(|s| s.contract.is_some()) {
            all.part(contract(s).as_bytes());
        }
        let unresolved = all.key();
        let mut by_entry = vec![unresolved; entries.len()];
        for e in entries.values() {
            let s = e.scenario;
            // A scenario whose file was not read (never so for a loaded one) keys as a row
            // that names none.
            let Some(bytes) = bytes_of.get(&s.file) else {
                continue;
            };
            let mut h = PartsHasher::new(b"scenario");
            h.part(key_path(&s.file).as_bytes()).part(bytes);
            h.part(contract(s).as_bytes());
            h.part(e.problems.join("\n").as_bytes());
            h.part(&[u8::from(e.secrets)]);
            by_entry[e.index] = h.key();
        }
        ScenarioKeys {
            by_entry,
            unresolved,
        }
    }

    /// The key of the scenario a row names (its entry's index), or of none.
    pub(crate) fn of(&self, entry: Option<usize>) -> cache::RowKey {
        entry
            .and_then(|i| self.by_entry.get(i))
            .copied()
            .unwrap_or(self.unresolved)
    }
}

/// BLAKE3 over length-prefixed parts, cut to a [`cache::RowKey`].
struct PartsHasher(blake3::Hasher);

impl PartsHasher {
    fn new(domain: &[u8]) -> PartsHasher {
        let mut h = PartsHasher(blake3::Hasher::new());
        h.part(domain);
        h
    }

    fn part(&mut self, bytes: &[u8]) -> &mut PartsHasher {
        self.0.update(&(bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    fn key(&self) -> cache::RowKey {
        super::trace_keys::first_16(self.0.finalize())
    }
}
