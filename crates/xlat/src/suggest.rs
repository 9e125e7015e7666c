//! Spelling suggestions for error messages: the valid name closest to a misspelt one.
//!
//! Owns no state and calls nothing of the crate, so that any module validating a name (the
//! configuration's keys, design and workload names) can suggest one without reaching up to
//! the configuration.
//!
//! Contract: [`closest`] returns a candidate only when it is within half the longer name's
//! length (at least 2) in edit distance; ties go to the first candidate.

/// The candidate closest to `word` by edit distance, if reasonably close.
pub fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(word, c);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.filter(|(d, c)| *d <= (c.len().max(word.len()) / 2).max(2))
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
