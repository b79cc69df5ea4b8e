//! A plan table's rows written as the runtime's `Table`: the rows of a rolled loop's iterations
//! that differ only by a constant change of every number from one iteration to the next are
//! written once, for the first of them, with a `Repeat` giving those changes — so a table does
//! not grow with a loop's trip count (the runtime moves the numbers while it reads the rows:
//! `runtime/src/program/plan.rs`, `Table`).

use proc_macro2::TokenStream;
use quote::quote;

use super::program::lit;

/// One row: everything but its numbers (rows with different keys never repeat one another),
/// and its numbers in the order of the runtime's `Row::numbers`. Its tokens are made only for the
/// rows written (`table`'s `tokens`).
pub(super) struct Row {
    pub(super) key: String,
    pub(super) numbers: Vec<usize>,
}

/// Rows `start..start + per * count` are `count` iterations of `per` rows each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Region {
    pub(super) start: usize,
    pub(super) per: usize,
    pub(super) count: usize,
}

/// At least this many iterations in a `Repeat` (fewer are written out).
const MIN_REPEAT: usize = 3;

/// A stretch of a `Table` as a model's generated `run` walks it: rows `a..b` as written, or
/// repeat `r` (its index among the table's repeats) run `count` times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Segment {
    Written(usize, usize),
    Repeat(usize, usize),
}

/// Appends written rows `a..b` to `segments`, joined to a written stretch just before them.
fn push_written(segments: &mut Vec<Segment>, a: usize, b: usize) {
    if a == b {
        return;
    }
    match segments.last_mut() {
        Some(Segment::Written(_, end)) if *end == a => *end = b,
        _ => segments.push(Segment::Written(a, b)),
    }
}

/// The `Table` of `rows`, the runs of iterations of `regions` (ascending, disjoint) that repeat
/// written once; `tokens(i)` is row `i`'s constructor. With it, the table's stretches in order.
pub(super) fn table(
    p: &TokenStream,
    rows: &[Row],
    regions: &[Region],
    tokens: impl Fn(usize) -> TokenStream,
) -> (TokenStream, Vec<Segment>) {
    let mut out: Vec<TokenStream> = Vec::new();
    let mut repeats = Vec::new();
    let mut segments = Vec::new();
    let mut next = 0;
    let write = |out: &mut Vec<TokenStream>, segments: &mut Vec<Segment>, range: core::ops::Range<usize>| {
        let a = out.len();
        out.extend(range.map(&tokens));
        push_written(segments, a, out.len());
    };
    for region in regions {
        let Region { start, per, count } = *region;
        if per == 0 || start < next || start + per * count > rows.len() {
            continue;
        }
        write(&mut out, &mut segments, next..start);
        let group = |m: usize| &rows[start + m * per..start + (m + 1) * per];
        let mut m = 0;
        while m < count {
            let first = start + m * per;
            match repeated(count - m, |i| group(m + i)).filter(|(len, _)| *len >= MIN_REPEAT) {
                Some((len, deltas)) => {
                    segments.push(Segment::Repeat(repeats.len(), len));
                    repeats.push(repeat(out.len(), per, len, &deltas));
                    out.extend((first..first + per).map(&tokens));
                    m += len;
                }
                None => {
                    write(&mut out, &mut segments, first..first + per);
                    m += 1;
                }
            }
        }
        next = start + per * count;
    }
    write(&mut out, &mut segments, next..rows.len());
    (written(p, &out, &repeats), segments)
}

/// The `Table` of `rows` with its repeats found greedily, for a list with no loop structure of
/// its own (per node or per input: value buffers, kept flags, gradient buffers, the inputs'
/// pending visits): from each row on, the period of `periods` whose repeat covers the most rows
/// (at least `MIN_REPEAT` iterations; the shorter period on a tie), else the row alone.
pub(super) fn runs(
    p: &TokenStream,
    rows: &[Row],
    periods: &[usize],
    tokens: impl Fn(usize) -> TokenStream,
) -> TokenStream {
    runs_table(p, found_runs(rows, periods), tokens)
}

/// [`runs`] of rows that are each `width` numbers of `ns` (row `r`: `ns[r * width..][..width]`)
/// and no key, without building the rows: the same `Table` (the property test
/// `number_runs_are_the_rows_runs` compares them), found by [`found_number_runs`] in index loops
/// over the slice — these lists are per position, so a 2 000-iteration loop's are 10 000 long,
/// searched by a proc-macro built without optimisation.
pub(super) fn number_runs(
    p: &TokenStream,
    ns: &[usize],
    width: usize,
    tokens: impl Fn(usize) -> TokenStream,
    periods: &[usize],
) -> TokenStream {
    runs_table(p, found_number_runs(ns, width, periods), tokens)
}

/// [`found_runs`] of rows that are each `width` numbers of `ns` with one key (`width > 0`).
fn found_number_runs(ns: &[usize], width: usize, periods: &[usize]) -> Vec<Run> {
    let ns: Vec<i64> = ns.iter().map(|&n| i64::try_from(n).unwrap_or(i64::MAX)).collect();
    let ns = &ns[..];
    chosen_runs(ns.len() / width.max(1), periods, |i, per, available| {
        // `repeated` on groups of `per` rows (`n` numbers each, from number `first`): the deltas
        // from the first group to the second, then each further group the first moved `len`
        // times.
        let (first, n) = (i * width, per * width);
        let deltas: Vec<i64> = (0..n).map(|j| ns[first + n + j].wrapping_sub(ns[first + j])).collect();
        let mut len = 2;
        'groups: while len < available {
            let step = len as i64;
            let at = first + len * n;
            for j in 0..n {
                let moved = deltas[j].checked_mul(step).and_then(|x| x.checked_add(ns[first + j]));
                if moved != Some(ns[at + j]) {
                    break 'groups;
                }
            }
            len += 1;
        }
        Some((len, deltas))
    })
}

/// Rows `first..first + per` written once, standing for `count` iterations whose numbers move
/// by `deltas` from one to the next (`count = 1`: written as they are).
#[derive(Debug, PartialEq, Eq)]
struct Run {
    first: usize,
    per: usize,
    count: usize,
    deltas: Vec<i64>,
}

/// [`runs`]' choice: from each row on, the longest repeat of a period of `periods`, else the row.
fn found_runs(rows: &[Row], periods: &[usize]) -> Vec<Run> {
    chosen_runs(rows.len(), periods, |i, per, available| repeated(available, |m| &rows[i + m * per..i + (m + 1) * per]))
}

/// The runs of `rows` rows: from each row `i` on, the repeat of a period of `periods` that covers
/// the most rows (the shorter period on a tie), else the row alone. `repeated(i, per, available)`
/// is how many of the `available` groups of `per` rows from row `i` on are one repeat, with its
/// deltas (called only with `available >= MIN_REPEAT`).
fn chosen_runs(
    rows: usize,
    periods: &[usize],
    mut repeated: impl FnMut(usize, usize, usize) -> Option<(usize, Vec<i64>)>,
) -> Vec<Run> {
    let mut periods = periods.to_vec();
    periods.sort_unstable();
    let mut out = Vec::new();
    let mut i = 0;
    while i < rows {
        let rest = rows - i;
        // A period that covers every row left is the choice (the periods ascend), so the longer
        // ones are not tried.
        let mut best: Option<(usize, usize, usize, Vec<i64>)> = None;
        for &per in &periods {
            if per == 0 || per * MIN_REPEAT > rest {
                continue;
            }
            let Some((len, deltas)) = repeated(i, per, rest / per) else {
                continue;
            };
            if len >= MIN_REPEAT && best.as_ref().is_none_or(|b| len * per > b.0) {
                best = Some((len * per, per, len, deltas));
                if len * per == rest {
                    break;
                }
            }
        }
        match best {
            Some((covered, per, count, deltas)) => {
                out.push(Run { first: i, per, count, deltas });
                i += covered;
            }
            None => {
                out.push(Run { first: i, per: 1, count: 1, deltas: Vec::new() });
                i += 1;
            }
        }
    }
    out
}

/// The `Table` of `runs`: each run's first rows written (row `r` is `tokens(r)`), a repeat for
/// each run of more than one iteration.
fn runs_table(p: &TokenStream, runs: Vec<Run>, tokens: impl Fn(usize) -> TokenStream) -> TokenStream {
    let mut out: Vec<TokenStream> = Vec::new();
    let mut repeats = Vec::new();
    for Run { first, per, count, deltas } in runs {
        if count > 1 {
            repeats.push(repeat(out.len(), per, count, &deltas));
        }
        out.extend((first..first + per).map(&tokens));
    }
    written(p, &out, &repeats)
}

/// A `Repeat` of `count` iterations of `per` rows from written row `at`, moving by `deltas`.
fn repeat(at: usize, per: usize, count: usize, deltas: &[i64]) -> TokenStream {
    let (at, per, count) = (lit(at), lit(per), lit(count));
    let deltas = deltas.iter().map(|&d| proc_macro2::Literal::i64_unsuffixed(d));
    quote!(Repeat { at: #at, rows: #per, count: #count, deltas: &[#(#deltas),*] })
}

/// A `Table` of the rows written and their repeats.
fn written(p: &TokenStream, out: &[TokenStream], repeats: &[TokenStream]) -> TokenStream {
    if repeats.is_empty() {
        quote!(#p::plan::Table::flat(&[#(#out),*]))
    } else {
        quote!(#p::plan::Table { rows: &[#(#out),*], repeats: &[#(#repeats),*] })
    }
}

/// How many of the `available` groups from the first on are one repeat (same keys, every number
/// moving by the same delta from one group to the next), with those deltas; `None` for fewer
/// than two.
fn repeated<'r>(available: usize, group: impl Fn(usize) -> &'r [Row]) -> Option<(usize, Vec<i64>)> {
    fn same_keys(a: &[Row], b: &[Row]) -> bool {
        if a.len() != b.len() {
            return false;
        }
        for r in 0..a.len() {
            if a[r].numbers.len() != b[r].numbers.len() || a[r].key != b[r].key {
                return false;
            }
        }
        true
    }
    if available < 2 {
        return None;
    }
    let (first, second) = (group(0), group(1));
    if !same_keys(first, second) {
        return None;
    }
    let number = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let mut deltas = Vec::new();
    for (a, b) in first.iter().zip(second) {
        for i in 0..a.numbers.len() {
            deltas.push(number(b.numbers[i]) - number(a.numbers[i]));
        }
    }
    // Group `len` repeats when its keys are the first's and each number is the first's moved
    // `len` times by its delta. Plain index loops: this runs for every row and period, in a
    // proc-macro built without optimisation.
    let mut len = 2;
    'groups: while len < available {
        let g = group(len);
        if !same_keys(first, g) {
            break;
        }
        let step = number(len);
        let mut at = 0;
        for r in 0..first.len() {
            let (a, b) = (&first[r].numbers, &g[r].numbers);
            for i in 0..a.len() {
                let moved = deltas[at + i].checked_mul(step).and_then(|x| x.checked_add(number(a[i])));
                if moved != Some(number(b[i])) {
                    break 'groups;
                }
            }
            at += a.len();
        }
        len += 1;
    }
    Some((len, deltas))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers `found_runs` stands for, expanded as the runtime's `Table` reads them.
    fn expand(rows: &[Row], runs: &[Run]) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        for run in runs {
            for k in 0..run.count {
                let mut d = run.deltas.iter();
                for row in &rows[run.first..run.first + run.per] {
                    let moved = row.numbers.iter().map(|&n| {
                        let delta = d.next().copied().unwrap_or(0) * i64::try_from(k).unwrap();
                        usize::try_from(i64::try_from(n).unwrap() + delta).unwrap()
                    });
                    out.push(moved.collect());
                }
            }
        }
        out
    }

    #[test]
    fn runs_stand_for_every_row_and_shrink_regular_lists() {
        let numbers = |ns: &[usize]| ns.iter().map(|&n| row("", &[n])).collect::<Vec<_>>();
        let cases: Vec<(Vec<Row>, usize)> = vec![
            // An input's gradient buffers `0, 1, 2, …`: one row.
            (numbers(&(0..50).collect::<Vec<_>>()), 1),
            // A loop's value buffers alternating over a body of 3: `0 1 0, 1 2 1, 2 3 2, …`.
            (numbers(&(0..40).flat_map(|i| [i, i + 1, i]).collect::<Vec<_>>()), 3),
            // Buffers alternating every second iteration of a body of 3, then a tail.
            (numbers(&(0..20).flat_map(|_| [7, 8, 7, 8, 7, 8]).chain([1, 2]).collect::<Vec<_>>()), 4),
            // Kept flags: no numbers, keys repeat.
            ((0..30).map(|i| row(if i % 3 == 2 { "true" } else { "false" }, &[])).collect(), 3),
            // Nothing regular: every row written.
            (numbers(&[5, 1, 4, 1, 6, 9, 2, 6]), 8),
            (Vec::new(), 0),
        ];
        for (rows, written) in cases {
            let runs = found_runs(&rows, &[1, 2, 3, 4, 6]);
            let want: Vec<Vec<usize>> = rows.iter().map(|r| r.numbers.clone()).collect();
            assert_eq!(expand(&rows, &runs), want);
            let keys: Vec<&str> = runs
                .iter()
                .flat_map(|r| (0..r.count).flat_map(move |_| r.first..r.first + r.per))
                .map(|i| rows[i].key.as_str())
                .collect();
            assert_eq!(keys, rows.iter().map(|r| r.key.as_str()).collect::<Vec<_>>());
            assert_eq!(runs.iter().map(|r| r.per).sum::<usize>(), written, "{runs:?}");
        }
    }

    proptest::proptest! {
        /// The fast path finds the runs the rows' search finds, on lists with regular stretches
        /// (steps, alternations, constants) and noise between them.
        #[test]
        fn number_runs_are_the_rows_runs(
            parts in proptest::collection::vec((0usize..6, 0usize..40, 0usize..5, 1usize..4, 0usize..9), 0..8),
        ) {
            let mut ns = Vec::new();
            for (kind, len, start, per, noise) in parts {
                for k in 0..len {
                    ns.push(match kind {
                        0 => start + k,
                        1 => start + k % per,
                        2 => start + (k / per) * 3 + k % per,
                        3 => start,
                        4 => (start * 7 + k * 13 + noise) % 11,
                        _ => usize::MAX - k,
                    });
                }
                ns.push(noise);
            }
            for width in 1..=3 {
                let rows: Vec<Row> = ns.chunks_exact(width).map(|n| row("", n)).collect();
                for periods in [&[1, 2, 3, 4][..], &[1, 2, 3, 4, 6, 12], &[3, 1, 5, 10]] {
                    proptest::prop_assert_eq!(found_number_runs(&ns, width, periods), found_runs(&rows, periods));
                }
            }
        }
    }

    fn row(key: &str, numbers: &[usize]) -> Row {
        Row { key: key.to_owned(), numbers: numbers.to_vec() }
    }

    fn tokens(rows: &[Row]) -> impl Fn(usize) -> TokenStream + '_ {
        |i| {
            let n = rows[i].numbers.iter().map(|&n| lit(n));
            quote!(r(#(#n),*))
        }
    }

    #[test]
    fn iterations_moving_by_constant_deltas_are_one_repeat() {
        let p = quote!(p);
        // Iteration 0 differs (a carried value from before the loop), 1..5 move by (+3, -1).
        let rows: Vec<Row> = vec![
            row("a", &[0, 9]),
            row("a", &[7, 10]),
            row("a", &[10, 9]),
            row("a", &[13, 8]),
            row("a", &[16, 7]),
            row("b", &[1]),
        ];
        let (t, segments) = table(&p, &rows, &[Region { start: 0, per: 1, count: 5 }], tokens(&rows));
        let t = t.to_string();
        assert!(t.contains("Repeat { at : 1 , rows : 1 , count : 4 , deltas : & [3 , - 1] }"), "{t}");
        assert!(t.contains("rows : & [r (0 , 9) , r (7 , 10) , r (1)]"), "{t}");
        // The run walks written row 0, the repeat 4 times, then written row 2.
        assert_eq!(segments, [Segment::Written(0, 1), Segment::Repeat(0, 4), Segment::Written(2, 3)]);
    }

    #[test]
    fn short_or_irregular_runs_are_written_out() {
        let p = quote!(p);
        let rows: Vec<Row> = vec![row("a", &[0]), row("a", &[1]), row("a", &[3]), row("a", &[4])];
        let (t, segments) = table(&p, &rows, &[Region { start: 0, per: 1, count: 4 }], tokens(&rows));
        assert!(t.to_string().starts_with("p :: plan :: Table :: flat"), "{t}");
        // Written rows one after another are one stretch.
        assert_eq!(segments, [Segment::Written(0, 4)]);
        let rows: Vec<Row> = vec![row("a", &[0]), row("b", &[1]), row("a", &[2])];
        let (t, _) = table(&p, &rows, &[Region { start: 0, per: 1, count: 3 }], tokens(&rows));
        assert!(t.to_string().starts_with("p :: plan :: Table :: flat"), "{t}");
    }
}
