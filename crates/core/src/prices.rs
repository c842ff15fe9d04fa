//! What model requests cost: a price table (US dollars per million tokens, by model id or glob)
//! that turns a trace's recorded token usage into dollars, for `max-cost`, suite budgets and the
//! reports' totals.
//!
//! No prices are built in: they change, and a wrong built-in price would be a silent wrong
//! verdict. A cost a trace records itself (`usage.cost_usd`) is kept; only inferences without one
//! are priced, by the inference's `model`, else the header's. The table is read from
//! `prices.toml` by the command line; the library takes it ready-made ([`PriceTable::new`]).

use crate::trace::{EventBody, Trace, Usage};

/// The price of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Input (prompt) tokens.
    pub input: f64,
    /// Output (completion) tokens, reasoning included.
    pub output: f64,
    /// Input tokens read from the provider's prompt cache (`cache_read_tokens`); without it
    /// they cost as other input.
    pub cached_input: Option<f64>,
}

impl Price {
    /// The cost of `usage` at this price, in US dollars. Cache reads are part of
    /// `input_tokens` (at most all of them: more cache reads than input tokens is a usage that
    /// does not add up, which [`Price::inconsistent`] tells).
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per_token = |dollars_per_million: f64, tokens: u64| {
            tokens as f64 * dollars_per_million / 1_000_000.0
        };
        let (cached, cached_price) = match (self.cached_input, usage.cache_read_tokens) {
            (Some(p), Some(c)) => (c.min(usage.input_tokens), p),
            _ => (0, 0.0),
        };
        per_token(self.input, usage.input_tokens - cached)
            + per_token(cached_price, cached)
            + per_token(self.output, usage.output_tokens)
    }

    /// Why `usage` cannot be priced as recorded, when it cannot: more cache reads than input
    /// tokens (cache reads are counted in the input; the surplus is priced as nothing).
    pub fn inconsistent(usage: &Usage) -> Option<String> {
        let reads = usage.cache_read_tokens?;
        (reads > usage.input_tokens).then(|| {
            format!(
                "`cache_read_tokens` {reads} is more than `input_tokens` {} (cache reads are part of the input): priced as {} cached input tokens",
                usage.input_tokens, usage.input_tokens
            )
        })
    }
}

/// Why a price table is not usable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PriceError {
    /// A model key is empty.
    #[error("a model id or glob is empty")]
    EmptyModel,
    /// Two keys name the same model (ids compare ignoring ASCII case).
    #[error("`{0}` is priced twice")]
    Duplicate(String),
    /// A price is negative or not a number.
    #[error("`{model}`: `{field}` must be a non-negative number of US dollars per million tokens")]
    BadPrice {
        /// The model key.
        model: String,
        /// `input`, `output` or `cached-input`.
        field: &'static str,
    },
}

/// Prices by model id or glob (`*`, `?`, `[…]`; whole id, ASCII case ignored).
///
/// A model takes the price of the key equal to its id; else of the matching glob with the most
/// characters that are not wildcards, ties going to the glob that sorts first. So
/// `gpt-4.1-mini` beats `gpt-4.1*` beats `gpt-*` for `gpt-4.1-mini`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriceTable {
    /// By key, sorted (ASCII lowercase).
    entries: Vec<(String, Price)>,
}

fn is_glob(key: &str) -> bool {
    key.contains(['*', '?', '['])
}

/// How specific a glob is: its characters that are not wildcards.
fn literal_len(key: &str) -> usize {
    key.chars().filter(|c| !matches!(c, '*' | '?')).count()
}

impl PriceTable {
    /// A table of `(model id or glob, price)`.
    pub fn new(entries: impl IntoIterator<Item = (String, Price)>) -> Result<Self, PriceError> {
        let mut out: Vec<(String, Price)> = Vec::new();
        for (model, price) in entries {
            let key = model.trim().to_ascii_lowercase();
            if key.is_empty() {
                return Err(PriceError::EmptyModel);
            }
            let fields = [
                ("input", Some(price.input)),
                ("output", Some(price.output)),
                ("cached-input", price.cached_input),
            ];
            for (field, value) in fields {
                if value.is_some_and(|v| !(v >= 0.0 && v.is_finite())) {
                    return Err(PriceError::BadPrice { model, field });
                }
            }
            if out.iter().any(|(k, _)| *k == key) {
                return Err(PriceError::Duplicate(model));
            }
            out.push((key, price));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(PriceTable { entries: out })
    }

    /// Whether the table prices nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key and price `model` takes, if any.
    pub fn price_of(&self, model: &str) -> Option<(&str, &Price)> {
        let id = model.trim().to_ascii_lowercase();
        if let Some((k, p)) = self.entries.iter().find(|(k, _)| *k == id) {
            return Some((k, p));
        }
        (self.entries.iter())
            .filter(|(k, _)| is_glob(k) && crate::oracle::names::glob_match(k, &id))
            // Most specific first; `min_by_key` keeps the first (sorted) of equals.
            .min_by_key(|(k, _)| std::cmp::Reverse(literal_len(k)))
            .map(|(k, p)| (k.as_str(), p))
    }

    /// The models of `trace`'s inferences that record usage and no cost and that this table
    /// cannot price — by the model [`PriceTable::apply`] would price them by (the inference's
    /// own, else the header's; `(no model)` when neither names one) — each once, with the line
    /// of its first such inference.
    pub fn unpriced(&self, trace: &Trace<'_>) -> Vec<(String, usize)> {
        let header_model = trace.header.model.as_deref();
        let mut out: Vec<(String, usize)> = Vec::new();
        for e in &trace.events {
            let EventBody::Inference(i) = &e.body else {
                continue;
            };
            if i.usage.is_none_or(|u| u.cost_usd.is_some()) {
                continue;
            }
            let model = i.model.as_deref().or(header_model);
            let model = model.map_or_else(|| "(no model)".to_owned(), str::to_owned);
            if self.price_of(&model).is_none() && !out.iter().any(|(m, _)| *m == model) {
                out.push((model, e.line));
            }
        }
        out
    }

    /// Fills in `cost_usd` (marked `priced`) on every inference of `trace` that records usage
    /// but no cost and whose model (its own, else the header's) the table prices. Returns how
    /// many it priced.
    pub fn apply(&self, trace: &mut Trace<'_>) -> usize {
        if self.entries.is_empty() {
            return 0;
        }
        let header_model = trace.header.model.as_deref().map(str::to_owned);
        let mut priced = 0;
        for e in &mut trace.events {
            let EventBody::Inference(i) = &mut e.body else {
                continue;
            };
            let model = i.model.as_deref().or(header_model.as_deref());
            let (Some(usage), Some(model)) = (i.usage.as_mut(), model) else {
                continue;
            };
            if usage.cost_usd.is_some() {
                continue;
            }
            if let Some((_, price)) = self.price_of(model) {
                usage.cost_usd = Some(price.cost(usage));
                usage.priced = true;
                priced += 1;
            }
        }
        priced
    }

    /// The table as stable text (what the result cache's context holds of it).
    pub fn fingerprint(&self) -> String {
        let mut out = String::new();
        for (k, p) in &self.entries {
            out.push_str(&format!(
                "{k}={:?}/{:?}/{:?};",
                p.input, p.output, p.cached_input
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cached_input: None,
        }
    }

    fn usage(input: u64, output: u64, cached: Option<u64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: cached,
            ..Usage::default()
        }
    }

    #[test]
    fn cost_splits_cache_reads_only_when_priced() {
        let p = price(2.0, 8.0);
        // tau2-bench's own figure for a gpt-4.1 message: 450 in, 51 out → $0.001308.
        assert!((p.cost(&usage(450, 51, None)) - 0.001308).abs() < 1e-12);
        assert!((p.cost(&usage(450, 51, Some(400))) - 0.001308).abs() < 1e-12);
        let cached = Price {
            cached_input: Some(0.5),
            ..p
        };
        // 3346 in of which 3200 cached, 57 out → 146·2 + 3200·0.5 + 57·8 = 2348 µ$.
        assert!((cached.cost(&usage(3346, 57, Some(3200))) - 0.002348).abs() < 1e-12);
        // A cache count above the input count is held to it.
        assert!((cached.cost(&usage(10, 0, Some(99))) - 0.000005).abs() < 1e-12);
    }

    #[test]
    fn exact_ids_beat_globs_and_longer_globs_beat_shorter() {
        let t = PriceTable::new([
            ("gpt-*".to_owned(), price(1.0, 1.0)),
            ("GPT-4.1*".to_owned(), price(2.0, 2.0)),
            ("gpt-4.1-mini".to_owned(), price(3.0, 3.0)),
            ("claude-?onnet-4-5".to_owned(), price(4.0, 4.0)),
        ])
        .unwrap();
        assert_eq!(t.price_of("gpt-4.1-mini").unwrap().0, "gpt-4.1-mini");
        assert_eq!(t.price_of("gpt-4.1-nano").unwrap().0, "gpt-4.1*");
        assert_eq!(t.price_of("GPT-4o").unwrap().0, "gpt-*");
        assert_eq!(
            t.price_of("claude-sonnet-4-5").unwrap().0,
            "claude-?onnet-4-5"
        );
        assert!(t.price_of("o3").is_none());
    }

    #[test]
    fn bad_tables_are_refused() {
        assert_eq!(
            PriceTable::new([("".to_owned(), price(1.0, 1.0))]),
            Err(PriceError::EmptyModel)
        );
        assert!(matches!(
            PriceTable::new([("m".to_owned(), price(-1.0, 1.0))]),
            Err(PriceError::BadPrice { field: "input", .. })
        ));
        assert!(matches!(
            PriceTable::new([("m".to_owned(), price(1.0, f64::NAN))]),
            Err(PriceError::BadPrice {
                field: "output",
                ..
            })
        ));
        assert_eq!(
            PriceTable::new([
                ("M".to_owned(), price(1.0, 1.0)),
                ("m".to_owned(), price(1.0, 1.0))
            ]),
            Err(PriceError::Duplicate("m".into()))
        );
    }

    #[test]
    fn apply_keeps_recorded_costs_and_uses_the_header_model() {
        let text = concat!(
            r#"{"kind":"header","format":"tracereplay.trace","version":1,"scenario":"s","model":"gpt-4.1"}"#,
            "\n",
            r#"{"kind":"inference","seq":1,"usage":{"input_tokens":1000000,"output_tokens":0}}"#,
            "\n",
            r#"{"kind":"inference","seq":2,"usage":{"input_tokens":5,"output_tokens":5,"cost_usd":0.5}}"#,
            "\n",
            r#"{"kind":"inference","seq":3,"model":"o3","usage":{"input_tokens":5,"output_tokens":5}}"#,
            "\n",
            r#"{"kind":"inference","seq":4}"#,
            "\n",
        );
        use crate::trace::{Limits, TraceFile, parse_trace};
        let file = TraceFile::from_bytes("t.trace.ndjson", text.as_bytes().to_vec(), false);
        let seal = file.verify_seal(false).unwrap();
        let mut trace = parse_trace(&file, &seal, Limits::default()).unwrap().trace;
        let t = PriceTable::new([("gpt-4.1".to_owned(), price(2.0, 8.0))]).unwrap();
        assert_eq!(t.apply(&mut trace), 1);
        let costs: Vec<(Option<f64>, bool)> = (trace.events.iter())
            .filter_map(|e| match &e.body {
                EventBody::Inference(i) => {
                    Some(i.usage.map_or((None, false), |u| (u.cost_usd, u.priced)))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            costs,
            [
                (Some(2.0), true),
                (Some(0.5), false),
                (None, false),
                (None, false)
            ]
        );
    }
}
