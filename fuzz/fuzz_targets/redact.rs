//! The redactor on arbitrary text: no panic; the findings are ordered, disjoint, inside the
//! text and on character boundaries; replacing them gives the clean text; and redacting the
//! clean text again changes nothing (markers are never redacted, and nothing new appears).
#![no_main]

use handoff_core::redact::{self, redact};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (clean, found) = redact(text);
    let mut previous_end = 0;
    for r in &found {
        assert!(r.start < r.end, "empty or reversed span {r:?}");
        assert!(r.start >= previous_end, "spans overlap or are out of order: {found:?}");
        assert!(r.end <= text.len(), "span {r:?} past the end ({} bytes)", text.len());
        assert!(
            text.is_char_boundary(r.start) && text.is_char_boundary(r.end),
            "span {r:?} splits a character"
        );
        previous_end = r.end;
    }
    assert_eq!(clean, redact::replace(text, &found), "clean text is not the spans replaced");
    let (again, found_again) = redact(&clean);
    assert_eq!(
        again, clean,
        "redacting twice changed the text again: {found_again:?} in {clean:?}"
    );
});
