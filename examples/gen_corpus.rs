//! Writes the benchmark corpora: `cargo run --release --example gen_corpus -- small|large DIR`.
//! Deterministic: the same command always writes the same decompressed bytes.

#[path = "../benches/corpus.rs"]
mod corpus;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kind), Some(dir)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: gen_corpus small|large DIR");
        std::process::exit(2);
    };
    let spec = match kind.as_str() {
        "small" => corpus::SMALL,
        "large" => corpus::LARGE,
        other => {
            eprintln!("unknown corpus `{other}`: small or large");
            std::process::exit(2);
        }
    };
    corpus::write(std::path::Path::new(dir), &spec)?;
    eprintln!(
        "wrote {} traces over {} scenarios to {dir}",
        spec.traces, spec.scenarios
    );
    Ok(())
}
