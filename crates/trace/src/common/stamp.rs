//! Time stamps of reports and run folders: a leaf that the HTML page and the run folder both
//! read, so neither imports the other for it.

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) for Unix seconds.
pub fn rfc3339(secs: u64) -> String {
    let s = utc_stamp(secs);
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &s[0..4],
        &s[4..6],
        &s[6..8],
        &s[9..11],
        &s[11..13],
        &s[13..15]
    )
}

/// `YYYYMMDDTHHMMSSZ` for Unix seconds (UTC, proleptic Gregorian).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (RFC 3339, UTC) for Unix milliseconds (times before 1970 as
/// 1970), with `sub_ns` nanoseconds past the millisecond written as further digits of the
/// fraction (trailing zeros left out): `…08.280365Z` for 280 ms and 365,000 ns.
pub fn rfc3339_sub_ms(ms: i64, sub_ns: u32) -> String {
    let ms = ms.max(0) as u64;
    let whole = rfc3339(ms / 1000);
    let mut frac = format!("{:03}", ms % 1000);
    if sub_ns > 0 {
        frac.push_str(format!("{:06}", sub_ns.min(999_999)).trim_end_matches('0'));
    }
    format!("{}.{frac}Z", whole.trim_end_matches('Z'))
}
