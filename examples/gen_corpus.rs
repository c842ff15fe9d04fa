//! Writes the benchmark corpora: `cargo run --release --example gen_corpus -- small|large DIR
//! [TRACES]`. `TRACES` scales a corpus (same trace shape, a scenario per 100 traces as in the
//! small corpus), to see how memory grows with the suite. Deterministic: the same command always
//! writes the same decompressed bytes.

#[path = "../benches/corpus.rs"]
mod corpus;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kind), Some(dir)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: gen_corpus small|large DIR [TRACES]");
        std::process::exit(2);
    };
    let mut spec = match kind.as_str() {
        "small" => corpus::SMALL,
        "large" => corpus::LARGE,
        other => {
            eprintln!("unknown corpus `{other}`: small or large");
            std::process::exit(2);
        }
    };
    if let Some(n) = args.get(3) {
        let Ok(traces) = n.parse::<usize>() else {
            eprintln!("TRACES must be a number, got `{n}`");
            std::process::exit(2);
        };
        spec.scenarios = (spec.scenarios * traces / spec.traces).max(1);
        spec.traces = traces;
    }
    corpus::write(std::path::Path::new(dir), &spec)?;
    eprintln!(
        "wrote {} traces over {} scenarios to {dir}",
        spec.traces, spec.scenarios
    );
    Ok(())
}
