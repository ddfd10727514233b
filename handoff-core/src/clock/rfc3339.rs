//! Times in JSON: `2026-01-01T00:00:00.123456Z`, RFC 3339 in UTC with the fraction always in six
//! digits (nine for a time finer than a microsecond, which no clock or store of ours makes), so
//! that times of the same kind sort as text in time order. chrono's own serde writes 0, 3, 6 or
//! 9 digits as needed, and `…20.294Z` then sorts after `…20.294146Z`. Reading accepts any RFC 3339
//! time chrono's serde accepts (another offset, any number of digits), so older documents read
//! as before. Written and read here without chrono's general formatter and parser: every record,
//! message and task document carries several times, and those two were about a tenth of the
//! work of a protocol call.
//!
//! Use with `#[serde(with = "crate::clock::rfc3339")]` (or `rfc3339::option` for an
//! `Option`), beside `#[schemars(with = "DateTime<Utc>")]` for the JSON Schema.

use std::fmt;

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Timelike, Utc};
use serde::{Deserializer, Serialize, Serializer, de};

thread_local! {
    /// Set while [`as_before`] runs: times are written as chrono's serde writes them.
    static AS_BEFORE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with times written as they were before the fixed width (chrono's serde: 0, 3, 6 or
/// 9 digits, as needed), for checking a hash taken over JSON written then: a bundle sealed by
/// an earlier version must still verify.
pub(crate) fn as_before<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            AS_BEFORE.with(|flag| flag.set(self.0));
        }
    }
    let _reset = Reset(AS_BEFORE.with(|flag| flag.replace(true)));
    f()
}

/// The longest text [`write`] makes: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
const LONGEST: usize = 30;

/// ASCII text built in place.
struct Text {
    bytes: [u8; LONGEST],
    len: usize,
}

impl Text {
    fn byte(&mut self, b: u8) {
        self.bytes[self.len] = b;
        self.len += 1;
    }

    /// `value` in exactly `width` decimal digits.
    fn digits(&mut self, value: u32, width: u32) {
        for place in (0..width).rev() {
            self.byte(b'0' + (value / 10u32.pow(place) % 10) as u8);
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

/// `at` in the shape above, or `None` when it is outside chrono's common shape (a year past
/// 9999, a leap second).
fn write(at: &DateTime<Utc>) -> Option<Text> {
    let year = at.year();
    let nano = at.nanosecond();
    if !(0..=9999).contains(&year) || nano >= 1_000_000_000 {
        return None;
    }
    let mut text = Text {
        bytes: [0; LONGEST],
        len: 0,
    };
    text.digits(year as u32, 4);
    let fields = [
        (b'-', at.month()),
        (b'-', at.day()),
        (b'T', at.hour()),
        (b':', at.minute()),
        (b':', at.second()),
    ];
    for (separator, value) in fields {
        text.byte(separator);
        text.digits(value, 2);
    }
    let (fraction, width) = match nano {
        0 if AS_BEFORE.with(|flag| flag.get()) => (0, 0),
        n if n % 1_000_000 == 0 && AS_BEFORE.with(|flag| flag.get()) => (n / 1_000_000, 3),
        n if n % 1_000 == 0 => (n / 1_000, 6),
        n => (n, 9),
    };
    if width > 0 {
        text.byte(b'.');
        text.digits(fraction, width);
    }
    text.byte(b'Z');
    Some(text)
}

/// Reads the common shape `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`; `None` for anything else.
fn read(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    if b.len() < 20 || b.len() > LONGEST || b[b.len() - 1] != b'Z' {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(at, c)| b[at] != c) {
        return None;
    }
    let nano = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', digits @ ..] if !digits.is_empty() => {
            // At most 9 digits: the length check above allows no more.
            number(20, 20 + digits.len())? * 10u32.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(number(0, 4)? as i32, number(5, 7)?, number(8, 10)?)?;
    // A leap second (`:60`) is chrono's to read.
    let time = date.and_hms_nano_opt(number(11, 13)?, number(14, 16)?, number(17, 19)?, nano)?;
    Some(time.and_utc())
}

/// `at` as text, in the shape above (what [`serialize`] writes).
pub(crate) fn text(at: &DateTime<Utc>) -> String {
    match write(at) {
        Some(text) => text.as_str().to_owned(),
        None => at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
    }
}

/// Writes a time in the shape above.
pub(crate) fn serialize<S: Serializer>(
    at: &DateTime<Utc>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match write(at) {
        Some(text) => serializer.serialize_str(text.as_str()),
        None => at.serialize(serializer),
    }
}

/// Reads a time as chrono's serde does.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<DateTime<Utc>, D::Error> {
    deserializer.deserialize_str(TimeVisitor)
}

struct TimeVisitor;

impl de::Visitor<'_> for TimeVisitor {
    type Value = DateTime<Utc>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an RFC 3339 formatted date and time string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        match read(text) {
            Some(at) => Ok(at),
            None => text
                .parse::<DateTime<FixedOffset>>()
                .map(|at| at.with_timezone(&Utc))
                .map_err(E::custom),
        }
    }
}

/// The same for an `Option` (`null` when absent).
pub(crate) mod option {
    use super::*;

    /// Writes a time that may be absent.
    pub(crate) fn serialize<S: Serializer>(
        at: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => serializer.serialize_some(&Time(at)),
            None => serializer.serialize_none(),
        }
    }

    /// Reads a time that may be `null`.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        deserializer.deserialize_option(MaybeTime)
    }

    struct Time<'a>(&'a DateTime<Utc>);

    impl Serialize for Time<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            super::serialize(self.0, serializer)
        }
    }

    struct MaybeTime;

    impl<'de> de::Visitor<'de> for MaybeTime {
        type Value = Option<DateTime<Utc>>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an RFC 3339 formatted date and time string or null")
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Self::Value, D::Error> {
            super::deserialize(deserializer).map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Reads what chrono's own serde reads; writes six digits of fraction (nine when finer).
    #[test]
    fn reads_what_chrono_does_and_writes_a_fixed_width() {
        let times = [
            ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000Z"),
            ("2026-11-27T17:03:55.123Z", "2026-11-27T17:03:55.123000Z"),
            ("2026-11-27T17:03:55.123456Z", "2026-11-27T17:03:55.123456Z"),
            (
                "2026-11-27T17:03:55.123456789Z",
                "2026-11-27T17:03:55.123456789Z",
            ),
            ("2026-11-27T17:03:55.000001Z", "2026-11-27T17:03:55.000001Z"),
            ("0000-01-01T00:00:00Z", "0000-01-01T00:00:00.000000Z"),
            (
                "9999-12-31T23:59:59.999999999Z",
                "9999-12-31T23:59:59.999999999Z",
            ),
            ("2024-02-29T12:00:00.5Z", "2024-02-29T12:00:00.500000Z"),
            ("2026-11-27T17:03:55+02:00", "2026-11-27T15:03:55.000000Z"),
            ("2026-11-27t17:03:55z", "2026-11-27T17:03:55.000000Z"),
            ("2026-11-27 17:03:55Z", "2026-11-27T17:03:55.000000Z"),
            ("+10000-01-01T00:00:00Z", "+10000-01-01T00:00:00Z"),
            ("2016-12-31T23:59:60Z", "2016-12-31T23:59:60Z"),
        ];
        for (text, written) in times {
            let json = serde_json::to_string(text).unwrap();
            let ours = deserialize(&mut serde_json::Deserializer::from_str(&json)).unwrap();
            let theirs: DateTime<Utc> = serde_json::from_str(&json).unwrap();
            assert_eq!(ours, theirs, "{text}");
            let mut out = Vec::new();
            serialize(&ours, &mut serde_json::Serializer::new(&mut out)).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), format!("\"{written}\""));
            assert_eq!(super::text(&ours), written);
        }
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-11-27T24:00:00Z",
            "yesterday",
            "",
        ] {
            let json = serde_json::to_string(bad).unwrap();
            let ours = deserialize(&mut serde_json::Deserializer::from_str(&json));
            let theirs = serde_json::from_str::<DateTime<Utc>>(&json);
            assert_eq!(ours.is_err(), theirs.is_err(), "{bad}");
        }
    }

    #[test]
    fn as_before_writes_what_chrono_does() {
        for text in [
            "2026-01-01T00:00:00Z",
            "2026-11-27T17:03:55.123Z",
            "2026-11-27T17:03:55.123456Z",
            "2026-11-27T17:03:55.123456789Z",
        ] {
            let at: DateTime<Utc> = serde_json::from_str(&format!("\"{text}\"")).unwrap();
            assert_eq!(as_before(|| super::text(&at)), text);
            // chrono's own serde, which earlier versions matched byte for byte.
            assert_eq!(serde_json::to_string(&at).unwrap(), format!("\"{text}\""));
        }
        let at: DateTime<Utc> = serde_json::from_str("\"2026-01-01T00:00:00Z\"").unwrap();
        assert_eq!(
            super::text(&at),
            "2026-01-01T00:00:00.000000Z",
            "the mode ends with the call"
        );
    }

    /// Times outside four-digit years are chrono's to write, and read back.
    #[test]
    fn the_ends_of_time_write_and_read_back() {
        for at in [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
            let json = serde_json::to_string(&super::text(&at)).unwrap();
            let back = deserialize(&mut serde_json::Deserializer::from_str(&json)).unwrap();
            assert_eq!(back, at, "{json}");
        }
    }

    /// The point of the fixed width: text order is time order.
    #[test]
    fn times_sort_as_text() {
        let base = DateTime::parse_from_rfc3339("2026-11-29T07:26:20Z")
            .unwrap()
            .with_timezone(&Utc);
        let times: Vec<DateTime<Utc>> = [0, 1, 999, 1_000, 294_000, 294_146, 999_999, 1_000_000]
            .iter()
            .map(|&micros| base + chrono::TimeDelta::microseconds(micros))
            .collect();
        let texts: Vec<String> = times.iter().map(super::text).collect();
        let mut sorted = texts.clone();
        sorted.sort();
        assert_eq!(texts, sorted);
    }

    #[test]
    fn an_absent_time_is_null() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct At {
            #[serde(with = "super::option")]
            at: Option<DateTime<Utc>>,
        }
        for value in [None, Some(DateTime::<Utc>::MIN_UTC), Some(Utc::now())] {
            let json = serde_json::to_string(&At { at: value }).unwrap();
            assert_eq!(serde_json::from_str::<At>(&json).unwrap(), At { at: value });
        }
        assert_eq!(
            serde_json::to_string(&At { at: None }).unwrap(),
            r#"{"at":null}"#
        );
    }
}
