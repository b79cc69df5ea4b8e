use super::*;
use proptest::prelude::*;

/// A contribution description as data, for the definitional dense form.
#[derive(Clone, Debug)]
enum Tree {
    Fill(f64),
    Single(usize, Vec<f64>),
    Cotangent(usize),
    Add(Box<Tree>, Box<Tree>),
}

const PREFIX: usize = 3;
const WIDTH: usize = 2;

fn special() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(1.0),
        Just(-2.5),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::from_bits(0x7ff8_0000_0000_0001)),
        Just(f64::from_bits(0xfff8_0000_0000_0002)),
        Just(f64::from_bits(1)),
        Just(1e300),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        special().prop_map(Tree::Fill),
        (0..PREFIX, prop::collection::vec(special(), WIDTH)).prop_map(|(p, v)| Tree::Single(p, v)),
        (0..PREFIX).prop_map(Tree::Cotangent),
    ];
    leaf.prop_recursive(4, 16, 2, |inner| (inner.clone(), inner).prop_map(|(l, r)| Tree::Add(Box::new(l), Box::new(r))))
}

/// The definition of §4: dense(fill v) = full(v); dense(single(p, t)) = t at p, zeros elsewhere;
/// dense(add(l, r)) = `pack_add(dense(l)`, dense(r)).
fn definition(t: &Tree, g: &[f64]) -> Vec<Vec<f64>> {
    match t {
        Tree::Fill(v) => vec![vec![*v; WIDTH]; PREFIX],
        Tree::Single(p, v) => (0..PREFIX).map(|q| if q == *p { v.clone() } else { vec![0.0; WIDTH] }).collect(),
        Tree::Cotangent(p) => (0..PREFIX).map(|q| if q == *p { g.to_vec() } else { vec![0.0; WIDTH] }).collect(),
        Tree::Add(l, r) => definition(l, g)
            .into_iter()
            .zip(definition(r, g))
            .map(|(a, b)| a.iter().zip(&b).map(|(x, y)| x + y).collect())
            .collect(),
    }
}

fn build(t: &Tree, c: &mut Contributions<f64>) -> Contrib {
    match t {
        Tree::Fill(v) => c.fill(*v),
        Tree::Single(p, v) => {
            let t = c.tensor(Dims::vector(WIDTH), |i| v[i]);
            c.single(*p, t)
        }
        Tree::Cotangent(p) => c.single_cotangent(*p),
        Tree::Add(l, r) => {
            let l = build(l, c);
            let r = build(r, c);
            c.add(l, r)
        }
    }
}

fn support_of(t: &Tree) -> Vec<usize> {
    match t {
        Tree::Fill(_) => vec![],
        Tree::Single(p, _) | Tree::Cotangent(p) => vec![*p],
        Tree::Add(l, r) => [support_of(l), support_of(r)].concat(),
    }
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// compact == dense by construction: the dense form, every read, and accumulation into a
    /// target agree bit for bit with the definition.
    #[test]
    fn dense_form_matches_the_definition(t in tree(), g in prop::collection::vec(special(), WIDTH),
                                         acc in prop::collection::vec(special(), WIDTH)) {
        let mut c = Contributions::new();
        c.fill(7.0); // unrelated description first: roots need not be the first entry
        let root = build(&t, &mut c);
        let cot = RawTensor::from_vec(Dims::vector(WIDTH), g.clone()).unwrap();
        let want = definition(&t, &g);
        prop_assert_eq!(c.support(root), support_of(&t));
        let dense = c.dense(root, &[Dims::vector(WIDTH); PREFIX], &cot).unwrap();
        for q in 0..PREFIX {
            prop_assert_eq!(bits(dense[q].data()), bits(&want[q]), "position {}", q);
            if support_of(&t).contains(&q) {
                let mut target = acc.clone();
                c.read_into(root, q, &cot, Sink::Accumulate(&mut target)).unwrap();
                let expect: Vec<f64> = acc.iter().zip(&want[q]).map(|(a, b)| a + b).collect();
                prop_assert_eq!(bits(&target), bits(&expect));
            } else {
                let u = c.uniform(root);
                prop_assert!(want[q].iter().all(|x| x.to_bits() == u.to_bits()));
            }
        }
    }
}

#[test]
fn reading_outside_the_support_is_an_error() {
    let mut c = Contributions::<f32>::new();
    let root = c.fill(1.0);
    let g = RawTensor::zeros(Dims::scalar());
    assert!(c.read(root, 0, &g).is_err());
    let z = c.zero();
    assert_eq!(c.uniform(z).to_bits(), 0);
}

#[test]
fn clear_recycles_buffers() {
    let mut c = Contributions::<f32>::new();
    let t = c.tensor(Dims::vector(64), |_| 1.0);
    let _ = c.single(0, t);
    c.clear();
    assert!(c.buffer().capacity() >= 64);
}
