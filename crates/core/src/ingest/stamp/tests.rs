//! The timestamp parser against a table of forms: each valid one with its instant (computed
//! independently, with Python's `datetime`), each invalid one refused.

use super::*;

/// (stamp, Unix milliseconds, nanoseconds below the millisecond).
const READ: &[(&str, i64, u32)] = &[
    // Offsets with and without a colon, and hours alone: never read as hours × 100.
    ("2026-01-01T05:30:10+05:30", 1767225610000, 0),
    ("2026-01-01T05:30:10+0530", 1767225610000, 0),
    ("2026-01-01T05:30:10+05", 1767227410000, 0),
    ("2025-12-31T16:00:00-0800", 1767225600000, 0),
    ("2025-12-31T16:00:00-08:00", 1767225600000, 0),
    ("2026-06-15T00:00:00+23:59", 1781395260000, 0),
    ("2026-06-15T12:34:56-00:00", 1781526896000, 0),
    // Date alone: the start of the day, UTC.
    ("2026-01-02", 1767312000000, 0),
    ("20260615", 1781481600000, 0),
    // Basic form.
    ("20260101T000100Z", 1767225660000, 0),
    ("20260615T1234Z", 1781526840000, 0),
    ("20260615T123456.789-0230", 1781535896789, 0),
    // Fractions: comma or dot, any length, kept to the nanosecond.
    ("2026-01-01T00:00:01,5Z", 1767225601500, 0),
    ("2026-11-29T12:00:00.5Z", 1795953600500, 0),
    ("2025-11-29T14:00:00.250+02:00", 1764417600250, 0),
    ("2026-03-08T08:23:08.280365+00:00", 1772958188280, 365000),
    ("2026-01-01T00:00:00.123456789Z", 1767225600123, 456789),
    ("2026-01-01T00:00:00.1234567891234Z", 1767225600123, 456789),
    // Epochs, leap days, a leap second, the ends of the range.
    ("1970-01-01T00:00:00Z", 0, 0),
    ("1969-12-31T23:59:59Z", -1000, 0),
    ("2024-02-29T12:00:00Z", 1709208000000, 0),
    ("2000-02-29T00:00:00Z", 951782400000, 0),
    ("2016-12-31T23:59:60Z", 1483228800000, 0),
    ("9999-12-31T23:59:59Z", 253402300799000, 0),
    ("0001-01-01T00:00:00Z", -62135596800000, 0),
    // Seconds optional; `t`, `z` and a space allowed; no offset is UTC.
    ("2026-06-15T12:34Z", 1781526840000, 0),
    ("2026-06-15 12:34:56Z", 1781526896000, 0),
    ("2026-06-15t12:34:56z", 1781526896000, 0),
    ("2026-06-15T12:34:56", 1781526896000, 0),
    ("  2026-06-15T12:34:56Z\n", 1781526896000, 0),
];

/// Stamps refused: impossible dates, fields out of range, mixed forms, garbage.
const REFUSED: &[&str] = &[
    "2026-02-31T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "1900-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-01-00T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T23:60:00Z",
    "2026-01-01T23:59:61Z",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+05:60",
    "2026-01-01T00:00:00+5",
    "2026-01-01T00:00:00.Z",
    "2026-01-01T00:00:00ZZ",
    "2026-01-01T00:00:00 Z",
    "2026-1-1T00:00:00Z",
    "2026-01-01T0:00:00Z",
    "20260101T00:00:00Z",
    "2026-01-01T000000Z",
    "2026-01-01X00:00:00Z",
    "+2026-01-01T00:00:00Z",
    "2026-11-29T12:00:01.25Ъ",
    "2026-11-29T12:00:01.2x5Z",
    "yesterday",
    "",
    "1767225600",
];

#[test]
fn every_valid_form_is_read_as_its_instant() {
    for &(text, ms, sub_ms_ns) in READ {
        assert_eq!(parse(text), Ok(Stamp { ms, sub_ms_ns }), "{text:?}");
    }
}

#[test]
fn every_invalid_form_is_refused_with_a_reason() {
    for text in REFUSED {
        let why = parse(text).expect_err(text);
        assert!(!why.is_empty(), "{text:?}");
    }
    assert!(READ.len() + REFUSED.len() >= 40);
}

#[test]
fn a_stamp_is_read_back_as_written_to_the_millisecond() {
    // What the exporters write (`rfc3339_sub_ms`) reads back to the same instant.
    for ms in [0, 1, 999, 1_767_225_600_123, 253_402_300_799_000] {
        let written = crate::common::stamp::rfc3339_sub_ms(ms, 0);
        assert_eq!(parse(&written).map(|s| s.ms), Ok(ms), "{written}");
    }
}

#[test]
fn a_stamp_finer_than_a_millisecond_is_read_back_to_the_nanosecond() {
    // What the ATIF exporter writes from `ts_ms` and `ts_sub_ns` reads back to the same instant.
    for (ms, ns, want) in [
        (1_767_225_668_280, 365_000, "2026-01-01T00:01:08.280365Z"),
        (1_767_225_668_000, 1, "2026-01-01T00:01:08.000000001Z"),
        (1_767_225_668_999, 999_999, "2026-01-01T00:01:08.999999999Z"),
        (1_767_225_668_500, 0, "2026-01-01T00:01:08.500Z"),
    ] {
        let written = crate::common::stamp::rfc3339_sub_ms(ms, ns);
        assert_eq!(written, want);
        assert_eq!(
            parse(&written),
            Ok(Stamp { ms, sub_ms_ns: ns }),
            "{written}"
        );
    }
}
