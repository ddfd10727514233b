//! Agent names as the dashboard shows them: escaped, and marked with their code points when
//! they could pass for a name in ASCII that they are not.

use super::html::esc;

/// An agent's name, escaped, with the code points of what in it may not be what it looks like
/// (`gemіni (U+0456 at 4)`): an agent named with a Cyrillic і would otherwise pass for
/// `gemini` on the page. See [`unlike_ascii`].
pub(super) fn agent(name: &str) -> String {
    match code_points(name) {
        Some(points) => format!("{} <span class=\"cp\">({})</span>", esc(name), esc(&points)),
        None => esc(name),
    }
}

/// [`agent`] as plain text (for an SVG `<title>`), not yet escaped.
pub(super) fn agent_text(name: &str) -> String {
    match code_points(name) {
        Some(points) => format!("{name} ({points})"),
        None => name.to_owned(),
    }
}

/// `U+0456 at 4, ...` for each character of `name` that is not ASCII (positions counted in
/// characters from 1, the first eight), when [`unlike_ascii`] says the name could pass for
/// an ASCII one.
fn code_points(name: &str) -> Option<String> {
    if !unlike_ascii(name) {
        return None;
    }
    let odd: Vec<String> = name
        .chars()
        .enumerate()
        .filter(|(_, c)| !c.is_ascii())
        .map(|(i, c)| format!("U+{:04X} at {}", u32::from(c), i + 1))
        .collect();
    let shown = odd.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    Some(match odd.len() {
        0..=8 => shown,
        n => format!("{shown} and {} more", n - 8),
    })
}

/// Whether `name` holds characters that are not ASCII and could pass for ASCII. Two simple
/// rules rather than Unicode's whole confusables table (thousands of pairs, and a dependency):
///
/// - a name that mixes ASCII letters or digits with anything else: whatever the rest is
///   (a Cyrillic `а`, a non-breaking space, a `‐` that is not `-`), it sits among ASCII and
///   may be taken for it. A name such as `Müller` or `claude 🤖` is marked too, which costs a
///   few characters on the page and no harm;
/// - a name with no ASCII letter whose letters all look like ASCII ones ([`looks_ascii`]):
///   `сео` in Cyrillic, `ｇｅｍｉｎｉ` in fullwidth forms. A name in another script (`Анна`,
///   `日本語`) is shown as it is.
pub(super) fn unlike_ascii(name: &str) -> bool {
    if name.is_ascii() {
        return false;
    }
    if name.chars().any(|c| c.is_ascii_alphanumeric()) {
        return true;
    }
    let mut letters = name.chars().filter(|c| c.is_alphanumeric()).peekable();
    letters.peek().is_some() && letters.all(looks_ascii)
}

/// Letters of other scripts that look like ASCII letters or digits in common fonts: the
/// Cyrillic and Greek ones Unicode lists as confusable with Latin, a few Latin letters outside
/// ASCII, and ASCII's own fullwidth and mathematical forms.
fn looks_ascii(c: char) -> bool {
    matches!(c,
        // Cyrillic: а е о р с у х ѕ і ј һ ӏ ү ԁ ԛ ԝ, and А В Е К М Н О Р С Т Х Ѕ І Ј Ү.
        '\u{0430}' | '\u{0435}' | '\u{043e}' | '\u{0440}' | '\u{0441}' | '\u{0443}' | '\u{0445}'
        | '\u{0455}' | '\u{0456}' | '\u{0458}' | '\u{04bb}' | '\u{04cf}' | '\u{04af}' | '\u{0501}'
        | '\u{051b}' | '\u{051d}' | '\u{0410}' | '\u{0412}' | '\u{0415}' | '\u{041a}' | '\u{041c}'
        | '\u{041d}' | '\u{041e}' | '\u{0420}' | '\u{0421}' | '\u{0422}' | '\u{0425}' | '\u{0405}'
        | '\u{0406}' | '\u{0408}' | '\u{04ae}'
        // Greek: ο ι κ ν ρ υ α, and Α Β Ε Ζ Η Ι Κ Μ Ν Ο Ρ Τ Υ Χ.
        | '\u{03bf}' | '\u{03b9}' | '\u{03ba}' | '\u{03bd}' | '\u{03c1}' | '\u{03c5}' | '\u{03b1}'
        | '\u{0391}' | '\u{0392}' | '\u{0395}' | '\u{0396}' | '\u{0397}' | '\u{0399}' | '\u{039a}'
        | '\u{039c}' | '\u{039d}' | '\u{039f}' | '\u{03a1}' | '\u{03a4}' | '\u{03a5}' | '\u{03a7}'
        // Latin: dotless ı, script ɡ.
        | '\u{0131}' | '\u{0261}'
        // Fullwidth ASCII, and the mathematical alphanumeric symbols (bold, italic, ... A-z 0-9).
        | '\u{ff01}'..='\u{ff5e}' | '\u{1d400}'..='\u{1d7ff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_pass_for_ascii_show_their_code_points() {
        assert_eq!(agent("gemini"), "gemini");
        assert_eq!(
            agent("gem\u{0456}ni"),
            "gem\u{0456}ni <span class=\"cp\">(U+0456 at 4)</span>"
        );
        assert_eq!(
            agent_text("\u{0441}\u{0435}\u{043e}"),
            "\u{0441}\u{0435}\u{043e} (U+0441 at 1, U+0435 at 2, U+043E at 3)"
        );
        assert_eq!(
            code_points("\u{ff47}\u{ff45}\u{ff4d}").as_deref(),
            Some("U+FF47 at 1, U+FF45 at 2, U+FF4D at 3")
        );
        assert_eq!(code_points("claude\u{a0}2").as_deref(), Some("U+00A0 at 7"));
        assert_eq!(code_points("\u{03bf}pus").as_deref(), Some("U+03BF at 1"));
        // Other scripts as they are.
        for name in [
            "\u{0410}\u{043d}\u{043d}\u{0430}",
            "日本語エージェント",
            "*",
        ] {
            assert_eq!(code_points(name), None, "{name}");
        }
        let long = "a".to_owned() + &"\u{0430}".repeat(10);
        assert!(code_points(&long).is_some_and(|c| c.ends_with("U+0430 at 9 and 2 more")));
        // Escaped like every text.
        assert_eq!(
            agent("<\u{0430}>"),
            "&lt;\u{0430}&gt; <span class=\"cp\">(U+0430 at 2)</span>"
        );
    }
}
