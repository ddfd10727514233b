//! Lexical relevance without a model: a text's terms, and BM25 scores of short documents (the
//! facts on `main`) against a query (a handoff's goal, instructions and pending steps).
//!
//! Terms are lowercased runs of letters and digits; runs of CJK ideographs, which have no
//! spaces between words, give their overlapping pairs of characters instead. Words that say
//! nothing about a topic (`the`, `and`, …) and single characters are left out.

use std::collections::{BTreeSet, HashMap};

use sha2::{Digest, Sha256};

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How many documents the collection is taken to hold. A term's weight depends on how rare it
/// is; with a large fixed collection, terms compare by their document counts alone (the log of
/// their ratio), so no count of `main` has to be kept up to date on every write.
const COLLECTION: f64 = 1_000_000.0;

/// Words too common to tell documents apart.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "do", "does", "for", "from", "had", "has", "have", "how", "if", "in",
    "into", "is", "it", "its", "more", "must", "no", "not", "of", "on", "one", "or", "our", "out",
    "so", "some", "than", "that", "the", "their", "then", "there", "these", "this", "those", "to",
    "up", "was", "we", "were", "what", "when", "which", "who", "will", "with", "would", "you",
    "your",
];

fn is_ideograph(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// The terms of `text`, in order, repeats included.
pub(super) fn terms(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut word = String::new();
    let mut ideographs: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, found: &mut Vec<String>| {
        if word.chars().count() > 1 && !STOPWORDS.contains(&word.as_str()) {
            found.push(std::mem::take(word));
        }
        word.clear();
    };
    let flush_ideographs = |run: &mut Vec<char>, found: &mut Vec<String>| {
        match run.len() {
            0 => {}
            1 => found.push(run.iter().collect()),
            _ => found.extend(run.windows(2).map(|pair| pair.iter().collect::<String>())),
        }
        run.clear();
    };
    for c in text.chars() {
        if is_ideograph(c) {
            flush_word(&mut word, &mut found);
            ideographs.push(c);
        } else if c.is_alphanumeric() {
            flush_ideographs(&mut ideographs, &mut found);
            word.extend(c.to_lowercase());
        } else {
            flush_word(&mut word, &mut found);
            flush_ideographs(&mut ideographs, &mut found);
        }
    }
    flush_word(&mut word, &mut found);
    flush_ideographs(&mut ideographs, &mut found);
    found
}

/// Each distinct term of `text` with how often it occurs, in order of first occurrence, and
/// the number of terms in all.
pub(super) fn term_counts(text: &str) -> (Vec<(String, u32)>, u32) {
    let all = terms(text);
    let mut counts: Vec<(String, u32)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for term in &all {
        match at.get(term) {
            Some(&i) => counts[i].1 += 1,
            None => {
                at.insert(term.clone(), counts.len());
                counts.push((term.clone(), 1));
            }
        }
    }
    (counts, u32::try_from(all.len()).unwrap_or(u32::MAX))
}

/// The distinct terms of a query, in order of first occurrence, at most `limit`.
pub(super) fn query_terms<'a>(
    texts: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    texts
        .into_iter()
        .flat_map(terms)
        .filter(|t| seen.insert(t.clone()))
        .take(limit)
        .collect()
}

/// A term as a key: a digest, so that any script gives a short name made of `[0-9a-f]`.
pub(super) fn term_key(term: &str) -> String {
    let digest = Sha256::digest(term.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// One document holding a query term: which, how often the term occurs in it, its length.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Posting {
    pub doc: String,
    pub tf: u32,
    pub len: u32,
}

/// BM25 scores of the documents holding any query term: `postings` holds, per query term,
/// the documents found for it (all of them, or the most recent when a term is common: their
/// count is then a floor of its document count, which only makes a common term weigh a
/// little more than it should).
pub(super) fn bm25(postings: &[Vec<Posting>]) -> HashMap<String, f64> {
    let lengths: Vec<u32> = postings.iter().flatten().map(|p| p.len).collect();
    let average = if lengths.is_empty() {
        1.0
    } else {
        f64::from(lengths.iter().sum::<u32>()) / lengths.len() as f64
    }
    .max(1.0);
    let mut scores: HashMap<String, f64> = HashMap::new();
    for found in postings {
        let df = found.len() as f64;
        let idf = (1.0 + (COLLECTION - df + 0.5) / (df + 0.5)).ln();
        for p in found {
            let tf = f64::from(p.tf);
            let norm = K1 * (1.0 - B + B * f64::from(p.len) / average);
            *scores.entry(p.doc.clone()).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn terms_are_words_and_ideograph_pairs_without_stopwords() {
        assert_eq!(
            terms("The OAuth2 token-refresh fails; 令牌刷新 x"),
            [
                "oauth2", "token", "refresh", "fails", "令牌", "牌刷", "刷新"
            ]
        );
        assert_eq!(
            term_counts("token Token refresh").0,
            [("token".into(), 2), ("refresh".into(), 1)]
        );
        assert_eq!(term_key("token").len(), 16);
    }

    #[test]
    fn a_rare_term_outweighs_a_common_one() {
        let p = |doc: &str| Posting {
            doc: doc.into(),
            tf: 1,
            len: 8,
        };
        let common: Vec<Posting> = (0..50).map(|i| p(&format!("d{i}"))).collect();
        let rare = vec![p("d7"), p("x")];
        let scores = bm25(&[common, rare]);
        assert!(scores["d7"] > scores["x"] && scores["x"] > scores["d1"]);
    }
}
