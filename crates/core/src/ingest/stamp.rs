//! The one timestamp parser of every importer (`atif`, the OTel spans' SDK JSON, `openclaw`):
//! an instant read exactly, or refused with the reason — never shifted.
//!
//! Read: RFC 3339 and the ISO 8601 forms the formats' validators accept — extended
//! (`2026-01-01T05:30:10.5+05:30`) and basic (`20260101T053010+0530`), `T`, `t` or a space
//! between date and time, seconds optional, a fraction after `.` or `,` of any length (kept to
//! the nanosecond), `Z`/`z` or an offset `±hh:mm`, `±hhmm` or `±hh`, a leap second (`:60`, the
//! instant of the next second, as POSIX time counts it), and a date alone (`2026-01-02`: the
//! start of that day, UTC). A time without an offset is read as UTC, as the formats that write
//! such stamps mean it (OpenClaw's `timestampUtc`, a naive Python `isoformat()`).
//!
//! Refused: an impossible date (`2026-02-31`), a field out of range (hour 24, minute 60, an
//! offset of 24 hours or more), a date and time that mix the basic and extended forms, and
//! anything else.

/// An instant: Unix milliseconds, and the nanoseconds below the millisecond that the stamp gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Unix milliseconds.
    pub ms: i64,
    /// Nanoseconds below the millisecond (0 to 999,999).
    pub sub_ms_ns: u32,
}

/// Reads `text` as an instant, or says why not.
pub fn parse(text: &str) -> Result<Stamp, String> {
    let s = text.trim().as_bytes();
    let mut at = Cursor { s, i: 0 };
    let y = at.digits(4).ok_or("no four-digit year")?;
    let extended = at.eat(b'-');
    let m = at.digits(2).ok_or("no two-digit month")?;
    if extended && !at.eat(b'-') {
        return Err("no `-` before the day".into());
    }
    let d = at.digits(2).ok_or("no two-digit day")?;
    if !(1..=12).contains(&m) {
        return Err(format!("month {m} does not exist"));
    }
    if d < 1 || d > days_in_month(y, m) {
        return Err(format!("{y:04}-{m:02} has no day {d}"));
    }
    let days = days_from_civil(y, m, d);
    if at.done() {
        return Ok(Stamp {
            ms: days * 86_400_000,
            sub_ms_ns: 0,
        });
    }
    if !(at.eat(b'T') || at.eat(b't') || at.eat(b' ')) {
        return Err("no `T` between the date and the time".into());
    }
    let hh = at.digits(2).ok_or("no two-digit hour")?;
    if extended && !at.eat(b':') {
        return Err(
            "no `:` after the hour (a date in the extended form needs a time in it too)".into(),
        );
    }
    let mm = at.digits(2).ok_or("no two-digit minute")?;
    let mut ss = 0;
    let seconds_follow = match extended {
        true => at.eat(b':'),
        false => at.peek().is_some_and(|b| b.is_ascii_digit()),
    };
    if seconds_follow {
        ss = at.digits(2).ok_or("no two-digit second")?;
    }
    let mut nanos: i64 = 0;
    if seconds_follow && (at.eat(b'.') || at.eat(b',')) {
        let start = at.i;
        while at.peek().is_some_and(|b| b.is_ascii_digit()) {
            at.i += 1;
        }
        let frac = &s[start..at.i];
        if frac.is_empty() {
            return Err("no digit after the decimal sign".into());
        }
        for k in 0..9 {
            nanos = nanos * 10 + frac.get(k).map_or(0, |b| i64::from(b - b'0'));
        }
    }
    if hh > 23 || mm > 59 || ss > 60 {
        return Err(format!("{hh:02}:{mm:02}:{ss:02} is not a time of day"));
    }
    let offset_min = match at.next() {
        None => 0,
        Some(b'Z' | b'z') => 0,
        Some(sign @ (b'+' | b'-')) => {
            let oh = at.digits(2).ok_or("no two-digit offset hour")?;
            let om = match at.eat(b':') {
                true => at.digits(2).ok_or("no two-digit offset minute")?,
                false => at.digits(2).unwrap_or(0),
            };
            if oh > 23 || om > 59 {
                return Err(format!("offset {oh:02}:{om:02} is out of range"));
            }
            let sign = if sign == b'-' { -1 } else { 1 };
            sign * (oh * 60 + om)
        }
        Some(_) => return Err("an offset is `Z`, `±hh:mm`, `±hhmm` or `±hh`".into()),
    };
    if !at.done() {
        return Err("something follows the time".into());
    }
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss - offset_min * 60;
    Ok(Stamp {
        ms: secs * 1000 + nanos / 1_000_000,
        sub_ms_ns: (nanos % 1_000_000) as u32,
    })
}

/// Where the parser is in the text.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    /// Exactly `n` ASCII digits, as a number.
    fn digits(&mut self, n: usize) -> Option<i64> {
        let part = self.s.get(self.i..self.i + n)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.i += n;
        Some(part.iter().fold(0, |v, b| v * 10 + i64::from(b - b'0')))
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek();
        self.i += usize::from(b.is_some());
        b
    }

    fn done(&self) -> bool {
        self.i == self.s.len()
    }
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Howard Hinnant's days-from-civil: days since 1970-01-01.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests;
