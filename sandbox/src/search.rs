//! Hybrid scoring of text passages: BM25 keyword scores and character-trigram cosine
//! similarity, blended by a semantic weight.
//!
//! `score = (1 - w) * keyword + w * similarity`, where `keyword` is BM25 normalised by the
//! best passage (so in 0..=1) and `similarity` is the cosine of the trigram vectors of the
//! query and the passage (0..=1). A passage matches when it shares a term with the query or
//! its similarity reaches [`SIMILARITY_FLOOR`] (each only counts when its weight is not 0).
//! Similarity is taken over the best window of the passage about twice the query's length,
//! so a local match in a long passage is not diluted.

use std::collections::HashMap;

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 length normalisation.
const B: f64 = 0.75;
/// Similarity from which a passage without a common term still matches.
pub const SIMILARITY_FLOOR: f64 = 0.3;

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "its", "many", "me", "much", "my", "of", "on", "or", "our", "the",
    "their", "there", "this", "to", "was", "we", "what", "when", "where", "which", "who", "why",
    "with", "you", "your",
];

/// Lower-case word terms without stop words, with a light plural folding.
pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| fold(&w))
        .collect()
}

fn fold(word: &str) -> String {
    if word.len() > 4 && word.ends_with("ies") {
        format!("{}y", &word[..word.len() - 3])
    } else if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
        word[..word.len() - 1].to_string()
    } else {
        word.to_string()
    }
}

/// Character trigram counts of the normalised text (lower case, words padded by spaces).
pub fn trigrams(text: &str) -> HashMap<[char; 3], f64> {
    let mut counts = HashMap::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let chars: Vec<char> = std::iter::once(' ')
            .chain(word.to_lowercase().chars())
            .chain(std::iter::once(' '))
            .collect();
        for w in chars.windows(3) {
            *counts.entry([w[0], w[1], w[2]]).or_insert(0.0) += 1.0;
        }
    }
    counts
}

/// Cosine similarity of two trigram vectors.
pub fn cosine(a: &HashMap<[char; 3], f64>, b: &HashMap<[char; 3], f64>) -> f64 {
    let dot: f64 = a.iter().filter_map(|(k, x)| b.get(k).map(|y| x * y)).sum();
    let norm = |v: &HashMap<[char; 3], f64>| v.values().map(|x| x * x).sum::<f64>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na * nb)).clamp(0.0, 1.0)
    }
}

/// The best trigram cosine between the query and a window of the passage about twice the
/// query's length in words (a whole long passage would dilute a local match).
pub fn windowed_similarity(
    query_grams: &HashMap<[char; 3], f64>,
    query: &str,
    passage: &str,
) -> f64 {
    let words: Vec<&str> = passage
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let query_words = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .count();
    let width = (query_words * 2).max(3);
    if words.len() <= width {
        return cosine(query_grams, &trigrams(passage));
    }
    words
        .windows(width)
        .map(|window| cosine(query_grams, &trigrams(&window.join(" "))))
        .fold(0.0, f64::max)
}

/// The scores of one passage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Index of the passage in the input.
    pub index: usize,
    /// BM25 normalised by the best passage (0..=1).
    pub keyword: f64,
    /// Trigram cosine similarity with the query (0..=1).
    pub similarity: f64,
    /// The blend.
    pub score: f64,
    /// Whether the passage matches the query at all.
    pub matches: bool,
}

/// Scores every passage against `query` (in input order).
pub fn score(query: &str, passages: &[&str], semantic_weight: f64) -> Vec<Scored> {
    let w = semantic_weight.clamp(0.0, 1.0);
    let query_terms = terms(query);
    let docs: Vec<Vec<String>> = passages.iter().map(|p| terms(p)).collect();
    let n = docs.len() as f64;
    let avg_len = if docs.is_empty() {
        1.0
    } else {
        (docs.iter().map(Vec::len).sum::<usize>() as f64 / n).max(1.0)
    };
    let mut df: HashMap<&str, f64> = HashMap::new();
    for doc in &docs {
        let mut seen: Vec<&str> = doc.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for term in seen {
            *df.entry(term).or_insert(0.0) += 1.0;
        }
    }
    let raw: Vec<f64> = docs
        .iter()
        .map(|doc| {
            let len = doc.len() as f64;
            let mut unique = query_terms.clone();
            unique.sort_unstable();
            unique.dedup();
            unique
                .iter()
                .map(|term| {
                    let tf = doc.iter().filter(|t| *t == term).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let d = df.get(term.as_str()).copied().unwrap_or(0.0);
                    let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len))
                })
                .sum()
        })
        .collect();
    let best = raw.iter().copied().fold(0.0_f64, f64::max);
    let query_grams = trigrams(query);
    passages
        .iter()
        .enumerate()
        .map(|(index, passage)| {
            let keyword = if best > 0.0 { raw[index] / best } else { 0.0 };
            let similarity = windowed_similarity(&query_grams, query, passage);
            Scored {
                index,
                keyword,
                similarity,
                score: (1.0 - w) * keyword + w * similarity,
                matches: (w < 1.0 && raw[index] > 0.0)
                    || (w > 0.0 && similarity >= SIMILARITY_FLOOR),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSAGES: &[&str] = &[
        "Hotel costs are reimbursed up to 180 euros per night.",
        "Passwords must be at least 14 characters long.",
        "The password policy requires multi-factor authentication.",
    ];

    #[test]
    fn terms_drop_stop_words_and_fold_plurals() {
        assert_eq!(
            terms("What are the Policies for passwords?"),
            vec!["policy", "password"]
        );
    }

    #[test]
    fn keyword_scores_favour_matching_terms() {
        let scored = score("hotel reimbursed", PASSAGES, 0.0);
        assert_eq!(scored[0].keyword, 1.0);
        assert_eq!(scored[1].keyword, 0.0);
        assert!(scored[0].matches && !scored[1].matches);
        // With weight 0, similarity alone never matches.
        assert!(score("hotell", PASSAGES, 0.0).iter().all(|s| !s.matches));
        assert!(score("hotell", PASSAGES, 1.0)[0].matches);
        assert_eq!(scored[0].score, scored[0].keyword);
    }

    #[test]
    fn similarity_catches_near_spellings_that_keywords_miss() {
        let scored = score("passwort", PASSAGES, 1.0);
        assert!(scored.iter().all(|s| s.keyword == 0.0));
        assert!(scored[1].similarity > scored[0].similarity);
        assert_eq!(scored[1].score, scored[1].similarity);
    }

    #[test]
    fn the_weight_blends_both_scores() {
        let scored = score("password", PASSAGES, 0.5);
        for s in &scored {
            assert!((s.score - (0.5 * s.keyword + 0.5 * s.similarity)).abs() < 1e-12);
        }
        assert!(cosine(&trigrams("abc"), &trigrams("abc")) > 0.999);
        assert_eq!(cosine(&trigrams(""), &trigrams("abc")), 0.0);
    }
}
