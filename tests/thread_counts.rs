//! A model's results do not depend on the number of threads its kernels run on: an MLP training
//! step (values, every saved pass, the generated program's gradients) on pools of 1, 2, 3 and 4
//! threads (`parallel::pool`), on ordinary and adversarial values, gives the same bits. Products
//! and pointwise loops are split over threads even at these small sizes, and independent work
//! (a forward level's nodes, a product's two VJP products) runs at the same time
//! (`parallel::set_min_work(0)`, `parallel::set_min_pointwise_work(0)`,
//! `parallel::set_min_node_work(0)`; the splits move work, never a result). The same step called
//! from a thread outside every pool (which becomes a worker of a caller pool of the global pool's
//! size) gives the same bits too.
#![allow(clippy::unwrap_used)]

mod floats;

use exactgrad::{graph, parallel, Seeds, Tensor};
use floats::{adv, all_bits, Bits, TestFloat};

graph! {
    /// An MLP step on a batch of 96: two hidden layers, softmax cross-entropy. The first layer's
    /// products (`x · w1` and `xᵀ · δ`) are large enough for the packed kernel, which splits.
    fn mlp(w1: [256, 256], b1: [256], w2: [256, 32], b2: [32], w3: [32, 10]; x: [96, 256], labels: Vec<usize>) -> [] {
        let h1 = relu(x.matmul(w1) + b1);
        let h2 = tanh(h1.matmul(w2) + b2);
        cross_entropy(h2.matmul(w3), labels)
    }
}

fn step<A: TestFloat>(salt: u64) -> Vec<Vec<Bits>> {
    let (g, h) = mlp::<A>();
    let inputs = h.inputs(adv(salt, 1), adv(salt, 2), adv(salt, 3), adv(salt, 4), adv(salt, 5));
    let data = || MlpData { x: adv(salt, 6), labels: (0..96).map(|i| (i * 7 + salt as usize) % 10).collect() };
    let seed: Tensor<A, ()> = adv(salt, 7);
    let saved = g.compile(inputs.clone(), data()).unwrap();
    let seeds = || Seeds::single(&g, h.output, seed.clone()).unwrap();
    let mut program = Mlp::program::<A>();
    let mut params = inputs;
    vec![
        all_bits(saved.raw().values()),
        all_bits(saved.backprop_inputs_dense(seeds()).unwrap().as_slice()),
        all_bits(saved.backprop_inputs_array(seeds()).unwrap().as_slice()),
        all_bits(saved.backprop_inputs_stored(seeds()).unwrap().as_slice()),
        all_bits(saved.backprop_from(h.output, seed.clone()).unwrap().iter()),
        all_bits(program.gradients(&mut params, &data(), &seed).unwrap().as_slice()),
    ]
}

fn check<A: TestFloat>(pools: &[parallel::ThreadPool]) {
    // Ordinary values; a third adversarial (signed zeros, NaN payloads, infinities, subnormals).
    for salt in [0, 3] {
        let one = pools[0].install(|| step::<A>(salt));
        for (k, pool) in pools.iter().enumerate().skip(1) {
            assert!(pool.install(|| step::<A>(salt)) == one, "salt {salt}: {} threads differ from one", k + 1);
        }
        // From a thread outside every pool, as a user's loop calls it: the thread becomes a
        // worker of a caller pool of the global pool's size (twice: the second run is on it).
        let caller = std::thread::spawn(move || [step::<A>(salt), step::<A>(salt)]).join().unwrap();
        let threads = parallel::threads();
        assert!(caller.iter().all(|c| *c == one), "salt {salt}: a caller thread ({threads} threads) differs from one");
    }
}

#[test]
fn an_mlp_step_is_the_same_on_1_to_4_threads() {
    parallel::set_min_work(0);
    parallel::set_min_pointwise_work(0);
    parallel::set_min_node_work(0);
    let pools: Vec<_> = (1..=4).map(|n| parallel::pool(n).unwrap()).collect();
    assert_eq!(pools[3].install(parallel::threads), 4);
    check::<f32>(&pools);
    check::<f64>(&pools);
}
