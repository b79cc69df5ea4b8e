//! The character-level examples' text (`char_rnn`, `gpt_char`): its alphabet, its characters as
//! ids into it, and the unigram entropy the models' losses are compared with.

/// The distinct characters of `text` (sorted) and every character of it as an index into them;
/// an error when the text does not have the `vocab` distinct characters a model is built for.
pub fn encode(text: &str, vocab: usize) -> Result<(Vec<char>, Vec<usize>), String> {
    let mut chars: Vec<char> = text.chars().collect();
    chars.sort_unstable();
    chars.dedup();
    if chars.len() != vocab {
        return Err(format!("the model is built for {vocab} distinct characters, the text has {}", chars.len()));
    }
    let ids = text.chars().map(|c| chars.binary_search(&c).unwrap_or(0)).collect();
    Ok((chars, ids))
}

/// The entropy of the frequencies of `ids` (over an alphabet of `n` characters), in nats: the
/// loss of the best model that predicts every character without looking at the context.
pub fn unigram_entropy(ids: &[usize], n: usize) -> f64 {
    let mut counts = vec![0usize; n];
    for &c in ids {
        counts[c] += 1;
    }
    let total = ids.len() as f64;
    counts.iter().filter(|&&k| k > 0).map(|&k| k as f64 / total).map(|p| -p * p.ln()).sum()
}
