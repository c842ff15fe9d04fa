//! `tracereplay collect`: the OTLP/HTTP receiver.

use std::io::Write;

use tracereplay::report::escape_controls;
use tracereplay_net::collect;
use tracereplay_trace::privacy::raw_prompts_opted_in;

use super::args::CollectArgs;
use super::exit;

/// Runs `collect` until SIGINT, SIGTERM or SIGHUP; `Err` means exit 2; 1 when a run could not
/// be written or a request was refused for any reason but back-pressure (503).
pub(super) fn run(args: &CollectArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    super::options::check_listen(
        args.server.listen,
        args.server.allow_remote,
        "can write traces",
    )?;
    let hasher = super::options::prompt_hasher("collect", args.prompts.unkeyed)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", args.out))?;
    let options = collect::CollectOptions {
        out: args.out.clone(),
        ingest: tracereplay_core::ingest::IngestOptions {
            hasher,
            raw_opt_in: raw_prompts_opted_in(args.prompts.dev_raw_prompts),
            scenario: args.scenario.clone(),
            case: None,
            name: None,
            file_stem: None,
            allow_empty: false,
        },
        idle: args.idle,
        settle: args.settle,
        max_open_runs: args.max_open_runs.max(1),
        max_buffered: args.max_buffered_mb.max(1) << 20,
        // As the OpenTelemetry Collector's OTLP/HTTP receiver takes them by default.
        body_limit: 20 << 20,
        limits: args.limits.limits(),
        waived: std::sync::Arc::new(super::options::waived()),
    };
    let receiving = collect::spawn(args.server.listen, options)?;
    writeln!(out, "listening on http://{}", receiving.addr)?;
    out.flush()?;
    let mut told = Told::default();
    // What is open and what was written: a status line on a terminal; in logs, a line as each
    // run opens.
    let status = super::status::StatusLine::new();
    receiving.wait(|heard| {
        if let collect::Heard::Opened(id) = heard {
            told.open += 1;
            if !status.on_terminal() {
                diag!("receiving run {}", escape_controls(id));
            }
        } else {
            status.above(|| told.hear(heard, out));
        }
        status.set(format!(
            "collecting: {} run(s) open, {} written, {} request(s) refused",
            told.open.saturating_sub(told.written + told.unwritten),
            told.written,
            told.refused.iter().map(|(_, n)| n).sum::<usize>()
        ));
    });
    drop(status);
    told.summary();
    Ok(if told.failed() {
        exit::FAILURE
    } else {
        exit::OK
    })
}

/// What the receiver told, counted for its summary.
#[derive(Default)]
struct Told {
    written: usize,
    /// Runs that could not be written.
    unwritten: usize,
    /// Refused requests by (status, reason), in the order first heard.
    refused: Vec<((u16, String), usize)>,
    /// Spans and log records of runs already written, not kept.
    late: usize,
    /// Runs opened so far.
    open: usize,
}

impl Told {
    /// Says what was heard: a line on stdout per run written; on stderr, a line per run not
    /// written and per refused request, a reason heard before counted but not said again.
    fn hear(&mut self, heard: &collect::Heard, out: &mut dyn Write) {
        match heard {
            collect::Heard::Run(c) => match &c.outcome {
                Ok(path) => {
                    self.written += 1;
                    let _ = writeln!(
                        out,
                        "collected {} -> {}",
                        escape_controls(&c.run),
                        escape_controls(path)
                    );
                    let _ = out.flush();
                }
                Err(why) => {
                    self.unwritten += 1;
                    diag!(
                        "error: {}: {}",
                        escape_controls(&c.run),
                        escape_controls(why)
                    );
                }
            },
            collect::Heard::Late(n) => {
                if self.late == 0 {
                    diag!(
                        "warning: {n} span(s) or record(s) arrived for runs already written, and were not kept: raise --settle (or --idle) to wait longer for late spans"
                    );
                }
                self.late += n;
            }
            collect::Heard::Opened(_) => {}
            collect::Heard::Refused(r) => {
                let key = (r.status, r.reason.clone());
                match self.refused.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, n)) => *n += 1,
                    None => {
                        self.refused.push((key, 1));
                        let more = match r.retryable() {
                            true => "",
                            false => " (the exporter drops what it sent)",
                        };
                        diag!(
                            "refused a request: {} {}{more}",
                            r.status,
                            escape_controls(&r.message)
                        );
                    }
                }
            }
        }
    }

    /// The summary said at the stop: runs written, runs not written, requests refused by
    /// reason.
    fn summary(&self) {
        let refused: usize = self.refused.iter().map(|(_, n)| n).sum();
        let mut line = format!(
            "collect: {} run(s) written, {} request(s) refused",
            self.written, refused
        );
        if self.unwritten > 0 {
            line = format!(
                "collect: {} run(s) written, {} not written, {} request(s) refused",
                self.written, self.unwritten, refused
            );
        }
        let reasons: Vec<String> = (self.refused.iter())
            .map(|((status, reason), n)| format!("{n} × {status} {}", escape_controls(reason)))
            .collect();
        if !reasons.is_empty() {
            line.push_str(": ");
            line.push_str(&reasons.join("; "));
        }
        if self.late > 0 {
            line.push_str(&format!(
                "; {} late span(s) or record(s) not kept",
                self.late
            ));
        }
        diag!("{line}");
    }

    /// Whether the receiver lost anything: a run not written, late spans not kept, or a request
    /// refused for any reason but back-pressure (which the exporter retries).
    fn failed(&self) -> bool {
        self.unwritten > 0
            || self.late > 0
            || self.refused.iter().any(|((status, _), _)| *status != 503)
    }
}
