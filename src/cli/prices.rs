//! `prices.toml`: what model requests cost, for `max-cost`, `[budget] cost` and the reports'
//! cost totals. At the project's root (beside `tracereplay.toml`, else in the working
//! directory), or named with `--prices FILE`:
//!
//! ```toml
//! [models."gpt-4.1"]            # a model id, or a glob: [models."claude-sonnet-4*"]
//! input = 2.00                  # US dollars per million input tokens
//! output = 8.00                 # … per million output tokens
//! cached-input = 0.50           # … per million cache-read input tokens (optional)
//! ```

use anyhow::{Context, bail};
use camino::Utf8Path;

use tracereplay_core::prices::{Price, PriceTable};

/// The file's name at the project's root.
pub(super) const FILE_NAME: &str = "prices.toml";

fn amount(file: &Utf8Path, model: &str, key: &str, v: &toml::Value) -> anyhow::Result<f64> {
    let n = match v {
        toml::Value::Float(f) => *f,
        toml::Value::Integer(i) => *i as f64,
        _ => bail!(
            "`{file}`: `models.\"{model}\".{key}` must be a number of US dollars per million tokens"
        ),
    };
    if !(n >= 0.0 && n.is_finite()) {
        bail!("`{file}`: `models.\"{model}\".{key}` must not be negative");
    }
    Ok(n)
}

/// Reads a price table, with the BLAKE3 hash of its bytes (`blake3:…`).
pub(super) fn read(file: &Utf8Path) -> anyhow::Result<(PriceTable, String)> {
    let bytes = tracereplay_trace::fsutil::read_regular(file, 1 << 20, "price table")
        .with_context(|| format!("cannot read `{file}`"))?;
    let hash = format!("blake3:{}", blake3::hash(&bytes).to_hex());
    let text = String::from_utf8(bytes).with_context(|| format!("`{file}` is not UTF-8"))?;
    Ok((parse(file, &text)?, hash))
}

/// Parses a price table's text (`file` names it in errors).
pub(super) fn parse(file: &Utf8Path, text: &str) -> anyhow::Result<PriceTable> {
    let table: toml::Table = toml::from_str(text).map_err(|e| anyhow::anyhow!("`{file}`: {e}"))?;
    let mut entries = Vec::new();
    for (k, v) in &table {
        if k != "models" {
            bail!("`{file}`: unknown key `{k}` (known: models)");
        }
        let models = v
            .as_table()
            .with_context(|| format!("`{file}`: `models` must be a table of models"))?;
        for (model, p) in models {
            let t = p.as_table().with_context(|| {
                format!("`{file}`: `models.\"{model}\"` must be a table with `input` and `output`")
            })?;
            let (mut input, mut output, mut cached_input) = (None, None, None);
            for (key, v) in t {
                let slot = match key.as_str() {
                    "input" => &mut input,
                    "output" => &mut output,
                    "cached-input" => &mut cached_input,
                    other => {
                        let hint = tracereplay_core::oracle::registry::closest(
                            other,
                            ["input", "output", "cached-input"],
                        )
                        .map(|k| format!("; did you mean `{k}`?"))
                        .unwrap_or_default();
                        bail!(
                            "`{file}`: unknown key `models.\"{model}\".{other}`{hint} (known: input, output, cached-input)"
                        )
                    }
                };
                *slot = Some(amount(file, model, key, v)?);
            }
            let need = |v: Option<f64>, key: &str| {
                v.with_context(|| format!("`{file}`: `models.\"{model}\"` has no `{key}` price"))
            };
            entries.push((
                model.clone(),
                Price {
                    input: need(input, "input")?,
                    output: need(output, "output")?,
                    cached_input,
                },
            ));
        }
    }
    PriceTable::new(entries).map_err(|e| anyhow::anyhow!("`{file}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        format!(
            "{:#}",
            parse(Utf8Path::new("prices.toml"), text).unwrap_err()
        )
    }

    #[test]
    fn reads_models_and_globs() {
        let t = parse(
            Utf8Path::new("p.toml"),
            "[models.\"gpt-4.1\"]\ninput = 2\noutput = 8.0\ncached-input = 0.5\n[models.\"claude-*\"]\ninput = 3\noutput = 15\n",
        )
        .unwrap();
        let (_, p) = t.price_of("gpt-4.1").unwrap();
        assert_eq!((p.input, p.output, p.cached_input), (2.0, 8.0, Some(0.5)));
        assert_eq!(t.price_of("claude-sonnet-4-5").unwrap().0, "claude-*");
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(err("[models.m]\ninput = 1\n").contains("`models.\"m\"` has no `output` price"));
        assert!(
            err("[models.m]\ninput = 1\noutput = 1\ncached_input = 1\n")
                .contains("did you mean `cached-input`?")
        );
        assert!(err("[models.m]\ninput = -1\noutput = 1\n").contains("must not be negative"));
        assert!(err("[models.m]\ninput = \"2\"\noutput = 1\n").contains("must be a number"));
        assert!(err("[model.m]\ninput = 1\n").contains("unknown key `model`"));
        assert!(
            err("[models.M]\ninput = 1\noutput = 1\n[models.m]\ninput = 1\noutput = 1\n")
                .contains("priced twice")
        );
        assert!(err("[models\n").starts_with("`prices.toml`: "));
    }
}
