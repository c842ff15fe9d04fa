//! Money and counts as reports and oracles write them: costs in whole nano-dollars (summed
//! exactly, in any order), dollars and thousands as text.

/// US dollars as whole nano-dollars.
pub fn nanos(usd: f64) -> u64 {
    // `as` saturates: an absurd recorded cost cannot wrap into a small one.
    (usd * 1e9).round() as u64
}

/// Whole nano-dollars as US dollars.
pub fn usd(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

/// `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `$0.001308`: dollars to the micro-dollar, trailing zeros beyond the cents dropped.
pub fn dollars(usd: f64) -> String {
    let text = format!("{usd:.6}");
    let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
    let frac = frac.trim_end_matches('0');
    let frac = if frac.len() < 2 {
        format!("{frac:0<2}")
    } else {
        frac.to_owned()
    };
    format!("${whole}.{frac}")
}
